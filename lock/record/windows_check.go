package record

import (
	"fmt"
	"strconv"
	"time"

	"github.com/lockctl/lockctl/internal/base/human"
	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/validation"
)

// windowHorizon is how far ahead a new window is looked at: one that does
// not fire within it, or is in force all through it, is refused.
const windowHorizon = 365 * 24 * time.Hour

// maxCoverSteps bounds the walk over a window's freezes that looks for a
// gap between them. A window in force all the time moves the walk on by a
// minute at least (cron fires on minutes), so a year is 525,600 steps at
// most (115 ms); the bound only guards against a loop.
const maxCoverSteps = 1 << 20

// CheckWindowTargets refuses a target that is not a namespace name: a
// window naming one (a typo, "Production") would freeze nothing.
func CheckWindowTargets(w FreezeWindow) *WindowEntryError {
	for _, t := range w.Targets {
		if errs := validation.IsDNS1123Label(t); len(errs) > 0 {
			return &WindowEntryError{Index: 1, Name: w.Name, Field: "targets", Value: strconv.Quote(t),
				Reason: "not a namespace name (" + errs[0] + "); the window would freeze nothing"}
		}
	}
	return nil
}

// CheckFreezeWindowSchedule refuses a window, valid as an entry
// (ValidateFreezeWindow), whose schedule makes no sense from now on: one
// that does not fire within a year ("0 0 30 2 *": February has no 30th),
// and one whose freezes cover all of the next year, each starting before
// the one before has ended ("* * * * *" for 24h: never a moment to deploy).
// The error is a *WindowEntryError naming the schedule and saying why.
func CheckFreezeWindowSchedule(w FreezeWindow, now time.Time) error {
	if w.sched == nil {
		sched, err := cron.ParseStandard(w.Schedule)
		if err != nil {
			return &WindowEntryError{Index: 1, Name: w.Name, Field: "schedule", Value: strconv.Quote(w.Schedule), Reason: err.Error()}
		}
		w.sched = sched
	}
	bad := func(reason string) error {
		return &WindowEntryError{Index: 1, Name: w.Name, Field: "schedule", Value: strconv.Quote(w.Schedule), Reason: reason}
	}
	end := now.Add(windowHorizon)
	first := w.sched.Next(now)
	if first.IsZero() || first.After(end) {
		return bad("it never fires within a year, so the window never freezes anything; check the day of the month and the month")
	}
	if alwaysOn(w.sched, w.Duration.Duration, now, end) {
		return bad(fmt.Sprintf("each freeze (%s long) starts before the one before has ended: "+
			"the namespace would be frozen all the time; use lockctl freeze for a freeze until further notice", human.Duration(w.Duration.Duration)))
	}
	return nil
}

// alwaysOn reports whether the freezes of sched, each lasting d, cover all
// of [from, to]: a freeze is in force at from, and from every freeze the
// next starts before it ends.
func alwaysOn(sched cron.Schedule, d time.Duration, from, to time.Time) bool {
	// The first freeze in force at from started in (from-d, from].
	t := sched.Next(from.Add(-d))
	if t.IsZero() || t.After(from) {
		return false
	}
	for range maxCoverSteps {
		ends := t.Add(d)
		if !ends.Before(to) {
			return true
		}
		// The freeze that reaches furthest among those started by ends
		// is the last of them: the first at or after ends when one starts
		// right then, else the last one in (t, ends).
		next := sched.Next(ends.Add(-time.Nanosecond))
		if next.IsZero() {
			return false
		}
		if next.Equal(ends) {
			t = next
			continue
		}
		last := lastFireIn(sched, t, ends)
		if !last.After(t) {
			return false // a gap from ends to next
		}
		t = last
	}
	return false
}

// lastFireIn returns the last time sched fires in (after, before), or
// after when it does not: a bisection on the first fire at or after x.
func lastFireIn(sched cron.Schedule, after, before time.Time) time.Time {
	lo, hi := after, before // a fire in [lo, before); none in [hi, before)
	if n := sched.Next(after); n.IsZero() || !n.Before(before) {
		return after
	}
	for hi.Sub(lo) > time.Second {
		mid := lo.Add(hi.Sub(lo) / 2)
		if n := sched.Next(mid.Add(-time.Nanosecond)); !n.IsZero() && n.Before(before) {
			lo = mid
		} else {
			hi = mid
		}
	}
	// The fire is in [lo, hi): cron fires on whole seconds.
	n := sched.Next(lo.Add(-time.Nanosecond))
	if n.IsZero() || !n.Before(before) || !n.After(after) {
		return after
	}
	return n
}
