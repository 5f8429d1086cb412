package record

import (
	"fmt"
	"sort"
	"strings"
	"time"
)

// The thresholds of the wait estimate (docs/adr/0062-wait-estimate.md).
const (
	// minEstimateHolds is the fewest past holds an estimate is made from:
	// with fewer, nothing is said.
	minEstimateHolds = 3
	// minPointHolds is the fewest past holds a single figure ("about 11
	// min") is given from; with fewer the estimate is a range.
	minPointHolds = 5
)

// EstimateInput is what a wait estimate is made from: the lock's history,
// its holder, where the contender stands in the queue and the freezes.
type EstimateInput struct {
	// Target is the namespace whose lock it is (freeze windows name it).
	Target string
	// History is the lock's past holds, in any order.
	History []HistoryEntry
	// HolderSince is when the current holder took the lock; nil when
	// nobody holds it or the holder is stale (the next contender removes
	// it, so its hold is over).
	HolderSince *time.Time
	// Ahead is how many holds come before the contender's turn after the
	// current one: its position in the queue minus one.
	Ahead int
	// Freeze is the lock's own freeze, if any.
	Freeze *Freeze
	// Windows are the freeze windows of the lock namespace.
	Windows []FreezeWindow
	// Now is the time the estimate is made at, on the clock the record's
	// times are stamped on.
	Now time.Time
}

// Estimate is how long a contender should expect to wait for its turn,
// rounded to what the history supports (see EstimateWait).
type Estimate struct {
	// Low and High bound the wait, rounded; they are equal for a single
	// figure.
	Low, High time.Duration
	// Median is the median hold of the history.
	Median time.Duration
	// Spread is the middle half of the history's holds (the first to the
	// third quartile); set only when the estimate is a range.
	spreadLow, spreadHigh time.Duration
	// Holds is how many past holds the estimate is made from.
	Holds int
	// FrozenUntil is the end of the last freeze (of the lock, or a
	// window) that pushes the turn later; zero when none does.
	frozenUntil time.Time
	// Overdue is set when the holder has held the lock longer than all but
	// a few past holds (fewer than minEstimateHolds lasted longer), so
	// that the history cannot tell when it ends: Held is how long it has
	// held, and Low and High are the wait after it ends, for the holds
	// ahead of the contender (zero for the first in line).
	overdue bool
	Held    time.Duration
	// Ahead is how many holds come between the overdue hold and the
	// contender's turn; set with Overdue.
	Ahead int
}

// turn is when the contender's turn comes if the current hold has rest
// left and every hold ahead lasts hold: each hand-over waits for the
// freezes that cover it. frozen is the end of the last freeze that did
// delay it.
func (in EstimateInput) turn(rest, hold time.Duration) (turn, frozen time.Time) {
	t, frozen := in.unfrozen(in.Now.Add(rest))
	for i := 0; i < in.Ahead; i++ {
		var f time.Time
		if t, f = in.unfrozen(t.Add(hold)); f.After(frozen) {
			frozen = f
		}
	}
	return t, frozen
}

// unfrozen is the first time at or after t when neither the lock's freeze
// nor a window freezes it, and the end of the freeze that moved t (zero
// when none did).
func (in EstimateInput) unfrozen(t time.Time) (time.Time, time.Time) {
	end := thawsAt(in.Freeze, in.Windows, in.Target, t)
	if !end.After(t) {
		return t, time.Time{}
	}
	return end, end
}

// String renders the estimate for people: "about 11 min", "8-15 min",
// "40 s-2 min", "any moment".
func (e *Estimate) String() string {
	if e == nil {
		return ""
	}
	if e.overdue {
		switch {
		case e.Ahead == 0:
			return "when the overdue holder ends"
		case e.Low == e.High:
			return "about " + waitString(e.Low) + " after the overdue holder ends"
		}
		return e.rangeString() + " after the overdue holder ends"
	}
	if e.Low == e.High {
		if e.Low == 0 {
			return "any moment"
		}
		return "about " + waitString(e.Low)
	}
	return e.rangeString()
}

// rangeString renders Low to High: "8-15 min", "40 s-2 min".
func (e *Estimate) rangeString() string {
	lo, hi := waitString(e.Low), waitString(e.High)
	if u := unitOf(e.Low); u == unitOf(e.High) && u != "" {
		return trimUnit(lo, u) + "-" + hi
	}
	return lo + "-" + hi
}

// Basis says what the estimate is made from: "median hold 4m over the
// last 20", with the spread of a range and the freeze that delays the
// turn.
func (e *Estimate) Basis() string {
	if e == nil {
		return ""
	}
	s := fmt.Sprintf("median hold %s over the last %d", shortDuration(e.Median, time.Minute), e.Holds)
	if e.overdue {
		s = fmt.Sprintf("the holder is overdue: held %s, %s past the %s", shortDuration(e.Held, time.Minute),
			shortDuration(e.Held-e.Median, time.Minute), s)
	}
	if e.spreadHigh > 0 {
		lo, hi := shortDuration(e.spreadLow, time.Minute), shortDuration(e.spreadHigh, time.Minute)
		if lo == hi {
			lo, hi = shortDuration(e.spreadLow, 10*time.Second), shortDuration(e.spreadHigh, 10*time.Second)
		}
		s += fmt.Sprintf(", holds of %s-%s", lo, hi)
	}
	if !e.frozenUntil.IsZero() {
		s += "; frozen until " + e.frozenUntil.UTC().Format(time.RFC3339)
	}
	return s
}

// EstimateWait estimates when the contender's turn comes: the rest of the
// current hold (the median of what the past holds that lasted longer than
// it has so far had left), then one typical hold (the median) for each
// contender ahead, each hand-over moved past any freeze of the lock or
// freeze window that covers it. It returns nil, saying nothing, when the
// history has fewer than minEstimateHolds holds, or when fewer than
// minEstimateHolds past holds lasted longer than the holder has held so
// far (its end cannot be read from the history), in which case the
// estimate is Overdue: the wait after the holder ends, with how long it has
// held against the median. With fewer than five holds, or holds spread wide (their
// middle half wider than half the median), the estimate is a range from
// the first to the third quartile (the shortest to the longest hold when
// fewer than five) rather than one figure.
func EstimateWait(in EstimateInput) *Estimate {
	holds := make([]time.Duration, 0, len(in.History))
	for _, h := range in.History {
		if d := h.Until.Sub(h.Since.Time); d > 0 {
			holds = append(holds, d)
		}
	}
	if len(holds) < minEstimateHolds {
		return nil
	}
	sort.Slice(holds, func(i, k int) bool { return holds[i] < holds[k] })
	e := &Estimate{Holds: len(holds), Median: quantile(holds, 0.5)}

	// The rest of the current hold, from the holds that outlasted it.
	var rest []time.Duration
	if in.HolderSince != nil {
		held := in.Now.Sub(*in.HolderSince)
		for _, d := range holds {
			if d > held {
				rest = append(rest, d-held)
			}
		}
		// NOTE: as for the history itself, fewer than minEstimateHolds
		// holds that lasted this long tell nothing of when this one ends
		// (ADR 0076): one such hold would give a single figure. What can
		// be said is that the holder is overdue, by how much, and what
		// comes after it.
		if len(rest) < minEstimateHolds {
			return overdue(in, e, held, holds)
		}
	}
	lo, mid, hi := 0.5, 0.5, 0.5
	q1, q3 := quantile(holds, 0.25), quantile(holds, 0.75)
	point := len(holds) >= minPointHolds && q3-q1 <= e.Median/2
	if !point {
		lo, hi = 0.25, 0.75
		if len(holds) < minPointHolds {
			lo, hi = 0, 1
		}
		e.spreadLow, e.spreadHigh = quantile(holds, lo), quantile(holds, hi)
	}
	at := func(q float64) time.Duration {
		var r time.Duration
		if len(rest) > 0 {
			r = quantile(rest, q)
		}
		turn, frozen := in.turn(r, quantile(holds, q))
		if frozen.After(e.frozenUntil) {
			e.frozenUntil = frozen
		}
		return turn.Sub(in.Now)
	}
	if point {
		e.Low = roundEstimate(at(mid))
		e.High = e.Low
		return e
	}
	e.Low, e.High = roundEstimate(at(lo)), roundEstimate(at(hi))
	return e
}

// overdue is the estimate e (Holds, Median set) when the holder, which
// has held for held, has outlasted all but a few of holds: the rest of
// its hold is unknown, and the wait after it is a typical hold (the
// median, a range when the holds are few or spread) for each hold ahead.
func overdue(in EstimateInput, e *Estimate, held time.Duration, holds []time.Duration) *Estimate {
	e.overdue, e.Held, e.Ahead = true, held, in.Ahead
	if in.Ahead == 0 {
		return e
	}
	lo, hi := e.Median, e.Median
	q1, q3 := quantile(holds, 0.25), quantile(holds, 0.75)
	if len(holds) < minPointHolds {
		lo, hi = holds[0], holds[len(holds)-1]
	} else if q3-q1 > e.Median/2 {
		lo, hi = q1, q3
	}
	at := func(hold time.Duration) time.Duration {
		turn, frozen := in.turn(0, hold)
		if frozen.After(e.frozenUntil) {
			e.frozenUntil = frozen
		}
		return turn.Sub(in.Now)
	}
	e.Low, e.High = roundEstimate(at(lo)), roundEstimate(at(hi))
	return e
}

// quantile is the q-quantile of sorted (0 ≤ q ≤ 1), interpolated between
// the two nearest values.
func quantile(sorted []time.Duration, q float64) time.Duration {
	pos := q * float64(len(sorted)-1)
	i := int(pos)
	if i >= len(sorted)-1 {
		return sorted[len(sorted)-1]
	}
	frac := pos - float64(i)
	return sorted[i] + time.Duration(frac*float64(sorted[i+1]-sorted[i]))
}

// roundEstimate rounds a wait to a step of about a tenth of it or less, so
// that no digit claims more than the history can tell: whole seconds
// under 10 s, 5 s under a minute, a minute under 15 min, 5 min under an
// hour, 15 min under 6 h, then hours.
func roundEstimate(d time.Duration) time.Duration {
	var step time.Duration
	switch {
	case d < 10*time.Second:
		step = time.Second
	case d < time.Minute:
		step = 5 * time.Second
	case d < 15*time.Minute:
		step = time.Minute
	case d < time.Hour:
		step = 5 * time.Minute
	case d < 6*time.Hour:
		step = 15 * time.Minute
	default:
		step = time.Hour
	}
	return d.Round(step)
}

// waitString is a rounded wait in words: "6 s", "11 min", "1 h 15 min".
func waitString(d time.Duration) string {
	switch {
	case d < time.Minute:
		return fmt.Sprintf("%d s", int(d/time.Second))
	case d < time.Hour:
		return fmt.Sprintf("%d min", int(d/time.Minute))
	}
	h, m := int(d/time.Hour), int(d%time.Hour/time.Minute)
	if m == 0 {
		return fmt.Sprintf("%d h", h)
	}
	return fmt.Sprintf("%d h %d min", h, m)
}

// unitOf is the unit waitString ends d with when it has one unit only.
func unitOf(d time.Duration) string {
	switch {
	case d < time.Minute:
		return " s"
	case d < time.Hour:
		return " min"
	case d%time.Hour == 0:
		return " h"
	}
	return ""
}

func trimUnit(s, unit string) string { return s[:len(s)-len(unit)] }

// shortDuration is d as the history table shows holds, rounded to step
// from a minute on: 42s, 4m, 3m50s, 1h30m.
func shortDuration(d, step time.Duration) string {
	if d < time.Minute {
		return d.Round(time.Second).String()
	}
	d = d.Round(step)
	var b strings.Builder
	if h := d / time.Hour; h > 0 {
		fmt.Fprintf(&b, "%dh", h)
	}
	if m := d % time.Hour / time.Minute; m > 0 {
		fmt.Fprintf(&b, "%dm", m)
	}
	if sec := d % time.Minute / time.Second; sec > 0 {
		fmt.Fprintf(&b, "%ds", sec)
	}
	return b.String()
}
