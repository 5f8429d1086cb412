package bench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Sample is a set of measured durations.
type Sample []time.Duration

// Percentile returns the p-th percentile (0 < p <= 100) by the
// nearest-rank method; 0 for an empty sample.
func (s Sample) Percentile(p float64) time.Duration {
	if len(s) == 0 {
		return 0
	}
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// Mean returns the average; 0 for an empty sample.
func (s Sample) Mean() time.Duration {
	if len(s) == 0 {
		return 0
	}
	var sum time.Duration
	for _, d := range s {
		sum += d
	}
	return sum / time.Duration(len(s))
}

// Max returns the largest duration; 0 for an empty sample.
func (s Sample) Max() time.Duration {
	if len(s) == 0 {
		return 0
	}
	return slices.Max(s)
}

// String summarises the sample as "n=200 p50=12.3ms p99=40.1ms max=52.0ms".
func (s Sample) String() string {
	return fmt.Sprintf("n=%d p50=%s p99=%s max=%s", len(s), FormatMS(s.Percentile(50)), FormatMS(s.Percentile(99)), FormatMS(s.Max()))
}

// MS converts d to fractional milliseconds, the unit of every reported
// latency.
func MS(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// FormatMS renders d in milliseconds with one decimal: "12.3ms".
func FormatMS(d time.Duration) string { return fmt.Sprintf("%.1fms", MS(d)) }
