package stats

import (
	"fmt"
	"slices"
	"time"

	"github.com/lockctl/lockctl/internal/base/human"
	"github.com/lockctl/lockctl/lock/record"
)

// The bounds of a wait budget (acquire --timeout auto).
const (
	// BudgetFloor is the shortest budget: a wait for a lock whose holds
	// are short still gets time for a hand-over or two.
	BudgetFloor = time.Minute
	// BudgetCeiling is the longest budget: past it, a pipeline had better
	// give up and say so than wait on.
	BudgetCeiling = 6 * time.Hour
	// BudgetNoHistory is the budget of a lock with fewer than
	// MinBudgetHolds holds recorded: nothing tells how long it is held.
	BudgetNoHistory = time.Hour
	// MinBudgetHolds is the fewest recorded holds a budget is made from,
	// as for the wait estimate (ADR 0062).
	MinBudgetHolds = 3
)

// Budget is how long a contender may wait for a lock before giving up,
// made from the lock's recent holds and the contender's place in the
// queue (docs/adr/0111-wait-budgets-and-lock-signals.md).
type Budget struct {
	// Timeout is the budget: the longest the contender waits.
	Timeout time.Duration
	// Expected is the wait to expect (medians: the rest of the current
	// hold and one median hold per waiter ahead); 0 without history.
	Expected time.Duration
	// Position is the contender's place in the queue on joining (1 is
	// next).
	Position int
	// Median and P90 are the median and the 90th percentile of the
	// recorded holds; Holds is how many there are.
	Median, P90 time.Duration
	Holds       int
	// Waits says the contender would wait: someone holds the lock or
	// waits for it.
	Waits bool
	// Unbounded is the budget before the floor and the ceiling (the
	// benchmark replays time faster, with bounds of its own); 0 without
	// history.
	Unbounded time.Duration
}

// FromHistory reports whether the budget was made from recorded holds,
// not BudgetNoHistory.
func (b Budget) FromHistory() bool { return b.Holds >= MinBudgetHolds }

// Describe says what the budget stands on, for the line printed when
// waiting starts: "position 2, holds of ~19 min (p90 25 min) over the
// last 100".
func (b Budget) Describe() string {
	if !b.FromHistory() {
		return fmt.Sprintf("position %d, fewer than %d holds recorded", b.Position, MinBudgetHolds)
	}
	return fmt.Sprintf("position %d, holds of ~%s (p90 %s) over the last %d",
		b.Position, human.Duration(b.Median), human.Duration(b.P90), b.Holds)
}

// Exceeds is the warning for a contender whose expected wait exceeds its
// timeout: "at position 4 with holds of ~19 min, expected wait 57 min
// exceeds --timeout 30m"; "" when it does not, or nothing is expected.
func (b Budget) Exceeds(timeout time.Duration, flag string) string {
	if timeout <= 0 || !b.FromHistory() || b.Expected <= timeout {
		return ""
	}
	return fmt.Sprintf("at position %d with holds of ~%s, expected wait %s exceeds %s",
		b.Position, human.Duration(b.Median), human.Duration(b.Expected), flag)
}

// BudgetOf is the budget of a contender that joins the queue of the lock
// whose record is rec at now (on the clock the record is stamped on);
// rec nil is no lock. The contender is counted behind every waiter. The
// budget is the longest rest of the current hold that a recorded hold
// had at its age (the 90th percentile hold when it has outlasted them
// all), plus the longest recorded hold per waiter ahead, plus a quarter,
// between BudgetFloor and BudgetCeiling.
func BudgetOf(rec *record.Record, now time.Time) Budget {
	b := Budget{Position: 1}
	var holds []time.Duration
	held := false
	var elapsed time.Duration
	if rec != nil {
		b.Position = len(rec.Waiters) + 1
		for _, e := range rec.History {
			// NOTE: a hold recorded as 0 is a hold (of less than the
			// record's clock can tell), unlike one that ends before it
			// begins.
			if !e.Until.Before(&e.Since) {
				holds = append(holds, e.Held())
			}
		}
		if !rec.IsFree() && rec.Holder.ClaimID != "" && (rec.Holder.Expires == nil || rec.Holder.Expires.After(now)) {
			held, elapsed = true, max(now.Sub(rec.Holder.Since.Time), 0)
		}
		b.Waits = held || len(rec.Waiters) > 0 || rec.Freeze.ActiveAt(now)
	}
	b.Holds = len(holds)
	if !b.FromHistory() {
		b.Timeout = BudgetNoHistory
		return b
	}
	slices.Sort(holds)
	b.Median, b.P90 = Quantile(holds, 0.5), Quantile(holds, 0.9)
	var restBudget, restExpected time.Duration
	if held {
		var rest []time.Duration
		for _, d := range holds {
			if d > elapsed {
				rest = append(rest, d-elapsed)
			}
		}
		if len(rest) > 0 {
			restBudget, restExpected = rest[len(rest)-1], Quantile(rest, 0.5)
		} else {
			restBudget, restExpected = b.P90, b.Median
		}
	}
	ahead := time.Duration(b.Position - 1)
	b.Expected = restExpected + ahead*b.Median
	// NOTE: the longest hold per waiter ahead, not the p90: one slow
	// deploy ahead in ten outlasts a p90, and a budget that times out a
	// waiter the lock would have come to is the one wrong budget
	// (BenchmarkEstimateReplay: with the p90, 16% of a busy week's
	// waiters).
	budget := restBudget + ahead*holds[len(holds)-1]
	budget += budget / 4
	b.Unbounded = budget
	b.Timeout = min(max(budget, BudgetFloor), BudgetCeiling)
	return b
}
