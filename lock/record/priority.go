package record

import (
	"fmt"
	"slices"
	"time"
)

// Priority orders waiters: a higher priority is served ahead of a lower one,
// never ahead of the holder. docs/adr/0018-priority.md has the design.
type Priority string

const (
	// PriorityHigh is for hotfixes: served ahead of normal and low waiters.
	PriorityHigh Priority = "high"
	// PriorityNormal is the default. The record stores it as no priority
	// at all, so records of normal contenders read as they did before.
	PriorityNormal Priority = "normal"
	// PriorityLow is served after normal and high waiters.
	PriorityLow Priority = "low"
)

// PriorityAgeing is how long a waiter waits before its effective priority
// rises one level: a low waiter counts as normal after PriorityAgeing and
// as high after twice that, so nobody arriving later passes it from then on
// and no waiter starves.
const PriorityAgeing = 10 * time.Minute

// rank orders priorities: low 0, normal 1, high 2. A value this lockctl
// does not know (a newer minor version's) counts as normal.
func (p Priority) rank() int {
	switch p {
	case PriorityLow:
		return 0
	case PriorityHigh:
		return 2
	}
	return 1
}

var priorityByRank = [...]Priority{PriorityLow, PriorityNormal, PriorityHigh}

// Level returns p itself, with "" (and any value this lockctl does not
// know) as PriorityNormal.
func (p Priority) Level() Priority { return priorityByRank[p.rank()] }

// Stored is p as the record keeps it: "" for normal.
func (p Priority) Stored() Priority {
	if p.Level() == PriorityNormal {
		return ""
	}
	return p
}

// effectiveRank is c's rank after ageing at now: one level more for each
// PriorityAgeing waited since c.Since, at most high.
func (c Claim) effectiveRank(now time.Time) int {
	r := c.Priority.rank()
	if waited := now.Sub(c.Since.Time); waited > 0 {
		r += int(waited / PriorityAgeing)
	}
	return min(r, PriorityHigh.rank())
}

// EffectivePriority is the priority c is served with at now: its own,
// raised one level for each PriorityAgeing it has waited.
func (c Claim) EffectivePriority(now time.Time) Priority {
	return priorityByRank[c.effectiveRank(now)]
}

// OrderWaiters sorts the queue by effective priority at now, highest first,
// keeping the order of waiters of equal effective priority (arrival, or the
// place a newer build inherited). It reports whether the order changed.
func (r *Record) OrderWaiters(now time.Time) bool {
	sorted := slices.IsSortedFunc(r.Waiters, func(a, b Claim) int {
		return b.effectiveRank(now) - a.effectiveRank(now)
	})
	if sorted {
		return false
	}
	slices.SortStableFunc(r.Waiters, func(a, b Claim) int {
		return b.effectiveRank(now) - a.effectiveRank(now)
	})
	return true
}

// ParsePriority returns the priority named s; "" means PriorityNormal.
func ParsePriority(s string) (Priority, error) {
	switch Priority(s) {
	case "", PriorityNormal:
		return PriorityNormal, nil
	case PriorityHigh, PriorityLow:
		return Priority(s), nil
	}
	return "", fmt.Errorf("unknown priority %q: use %q, %q or %q", s, PriorityHigh, PriorityNormal, PriorityLow)
}

// samePriority reports whether a and b asked for the same priority: newest
// wins only among them.
func samePriority(a, b Claim) bool {
	return a.Priority.Level() == b.Priority.Level()
}
