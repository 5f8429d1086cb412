package dashboard

import (
	"net/url"
	"slices"
	"strings"

	"github.com/lockctl/lockctl/lock"
)

// Filter is what the index page shows of the locks, from its query
// parameters (?q=TEXT&state=STATE), the same with and without its script:
// the locks whose target, holder or a waiter contains Text, whatever its
// case, in State. The zero Filter shows every lock.
type Filter struct {
	// Text is looked for in the target, the holder and the waiters, as
	// they are shown (acme/web@main#41); "" matches every lock.
	Text string
	// State is one of FilterStates; "" (or a state not among them) means
	// any.
	State string
}

// FilterStates are the states the page filters and counts the locks by.
// A lock may be in several: held (someone holds it, alive or stale),
// waiting (someone waits), frozen (a freeze holds it) and free (nobody
// holds it and no freeze does).
var FilterStates = []string{"held", "waiting", "frozen", "free"}

// filterOf reads the filter of the query q.
func filterOf(q url.Values) Filter {
	f := Filter{Text: strings.TrimSpace(q.Get("q")), State: q.Get("state")}
	if !slices.Contains(FilterStates, f.State) {
		f.State = ""
	}
	return f
}

// Active reports whether f leaves some locks out.
func (f Filter) Active() bool { return f.Text != "" || f.State != "" }

// Matches reports whether f shows the lock of e.
func (f Filter) Matches(e *LockEntry) bool {
	if f.State != "" && !inState(&e.Lock, f.State) {
		return false
	}
	if f.Text == "" {
		return true
	}
	text := strings.ToLower(f.Text)
	st := &e.Lock.Status
	if strings.Contains(strings.ToLower(e.Lock.Spec.Target), text) ||
		st.Holder != nil && strings.Contains(strings.ToLower(st.Holder.Identity.String()), text) {
		return true
	}
	for i := range st.Waiters {
		if strings.Contains(strings.ToLower(st.Waiters[i].Identity.String()), text) {
			return true
		}
	}
	return false
}

// inState reports whether l is in the filter state s (FilterStates).
func inState(l *lock.LockView, s string) bool {
	st := &l.Status
	switch s {
	case "held":
		return st.Holder != nil
	case "waiting":
		return len(st.Waiters) > 0
	case "frozen":
		return st.Freeze != nil
	case "free":
		return st.Holder == nil && st.Freeze == nil && st.State != lock.StateInvalid
	}
	return false
}

// Counts are how many locks are in each of FilterStates.
type Counts struct {
	Held, Waiting, Frozen, Free int
}

// countsOf counts locks by FilterStates.
func countsOf(locks []LockEntry) Counts {
	var c Counts
	count := func(l *lock.LockView, s string, n *int) {
		if inState(l, s) {
			*n++
		}
	}
	for i := range locks {
		l := &locks[i].Lock
		count(l, "held", &c.Held)
		count(l, "waiting", &c.Waiting)
		count(l, "frozen", &c.Frozen)
		count(l, "free", &c.Free)
	}
	return c
}

// stateCount is one state's count, as the page's header shows it.
type stateCount struct {
	State string
	N     int
}

// List is c in the order of FilterStates.
func (c Counts) List() []stateCount {
	return []stateCount{{"held", c.Held}, {"waiting", c.Waiting}, {"frozen", c.Frozen}, {"free", c.Free}}
}
