package record

import (
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Outcome is what a contender learns from one decision.
type Outcome int

const (
	// Waiting means the contender is (or will be, after the write) queued.
	Waiting Outcome = iota
	// Acquired means the contender holds the lock once the write succeeds.
	Acquired
	// Superseded means a newer build of the same branch waits or holds the
	// lock, so the contender gives up (after the write that removes it).
	Superseded
)

func (o Outcome) String() string {
	switch o {
	case Acquired:
		return "acquired"
	case Superseded:
		return "superseded"
	}
	return "waiting"
}

// Decision is the result of Decide: the record to write, if any, and what it
// means for the contender.
type Decision struct {
	// Record is the record to write; nil when nothing needs writing.
	Record *Record
	// Create is true when there is no lock yet and Record must be created.
	Create  bool
	Outcome Outcome
	// By is the newer claim that superseded the contender.
	By *Claim
	// Position is the contender's 1-based place in the queue when waiting.
	Position int
	// HandedTo is set when the decision hands a stale holder's lock to a
	// waiter other than the contender.
	HandedTo *Claim
	// StaleHolder is set when the decision removes a holder that is no
	// longer alive.
	StaleHolder *Claim
	// TookOver is true when writing Record makes the contender the holder:
	// that write's resourceVersion is its fencing token.
	TookOver bool
	// Confirmed is true when writing Record confirms a hand-over to the
	// contender: the hold began with the hand-over write, whose
	// resourceVersion is its fencing token, and keeps it.
	Confirmed bool
	// Reentered is true when the contender already held the lock under
	// another session with the same identity, job and pod (see sameHolder).
	Reentered bool
	// RanAgain is true when the contender takes the lock from its own CI
	// job's earlier run (see runsAgain); StaleHolder is that run.
	RanAgain bool
	// NextCheck is when the decision must be taken again even if nothing
	// changes: the holder's expiry, the contender's renewal or the end of a
	// freeze. Zero means only a change to the lock or the holder's pod
	// matters.
	NextCheck time.Time
	// Freeze is the freeze that holds the lock, when one does: the
	// contender waits for it to end unless it ignores freezes.
	Freeze *Freeze
	// CancelRequested is set when the decision asks the holder (this
	// claim, as it was) to stop: the contender has cancel-in-progress and
	// the holder is an older run of its branch.
	CancelRequested *Claim
}

// HandOver makes c the holder from ts. Its expiry stays the short one it
// had as a waiter, at most DefaultWaiterTTL from now, until it confirms,
// so a lock handed to a process that died meanwhile is free again soon;
// a waiter without one expires at now (never at ts, which a fast clock may
// have pushed ahead). The hand-over write is
// the take-over: its resourceVersion is c's fencing token, pending until
// the next write records it (docs/adr/0074-hold-on-hand-over.md).
func (r *Record) HandOver(c Claim, ts metav1.MicroTime, now time.Time) {
	r.remove(c.ClaimID)
	c.Since = ts
	c.HandedOver = true
	c.Token, c.TokenPending = "", true
	c.HandedNow = true
	// A hand-over passes the ledger (the account of run jobs) on to a
	// lockctl run (Cancelable), whose confirming write keeps it; anyone
	// else would drop it on confirming, and must not hold with it before.
	c.LedgerKept = r.Holder.LedgerKept && c.Cancelable
	if c.Expires == nil {
		c.Expires = microPtr(now)
	} else if most := now.Add(DefaultWaiterTTL); c.Expires.Time.After(most) {
		// A place deep in the queue lasts long (placeTTL); the hand-over
		// counts no longer than a place at the head would.
		c.Expires = microPtr(most)
	}
	r.Holder = c
}

func (r *Record) remove(session string) bool {
	for i, w := range r.Waiters {
		if w.ClaimID == session {
			r.Waiters = append(r.Waiters[:i:i], r.Waiters[i+1:]...)
			return true
		}
	}
	return false
}

func (r *Record) insert(i int, c Claim) {
	r.Waiters = append(r.Waiters[:i:i], append([]Claim{c}, r.Waiters[i:]...)...)
}

func (r *Record) DeepCopy() *Record {
	out := *r
	out.Holder = r.Holder.deepCopy()
	if r.Waiters != nil {
		out.Waiters = make([]Claim, len(r.Waiters))
		for i, w := range r.Waiters {
			out.Waiters[i] = w.deepCopy()
		}
	}
	out.History = append([]HistoryEntry(nil), r.History...)
	out.BreakGlass = append([]GrantEntry(nil), r.BreakGlass...)
	out.Frozen = append([]FrozenSpan(nil), r.Frozen...)
	out.Ledger = slices.Clone(r.Ledger)
	if r.Freeze != nil {
		f := *r.Freeze
		f.Overrides = append([]Override(nil), f.Overrides...)
		out.Freeze = &f
	}
	return &out
}

func (c Claim) deepCopy() Claim {
	if c.Pod != nil {
		p := *c.Pod
		c.Pod = &p
	}
	if c.Expires != nil {
		e := *c.Expires
		c.Expires = &e
	}
	if c.Queued != nil {
		q := *c.Queued
		c.Queued = &q
	}
	if c.CancelRequest != nil {
		r := *c.CancelRequest
		c.CancelRequest = &r
	}
	c.Apps = slices.Clone(c.Apps)
	return c
}

// Decide computes the next state of the lock for contender me at time now.
// cur is the current record, nil when there is no lock. holderAlive tells
// whether cur's holder still counts (its pod runs, or its expiry is ahead);
// the caller judges pods, Decide judges nothing but expiries of waiters.
// waiterTTL is how long a waiter's claim lasts between renewals.
//
// Decide is pure: the same inputs always give the same decision, which makes
// every negotiation rule testable without a cluster.
func Decide(cur *Record, me Claim, policy Policy, now time.Time, holderAlive bool, waiterTTL time.Duration) Decision {
	if cur == nil {
		rec := &Record{Target: me.Target, Policy: policy, Updated: metav1.NewMicroTime(now)}
		rec.Holder = holding(me, rec.Updated, now)
		return Decision{Record: rec, Create: true, Outcome: Acquired, TookOver: true}
	}
	rec := cur.DeepCopy()
	ts := Later(now, rec.Updated)
	rec.Updated = ts
	if rec.IsFree() && !rec.Freeze.ActiveAt(now) && len(rec.Waiters) == 0 {
		// A free lock kept for its history is taken as a new one: with the
		// contender's policy, and nobody to supersede.
		rec.unfreeze(now)
		rec.Policy, rec.Waiters = policy, nil
		rec.Holder = holding(me, ts, now)
		return Decision{Record: rec, Outcome: Acquired, TookOver: true}
	}
	// A freeze that is over is dropped: the record goes back to major
	// version 1.
	changed := rec.Thaw(now)

	// Waiters whose expiry passed are gone; the contender's own entry is
	// judged by the contender, which renews it below.
	live := rec.Waiters[:0]
	for _, w := range rec.Waiters {
		if w.ClaimID == me.ClaimID || w.Expires.After(now) {
			live = append(live, w)
		} else {
			changed = true
		}
	}
	rec.Waiters = live
	if rec.OrderWaiters(now) {
		changed = true
	}

	var d Decision
	if rec.Freeze != nil {
		d.Freeze = rec.Freeze
	}
	if !rec.Unheld() && (rec.Holder.ClaimID == me.ClaimID || sameHolder(rec.Holder, me)) &&
		len(me.Apps) > 0 && !slices.Equal(rec.Holder.Apps, me.Apps) {
		// A re-entry that names applications names the hold's anew; one
		// that names none keeps them.
		rec.Holder.Apps = slices.Clone(me.Apps)
		changed = true
	}
	if rec.Holder.ClaimID == me.ClaimID {
		if !rec.Holder.HandedOver && !changed {
			return Decision{Outcome: Acquired}
		}
		return acquire(rec, me, ts, now)
	}
	if !rec.Unheld() && runsAgain(rec.Holder, me) && rec.mayTake(me, now) {
		// The holder's CI job runs again (a re-run, a retry): the run that
		// took the lock is over, and its build's hold goes on in this one,
		// ahead of the queue, as a new hold with a new token.
		prev := rec.Holder
		dd := acquire(rec, me, ts, now)
		rec.Overridden(ts, now)
		dd.StaleHolder, dd.Freeze, dd.RanAgain = &prev, d.Freeze, true
		return dd
	}
	if sameHolder(rec.Holder, me) {
		// Re-entrance: another process of the holder's build and job (a
		// later step, a retried step) holds it already; the hold stays as
		// it is.
		if rec.Holder.HandedOver {
			d := acquire(rec, me, ts, now)
			d.Reentered = true
			return d
		}
		d := Decision{Outcome: Acquired, Reentered: true}
		if changed {
			d.Record = rec
		}
		return d
	}
	if !holderAlive || rec.Unheld() {
		if !rec.Unheld() {
			stale := rec.Holder
			d.StaleHolder = &stale
		}
		// The first waiter that may take the lock (all of them unless it is
		// frozen) takes it; so do we, ahead of it when our priority says so.
		next := rec.FirstEligible(now)
		if rec.mayTake(me, now) && (next == nil || next.ClaimID == me.ClaimID ||
			(rec.Position(me.ClaimID) == 0 && me.Priority.rank() > next.effectiveRank(now))) {
			if blocker := supersededBy(rec, me, policy, true); blocker != nil && rec.mayTake(*blocker, now) {
				// A newer build waits: it gets the lock, not us.
				next = blocker
			} else {
				dd := acquire(rec, me, ts, now)
				rec.Overridden(ts, now)
				dd.StaleHolder, dd.Freeze = d.StaleHolder, d.Freeze
				return dd
			}
		}
		switch {
		case next != nil:
			rec.HandOver(*next, ts, now)
			rec.Overridden(ts, now)
			handed := rec.Holder
			d.HandedTo = &handed
			changed = true
		case !rec.Unheld():
			// Frozen, and nobody may take it: a dead holder leaves all the
			// same, so the lock is free once the freeze ends.
			rec.Vacate(ts)
			changed = true
		}
	}

	if !rec.Unheld() && asksToCancel(rec.Holder, me) {
		// cancel-in-progress: the holder, an older run of our branch, is
		// asked to stop; it stops, releases, and hands the lock to us.
		rec.Holder.CancelRequest = &CancelRequest{Identity: me.Identity, ClaimID: me.ClaimID, At: ts}
		asked := rec.Holder
		d.CancelRequested = &asked
		changed = true
	}

	if by := supersededBy(rec, me, policy, false); by != nil {
		if rec.remove(me.ClaimID) {
			changed = true
		}
		d.Outcome, d.By = Superseded, by
		if changed {
			d.Record = rec
		}
		return d
	}

	if policy == PolicyNewest {
		// Older builds of our branch and priority give up their place to
		// us; we take the first of those places, and the time it has waited,
		// so ageing (OrderWaiters) goes on from there.
		slot := -1
		var since metav1.MicroTime
		kept := rec.Waiters[:0]
		for _, w := range rec.Waiters {
			if w.ClaimID != me.ClaimID && competes(w, me) && samePriority(w, me) && buildOf(w) < buildOf(me) {
				if slot < 0 {
					slot, since = len(kept), w.Since
				}
				changed = true
				continue
			}
			kept = append(kept, w)
		}
		rec.Waiters = kept
		if rec.Position(me.ClaimID) == 0 && slot >= 0 {
			c := waiting(me, ts, now, waiterTTL)
			c.Since = since
			rec.insert(slot, c)
			changed = true
		}
	}
	if pos := rec.Position(me.ClaimID); pos == 0 {
		// Behind everyone of the same effective priority or higher, ahead of
		// the rest.
		rec.Waiters = append(rec.Waiters, waiting(me, ts, now, waiterTTL))
		rec.OrderWaiters(now)
		w := &rec.Waiters[rec.Position(me.ClaimID)-1]
		w.Expires = microPtr(now.Add(placeTTL(waiterTTL, rec.Position(me.ClaimID))))
		changed = true
	} else if w, ttl := &rec.Waiters[pos-1], placeTTL(waiterTTL, pos); w.Expires.Time.Sub(now) < ttl*2/3 {
		w.Expires = microPtr(now.Add(ttl))
		changed = true
	}
	d.Position = rec.Position(me.ClaimID)
	if changed {
		d.Record = rec
	}
	mine := rec.Waiters[d.Position-1]
	d.NextCheck = mine.Expires.Time.Add(-placeTTL(waiterTTL, d.Position) / 3)
	if !rec.Unheld() && rec.Holder.Expires != nil && rec.Holder.Expires.Time.Before(d.NextCheck) {
		d.NextCheck = rec.Holder.Expires.Time
	}
	if f := rec.Freeze; f.ActiveAt(now) && f.Until.Time.Before(d.NextCheck) {
		d.NextCheck = f.Until.Time
	}
	return d
}

// sameHolder reports whether claim c is the holder h again: the same
// owner, repo, branch, build and sequence, the same CI job (name, ID and
// attempt; none on both sides is the same), and the same pod (by
// namespace and name, and by UID when both know it), or no pod on either
// side. A different pod or another job of the same build is another
// contender, and so is a claim with a job against a holder without one (a
// lockctl before record version 1.6 wrote it, and which job it was is not
// known).
func sameHolder(h, c Claim) bool {
	if h.Identity != c.Identity || h.CIJob != c.CIJob || (h.Pod == nil) != (c.Pod == nil) {
		return false
	}
	if h.Pod == nil {
		return true
	}
	return h.Pod.Namespace == c.Pod.Namespace && h.Pod.Name == c.Pod.Name &&
		(h.Pod.UID == "" || c.Pod.UID == "" || h.Pod.UID == c.Pod.UID)
}

// runsAgain reports whether claim c is a later run of holder h's CI job: the
// same build (identity and sequence) and job name, and a higher attempt
// (GitHub Actions' re-run of a run, GitLab's retry of a job). The CI system
// starts a job again only once its earlier run has ended, so that run's
// hold is over and c takes it over. A holder or a claim without a job or
// an attempt never runs again.
func runsAgain(h, c Claim) bool {
	return h.Identity == c.Identity && h.Job != "" && h.Job == c.Job &&
		h.Attempt > 0 && c.Attempt > h.Attempt
}

// otherJob reports whether a and b are two jobs of one build: both name
// their job, and the name or ID differs.
func otherJob(a, b Claim) bool {
	return a.Job != "" && b.Job != "" && (a.Job != b.Job || a.JobID != b.JobID)
}

// acquire makes me the holder of rec, out of the queue.
func acquire(rec *Record, me Claim, ts metav1.MicroTime, now time.Time) Decision {
	if pos := rec.Position(me.ClaimID); pos > 0 {
		// The hold's wait began when me joined the queue.
		me.Queued = rec.Waiters[pos-1].Queued
	}
	rec.remove(me.ClaimID)
	prev := rec.Holder
	rec.Holder = holding(me, ts, now)
	if prev.ClaimID == me.ClaimID || sameHolder(prev, me) || runsAgain(prev, me) {
		// A hand-over in spite of a freeze stays on record, and so does a
		// newer build's request to stop.
		rec.Holder.IgnoredFreeze = prev.IgnoredFreeze
		rec.Holder.CancelRequest = prev.CancelRequest
		if len(me.Apps) == 0 {
			// So do the applications it named, unless named anew.
			rec.Holder.Apps = prev.Apps
		}
	}
	if prev.ClaimID == me.ClaimID && (prev.Token != "" || prev.TokenPending) {
		// Still the same hold: it keeps its token. A hand-over to me began
		// the hold with the hand-over write, whose version is its token
		// (recorded since, or still pending); confirming it keeps that, and
		// the hold's start.
		rec.Holder.Token, rec.Holder.TokenPending = prev.Token, prev.TokenPending
		rec.Holder.LedgerKept = prev.LedgerKept
		rec.Holder.Queued = prev.Queued
		if prev.HandedOver {
			rec.Holder.Since = prev.Since
			return Decision{Record: rec, Outcome: Acquired, Confirmed: true}
		}
		return Decision{Record: rec, Outcome: Acquired}
	}
	return Decision{Record: rec, Outcome: Acquired, TookOver: true}
}

// holding is me's claim as holder from ts: alive while its pod is, or until
// its TTL has passed. The expiry counts from now, never from ts: ts never
// goes backwards, so a writer with a fast clock would push it for everyone.
// A claim that did not wait (no Queued) was queued at ts: its wait is 0.
func holding(me Claim, ts metav1.MicroTime, now time.Time) Claim {
	c := me
	c.Since = ts
	if c.Queued == nil {
		c.Queued = microPtr(ts.Time)
	}
	c.HandedOver = false
	c.Token, c.TokenPending = "", true
	c.Expires = nil
	if c.Pod == nil {
		c.Expires = microPtr(now.Add(me.TTL.Duration))
	}
	return c
}

// waiting is me's claim as a waiter from ts, expiring ttl after now: its
// wait begins at ts.
func waiting(me Claim, ts metav1.MicroTime, now time.Time, ttl time.Duration) Claim {
	c := me
	c.Since = ts
	c.Queued = microPtr(ts.Time)
	c.HandedOver = false
	c.Expires = microPtr(now.Add(ttl))
	return c
}

// supersededBy returns the claim that makes me give up under policy, or nil.
// Under PolicyNewest that is a holder of the same branch and sequence with
// a higher build, whatever its priority, or a waiter of the same branch,
// sequence and priority with a higher build, or with the same build ahead
// of me (unless it is another job of that build). With waitersOnly
// the holder is not considered.
func supersededBy(rec *Record, me Claim, policy Policy, waitersOnly bool) *Claim {
	if policy != PolicyNewest {
		return nil
	}
	mine := buildOf(me)
	if !waitersOnly && rec.Holder.ClaimID != me.ClaimID && competes(rec.Holder, me) && buildOf(rec.Holder) > mine {
		h := rec.Holder
		return &h
	}
	pos := rec.Position(me.ClaimID)
	for i, w := range rec.Waiters {
		if w.ClaimID == me.ClaimID || !competes(w, me) || !samePriority(w, me) {
			continue
		}
		b := buildOf(w)
		// NOTE: another job of the same build is not a duplicate of this
		// one: both wait their turn.
		if b > mine || (b == mine && !otherJob(w, me) && (pos == 0 || i < pos-1)) {
			w := w
			return &w
		}
	}
	return nil
}

// competes reports whether one of a and b can supersede the other: both
// are builds of the same branch counted in the same sequence, whose
// numbers order them. Builds of two sequences (two GitHub workflows) never
// supersede each other. An Unordered claim (a developer's terminal, a CI
// without a build counter) competes with nobody and is served first come,
// first served.
func competes(a, b Claim) bool {
	return !a.Unordered && !b.Unordered && a.sameSequence(b.Identity)
}

// buildOf returns the claim's build number; records are validated on
// decode, so an unparsable build never reaches here except as 0.
func buildOf(c Claim) uint64 {
	n, _ := c.buildNumber()
	return n
}

func microPtr(t time.Time) *metav1.MicroTime {
	m := metav1.NewMicroTime(t)
	return &m
}

// placeTTL is how long the place of the waiter at position pos lasts
// between renewals: ttl at the head, and a sixth of ttl more for every
// place behind it. The record's renewal writes then grow with the log of
// the queue, not with the queue, and so do the joins they make lose.
func placeTTL(ttl time.Duration, pos int) time.Duration {
	if pos <= HeadWatchers {
		return ttl
	}
	return ttl + time.Duration(pos-HeadWatchers)*ttl/6
}

// HeadWatchers is how many waiters at the head of the queue watch the
// record itself.
const HeadWatchers = 3
