package record

import (
	"errors"
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LeaveQueue is the rule of a waiter that gives up: session leaves rec's
// queue at now. It reports whether rec changed (session waited).
func LeaveQueue(rec *Record, session string, now time.Time) bool {
	if !rec.remove(session) {
		return false
	}
	rec.Updated = Later(now, rec.Updated)
	return true
}

// DecideConfirm is the rule of the confirmation of a hand-over to the
// claim session, whose hold began with token, at now: a renewal
// (DecideRenew) with the holder's own TTL, after which the holder is no
// longer marked handed over, records its token and gets the expiry of its
// TTL (none in a pod). A holder that does not keep a ledger (keeps:
// Request.Ledger) drops the lock's, as its take-over would (takeLedger).
// It reports whether to write (false: confirmed already), and returns an
// error matching ErrLost when session no longer holds the lock.
func DecideConfirm(rec *Record, session, token string, keeps bool, now time.Time) (bool, error) {
	if err := heldBy(rec, session); err != nil || !rec.Holder.HandedOver {
		return false, err
	}
	ttl := rec.Holder.TTL.Duration
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	// The confirmation is the hold's first renewal, with the TTL the
	// holder asked for.
	if err := DecideRenew(rec, session, token, ttl, now); err != nil {
		return false, err
	}
	if !keeps {
		rec.Ledger, rec.Holder.LedgerKept = nil, false
	}
	return true, nil
}

// confirmHandOver turns h, handed over and holding since the hand-over
// whose token is token, into a confirmed holder at now: alive while its
// pod is, or until ttl has passed.
func confirmHandOver(h *Claim, token string, now time.Time, ttl time.Duration) {
	h.HandedOver = false
	h.Token, h.TokenPending = token, false
	h.Expires = nil
	if h.Pod == nil {
		h.Expires = microPtr(now.Add(ttl))
	}
}

// DecideFreeze is the rule of a freeze: it returns rec (nil when there is
// no lock: a new one nobody holds) frozen as req asks at now. A freeze
// already there is replaced, keeping the overrides of one still active;
// the holder and the queue stay as they are. An end that is not after now
// is an error.
func DecideFreeze(rec *Record, req FreezeRequest, user string, now time.Time) (*Record, error) {
	if !req.Until.After(now) {
		return nil, fmt.Errorf("freeze end %s is not in the future", req.Until.UTC().Format(time.RFC3339))
	}
	create := rec == nil
	if create {
		rec = &Record{Target: req.Target, Policy: PolicyNewest}
	}
	ts := Later(now, rec.Updated)
	rec.Updated = ts
	if create {
		// A new lock nobody holds: the free placeholder of record 1.3,
		// so that the record is valid for every reader once thawed.
		rec.Free(ts)
	}
	f := &Freeze{Reason: req.Reason, By: req.By, User: user, Since: ts, Until: metav1.NewMicroTime(req.Until)}
	if rec.Freeze.ActiveAt(now) {
		f.Overrides = rec.Freeze.Overrides
	}
	rec.Freeze = f
	return rec, nil
}

// DecideUnfreeze is the rule of an unfreeze of target's lock rec at now, with
// the freeze windows ws: the freeze is lifted, and a lock left with no
// holder goes to its first waiter, or stays free when nobody waits. It
// reports whether rec changed; a lock that is not frozen is left as it
// is, and one in a freeze window is refused with a *windowError.
func DecideUnfreeze(target string, rec *Record, ws []FreezeWindow, now time.Time) (*Unfrozen, bool, error) {
	if w := WindowFreeze(ws, target, now); w != nil {
		w.Until = metav1.NewMicroTime(thawsAt(rec.Freeze, ws, target, now))
		return nil, false, &WindowError{Target: target, Freeze: w}
	}
	if !rec.Freeze.ActiveAt(now) {
		return &Unfrozen{}, false, nil
	}
	res := &Unfrozen{Previous: rec.Freeze}
	rec.unfreeze(now)
	ts := Later(now, rec.Updated)
	rec.Updated = ts
	if rec.Unheld() {
		rec.DropExpired(now)
		rec.OrderWaiters(now)
		if len(rec.Waiters) == 0 {
			rec.Free(ts)
		} else {
			rec.HandOver(rec.Waiters[0], ts, now)
			h := rec.Holder
			res.HandedTo = &h
		}
	}
	return res, true, nil
}

// DecideRenew is the rule of a renewal of the lock rec by the holder of
// session, whose hold has the fencing token token, at now: a holder without
// a pod keeps the lock ttl past now, or until the expiry it has when that is
// later (a renewal never shortens a hold, such as a longer one a run
// re-entered), a hand-over not confirmed yet is confirmed (the
// confirmation is the hold's first renewal), and a freeze that is over is
// dropped. It returns an error matching ErrLost, and changes nothing, when
// session no longer holds the lock.
func DecideRenew(rec *Record, session, token string, ttl time.Duration, now time.Time) error {
	if err := heldBy(rec, session); err != nil {
		return err
	}
	rec.Updated = Later(now, rec.Updated)
	rec.Thaw(now)
	if rec.Holder.HandedOver {
		confirmHandOver(&rec.Holder, token, now, ttl)
	}
	if rec.Holder.Pod == nil {
		if e := now.Add(ttl); rec.Holder.Expires == nil || e.After(rec.Holder.Expires.Time) {
			rec.Holder.Expires = microPtr(e) // from now, not Updated (see holding)
		}
	}
	return nil
}

// heldBy returns nil when the claim session holds the lock rec, else an
// error matching ErrLost that says who does.
func heldBy(rec *Record, session string) error {
	if rec.IsFree() {
		return fmt.Errorf("%w: it was released", ErrLost)
	}
	if rec.Holder.ClaimID != session {
		return fmt.Errorf("%w: now held by %s", ErrLost, rec.Holder.Identity)
	}
	return nil
}

// PositionOf returns the 1-based place of the first waiter with identity
// id of the caller's job (see OwnJob), 0 if none.
func (r *Record) PositionOf(id Identity, job CIJob) int {
	for i, w := range r.Waiters {
		if id.Names(w.Identity) && OwnJob(w.CIJob, job) {
			return i + 1
		}
	}
	return 0
}

// OwnJob reports whether a claim of CI job held is the caller's (of job
// caller) to release without a token: either knows no job (the build is
// the unit, as before jobs were known), or it is the same job, in the
// same run or in a later one (a re-run releasing what the failed run
// left).
func OwnJob(held, caller CIJob) bool {
	if !held.Known() || !caller.Known() {
		return true
	}
	return held.Job == caller.Job && (held.JobID == caller.JobID || caller.Attempt > held.Attempt)
}

// ErrLost means a holder found the lock no longer its own.
var ErrLost = errors.New("lock lost")
