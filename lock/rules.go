package lock

import (
	"fmt"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The rules of the verbs but acquire (whose rule is Decide, decide.go):
// each a pure function of the record read that decides what the write
// changes, table-tested in rules_test.go.

// leaveQueue is the rule of a waiter that gives up: session leaves rec's
// queue at now. It reports whether rec changed (session waited).
func leaveQueue(rec *Record, session string, now time.Time) bool {
	if !rec.remove(session) {
		return false
	}
	rec.Updated = later(now, rec.Updated)
	return true
}

// decideConfirm is the rule of the confirmation of a hand-over to the
// claim session, whose hold began with token, at now: a renewal
// (decideRenew) with the holder's own TTL, after which the holder is no
// longer marked handed over, records its token and gets the expiry of its
// TTL (none in a pod). A holder that does not keep a ledger (keeps:
// Request.Ledger) drops the lock's, as its take-over would (takeLedger).
// It reports whether to write (false: confirmed already), and returns an
// error matching ErrLost when session no longer holds the lock.
func decideConfirm(rec *Record, session, token string, keeps bool, now time.Time) (bool, error) {
	if err := heldBy(rec, session); err != nil || !rec.Holder.HandedOver {
		return false, err
	}
	ttl := rec.Holder.TTL.Duration
	if ttl <= 0 {
		ttl = DefaultTTL
	}
	// The confirmation is the hold's first renewal, with the TTL the
	// holder asked for.
	if err := decideRenew(rec, session, token, ttl, now); err != nil {
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

// decideFreeze is the rule of a freeze: it returns rec (nil when there is
// no lock: a new one nobody holds) frozen as req asks at now. A freeze
// already there is replaced, keeping the overrides of one still active;
// the holder and the queue stay as they are. An end that is not after now
// is an error.
func decideFreeze(rec *Record, req FreezeRequest, now time.Time) (*Record, error) {
	if !req.Until.After(now) {
		return nil, fmt.Errorf("freeze end %s is not in the future", req.Until.UTC().Format(time.RFC3339))
	}
	create := rec == nil
	if create {
		rec = &Record{Target: req.Target, Policy: PolicyNewest}
	}
	ts := later(now, rec.Updated)
	rec.Updated = ts
	if create {
		// A new lock nobody holds: the free placeholder of record 1.3,
		// so that the record is valid for every reader once thawed.
		rec.free(ts)
	}
	f := &Freeze{Reason: req.Reason, By: req.By, User: req.user, Since: ts, Until: metav1.NewMicroTime(req.Until)}
	if rec.Freeze.ActiveAt(now) {
		f.Overrides = rec.Freeze.Overrides
	}
	rec.Freeze = f
	return rec, nil
}

// decideUnfreeze is the rule of an unfreeze of target's lock rec at now, with
// the freeze windows ws: the freeze is lifted, and a lock left with no
// holder goes to its first waiter, or stays free when nobody waits. It
// reports whether rec changed; a lock that is not frozen is left as it
// is, and one in a freeze window is refused with a *windowError.
func decideUnfreeze(target string, rec *Record, ws []FreezeWindow, now time.Time) (*Unfrozen, bool, error) {
	if w := windowFreeze(ws, target, now); w != nil {
		w.Until = metav1.NewMicroTime(thawsAt(rec.Freeze, ws, target, now))
		return nil, false, &windowError{Target: target, Freeze: w}
	}
	if !rec.Freeze.ActiveAt(now) {
		return &Unfrozen{}, false, nil
	}
	res := &Unfrozen{Previous: rec.Freeze}
	rec.unfreeze(now)
	ts := later(now, rec.Updated)
	rec.Updated = ts
	if rec.unheld() {
		rec.dropExpired(now)
		rec.orderWaiters(now)
		if len(rec.Waiters) == 0 {
			rec.free(ts)
		} else {
			rec.handOver(rec.Waiters[0], ts, now)
			h := rec.Holder
			res.HandedTo = &h
		}
	}
	return res, true, nil
}

// decideLeave is the rule of the end of a caller that re-entered the hold
// of rec at now: the hold stays as it is (holder, token, expiry, queue),
// and the ledger, kept by the holder, changes only when the caller's ledger
// (o.ledger) removes the caller's own mark (o.ledgerMark) from it
// (Ledger.Release), as releaseLedger lets a releasing holder's ledger do.
// It reports whether rec changed.
func decideLeave(rec *Record, o ReleaseOptions, now time.Time) bool {
	if o.ledger == nil || o.ledgerMark == "" || !rec.Holder.LedgerKept || rec.Ledger == nil {
		return false
	}
	next, marked, err := o.ledger.Release(rec.Ledger, o.ledgerMark)
	if err != nil || !marked {
		return false
	}
	rec.Ledger = next
	rec.Updated = later(now, rec.Updated)
	return true
}

// decideRelease is the rule of a release of target's lock rec, of version rv,
// by id at now, with the freeze windows ws: it changes rec into the record
// to write and reports whether to write it. The holder (by identity and
// job, or by o.Token) releases: the first waiter that may take the lock
// gets it, else the lock stays, free (or frozen, keeping its queue), for
// its history; the hold's end goes into the history. A caller that only
// waits leaves the queue (Released.LeftQueue). Anyone else is refused with
// a *NotHolderError, or a *TokenError for a wrong token, unless o.Force
// breaks the hold. Nothing to release is an empty Released, and no write.
func decideRelease(target string, rec *Record, rv string, id Identity, o ReleaseOptions, ws []FreezeWindow, now time.Time) (*Released, bool, error) {
	if rec.IsFree() && rec.positionOf(id, o.Job) == 0 {
		return &Released{}, false, nil
	}
	holder := rec.Holder
	res := &Released{Previous: &holder}
	if rec.unheld() {
		// Frozen with no holder: nothing to release, but a waiter leaves.
		res.Previous = nil
	}
	switch {
	case o.Token != "" && !rec.unheld():
		if tok := holderToken(rec, rv); tok != o.Token {
			return nil, false, &TokenError{Target: target, Token: o.Token, Holder: holder, HolderToken: tok}
		}
	case !id.names(holder.Identity) || !ownJob(holder.CIJob, o.Job) || rec.unheld():
		if !o.Force {
			if i := rec.positionOf(id, o.Job); i > 0 {
				rec.Waiters = append(rec.Waiters[:i-1:i-1], rec.Waiters[i:]...)
				rec.Updated = later(now, rec.Updated)
				return &Released{LeftQueue: true}, true, nil
			}
			if rec.unheld() {
				return res, false, nil
			}
			err := &NotHolderError{Target: target, Holder: holder}
			if id.names(holder.Identity) {
				err.Caller = o.Job
			}
			return nil, false, err
		}
		if rec.unheld() {
			return res, false, nil
		}
		res.Forced = true
	}
	releaseLedger(rec, o)
	ts := later(now, rec.Updated)
	rec.Updated = ts
	rec.thaw(now)
	if ws != nil {
		rec.dropLapsedWindow(ws, now)
		rec.applyWindows(ws, now)
	}
	rec.dropExpired(now)
	rec.orderWaiters(now)
	// While the lock is frozen only a waiter that ignores the freeze takes
	// it; the others wait for the freeze to end.
	next := rec.firstEligible(now)
	how, by := EndReleased, ""
	if res.Forced {
		how, by = EndBroken, o.by(id)
	}
	switch {
	case next == nil && rec.Freeze != nil:
		rec.ended(holder, ts, how, by, "")
		rec.vacate(ts)
	case next == nil:
		// NOTE: kept, free, rather than deleted, so its history outlives
		// the hold; every lockctl of this major version takes it over.
		rec.ended(holder, ts, how, by, "")
		rec.free(ts)
	default:
		if !res.Forced {
			how, by = EndHandedOver, next.Identity.String()
		}
		rec.ended(holder, ts, how, by, "")
		rec.handOver(*next, ts, now)
		rec.overridden(ts, now)
		handed := rec.Holder
		res.HandedTo = &handed
	}
	return res, true, nil
}

// decideRenew is the rule of a renewal of the lock rec by the holder of
// session, whose hold has the fencing token token, at now: a holder without
// a pod keeps the lock ttl past now, or until the expiry it has when that is
// later (a renewal never shortens a hold, such as a longer one a run
// re-entered), a hand-over not confirmed yet is confirmed (the
// confirmation is the hold's first renewal), and a freeze that is over is
// dropped. It returns an error matching ErrLost, and changes nothing, when
// session no longer holds the lock.
func decideRenew(rec *Record, session, token string, ttl time.Duration, now time.Time) error {
	if err := heldBy(rec, session); err != nil {
		return err
	}
	rec.Updated = later(now, rec.Updated)
	rec.thaw(now)
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
