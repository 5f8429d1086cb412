package bench

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// TestWeekTrace: the replayed trace is a week, the same for a seed, with
// bursts of arrivals on weekdays.
func TestWeekTrace(t *testing.T) {
	t.Parallel()
	tr := weekTrace(42)
	assert.Equal(t, tr, weekTrace(42), "the same trace for a seed")
	assert.Greater(t, len(tr), 150)
	assert.Greater(t, tr[len(tr)-1].at, 6*24*time.Hour, "it spans a week")
	burst := 0
	for i := 5; i < len(tr); i++ {
		if tr[i].at-tr[i-5].at < 10*time.Minute {
			burst++
		}
	}
	assert.Positive(t, burst, "six arrivals within ten minutes somewhere")
}
