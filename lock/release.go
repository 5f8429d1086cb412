package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
)

// Released says what Release did.
type Released struct {
	// Previous is the holder the lock was taken from; nil when the lock was
	// not held (or not there).
	Previous *record.Claim
	// HandedTo is the waiter that holds the lock now; nil when the lock was
	// deleted because nobody waited.
	HandedTo *record.Claim
	// Forced is true when the lock was someone else's, or invalid, and
	// --force broke it.
	Forced bool
	// LeftQueue is true when the caller did not hold the lock but waited
	// for it, and gave up its place instead.
	LeftQueue bool
	// Invalid is set when a forced release deleted an invalid lock, or one
	// of a record version this lockctl cannot read.
	Invalid error
	// Left is true when ReleaseHeld left a hold the caller had re-entered
	// (Held.Reentered) as it found it instead of releasing it: it wrote at
	// most the removal of the caller's own mark in the account of run jobs.
	Left bool
	// Kept is, when Left, the claim that still holds the lock: the hold
	// the caller re-entered; nil when that hold ended meanwhile.
	Kept *record.Claim
}

// ReleaseOptions tunes Release.
type ReleaseOptions struct {
	// Force releases the lock whoever holds it, and deletes an invalid lock.
	Force bool
	// By names who releases, for the lock's Events and history when Force
	// breaks someone else's hold; "" means the identity given to Release.
	By string
	// Token, when set, releases the lock whatever the caller's identity if
	// its holder's fencing token (Held.Token, printed by acquire) is Token;
	// otherwise Release refuses with a *TokenError and changes nothing.
	// "" means the holder is matched by identity.
	Token string
	// Job is the caller's CI job, when known. Without Token, a hold of
	// another job of the caller's build (the same identity) is refused
	// with a *NotHolderError: jobs of one build running at once must not
	// release each other's holds, and a later job releases by Token. A
	// later run of the holder's job (a re-run, a retry) releases it. The
	// zero value matches any job, as before jobs were known.
	Job record.CIJob

	// ledger and ledgerMark are the Held's (see Held.ledger), set by
	// ReleaseHeld: the release asks the ledger what to leave in the
	// record (Ledger.Release).
	ledger     Ledger
	ledgerMark string

	// beforeEvents, when set, is called after the release's write and
	// before its Events are recorded (ReleaseHeld waits there for the
	// Events of the acquisition).
	beforeEvents func()
}

// eventsTurn returns once the release's Events may be recorded.
func (o ReleaseOptions) eventsTurn() {
	if o.beforeEvents != nil {
		o.beforeEvents()
	}
}

// Release gives up target's lock held by id. When others wait, the first
// live waiter becomes the holder with the same write; otherwise the lock is
// deleted with UID and resourceVersion preconditions. Releasing a lock that
// is not there succeeds with an empty Released. A lock held by another
// identity, or by another CI job of the same build (o.Job), is refused
// with a *NotHolderError unless o.Force; a caller that
// only waits leaves the queue. With o.Token the holder is matched by its
// fencing token instead of id.
func (c *Client) Release(ctx context.Context, target string, id record.Identity, o ReleaseOptions) (*Released, error) {
	return c.release(ctx, target, id, o, nil)
}

// ReleaseHeld gives up a lock h that Acquire returned, as Release does for
// h's holder identity. It first writes on the version of the lock h last
// wrote or read (the take-over, the confirmation or the last Renew), which
// saves reading the lock when nothing changed since, as when nobody waits;
// the write is a compare-and-swap on that version, so a lock that changed
// meanwhile is read again and decided on afresh, as Release does. The
// Events of the acquisition (Held.WaitEvents) are waited for after the
// write and before the release's own Events, so the lock's Events keep
// their order while the next holder does not wait for them; ReleaseHeld
// returns once both are written.
//
// A hold the caller re-entered (Held.Reentered: another process of its
// build and job held the lock already, or had been handed it) is not
// released but left as it was found, for the process that took it to
// release (docs/adr/0077-a-run-leaves-a-reentered-hold.md): holder, token,
// expiry and queue stay. The only write is the removal of the caller's
// own mark from the ledger when its Request.Ledger says so (decideLeave),
// a compare-and-swap like the release's; Released.Left says so.
//
// The version written on is the newest the watch of the lock (see Acquire)
// brought, and a write lost to another (a waiter joining the
// queue) is tried again on the version the watch brings next rather than
// on a fresh read; a hold without a watch starts one, from the version its
// write lost on, at its first lost write. The watch stops when ReleaseHeld
// returns.
func (c *Client) ReleaseHeld(ctx context.Context, h *Held, o ReleaseOptions) (*Released, error) {
	// NOTE: a hold that began with a hand-over writes on the version its
	// confirmation stored, if it is under way; it is stopped if ctx ends
	// first.
	h.settleConfirmation(ctx)
	defer h.WaitEvents(ctx)
	defer h.StopWatching()
	o.beforeEvents = func() { h.WaitEvents(ctx) }
	o.Job = h.Holder.CIJob
	o.ledger, o.ledgerMark = h.ledger, h.ledgerMark
	if h.Reentered {
		return c.leaveHeld(ctx, h, o)
	}
	return c.release(ctx, h.Target, h.Holder.Identity, o, c.heldVersions(h, o))
}

// leaveHeld is ReleaseHeld of a hold h re-entered: it leaves the hold as
// it is, removing only h's own mark of run jobs when decideLeave says so,
// on the versions ReleaseHeld writes on. Nothing to write costs no request
// while h's last version still shows the hold.
func (c *Client) leaveHeld(ctx context.Context, h *Held, o ReleaseOptions) (*Released, error) {
	var res *Released
	err := c.update(ctx, "leave", h.Target, c.heldVersions(h, o), func(cm *corev1.ConfigMap) (change, error) {
		res = &Released{Left: true}
		if cm == nil {
			return change{}, nil
		}
		rec, err := c.decode(cm, h.Target)
		if err != nil {
			return change{}, err
		}
		if !rec.IsFree() && rec.Holder.ClaimID == h.ClaimID {
			kept := rec.Holder
			res.Kept = &kept
		}
		if !decideLeave(rec, o, c.clk.Now()) {
			return change{}, nil
		}
		return change{Decision: record.Decision{Record: rec}}, nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// heldVersions is the reader of ReleaseHeld: the versions of the lock h
// saw while it holds the lock in them, then fresh reads. Only a version in
// which h holds the lock is written on: any other (not the holder, free,
// unreadable) is decided on a fresh read, as is every version once one was
// not.
//
// A hold that watches nothing (taken at once, without waiting) and loses
// its first write reads the newest version: the version it knew may be
// many changes old (contenders joining the queue meanwhile), and a watch
// from it would bring those changes one at a time, oldest first, each a
// write lost on it. A loss after that read watches from the version it was
// lost on, which the watch follows from the next change on.
func (c *Client) heldVersions(h *Held, o ReleaseOptions) reader {
	fresh := o.Token != "" || o.Force
	read := false
	return func(ctx context.Context, target string, lost *corev1.ConfigMap, attempt int) (*corev1.ConfigMap, error) {
		if !fresh && lost != nil {
			if h.watching == nil {
				if !read {
					read = true
					cm, err := c.get(ctx, target)
					h.remember(cm)
					return cm, err
				}
				h.keep(c.watchFrom(ctx, lost))
			}
			fresh = !h.awaitNewer(ctx, c.clk, lost)
		}
		if !fresh {
			if cm := h.lastCM(); c.holdsIn(h, cm) {
				return cm, nil
			}
			fresh = true
		}
		return c.get(ctx, target)
	}
}

// holdsIn reports whether h holds the lock in its version cm. It decodes
// through the client, which keeps the record for the release's decision
// on the same version.
func (c *Client) holdsIn(h *Held, cm *corev1.ConfigMap) bool {
	if cm == nil {
		return false
	}
	rec, err := c.decode(cm, h.Target)
	return err == nil && !rec.IsFree() && rec.Holder.ClaimID == h.ClaimID && rec.Holder.Identity == h.Holder.Identity
}

// release gives up target's lock for id, deciding on the versions read
// brings (nil: fresh reads).
func (c *Client) release(ctx context.Context, target string, id record.Identity, o ReleaseOptions, read reader) (*Released, error) {
	var res *Released
	err := c.update(ctx, "release", target, read, func(cm *corev1.ConfigMap) (change, error) {
		var (
			ch  change
			err error
		)
		res, ch, err = c.releaseChange(target, id, o, cm)
		return ch, err
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// releaseChange decides a release on the lock cm (nil: none) with
// decideRelease, and returns the change that carries it out: an
// unreadable lock is deleted when o.Force, and the stored hook logs and
// records the release's Events.
func (c *Client) releaseChange(target string, id record.Identity, o ReleaseOptions, cm *corev1.ConfigMap) (*Released, change, error) {
	if cm == nil {
		return &Released{}, change{}, nil
	}
	log := c.log.With("lock", c.Describe(target))
	rec, err := c.decode(cm, target)
	var (
		invalid *record.InvalidError
		version *record.VersionError
	)
	switch {
	case (errors.As(err, &invalid) || errors.As(err, &version)) && o.Force:
		res := &Released{Forced: true, Invalid: err}
		return res, change{remove: true, stored: func(ctx context.Context, _ *corev1.ConfigMap) {
			log.Warn("deleted a lock this lockctl cannot read", "err", err)
			o.eventsTurn()
			c.event(ctx, cm, true, reasonForceReleased, fmt.Sprintf("unreadable lock deleted with --force by %s: %v", o.by(id), err))
		}}, nil
	case err != nil:
		return nil, change{}, err
	}
	res, write, err := decideRelease(target, rec, cm.ResourceVersion, id, o, c.freezeWindows(), c.clk.Now())
	if err != nil || !write {
		if err != nil {
			setNamespace(err, c.namespace)
		}
		return res, change{}, err
	}
	if res.LeftQueue {
		return res, change{Decision: record.Decision{Record: rec}}, nil
	}
	return res, change{Decision: record.Decision{Record: rec}, stored: func(ctx context.Context, written *corev1.ConfigMap) {
		switch {
		case res.HandedTo != nil:
			log.Debug("lock handed over", "holder", res.HandedTo.Identity.String())
		case rec.Freeze != nil:
			log.Debug("lock released; it stays frozen", "holder", res.Previous.Identity.String())
		default:
			log.Debug("lock released", "holder", res.Previous.Identity.String())
		}
		o.eventsTurn()
		c.releaseEvents(ctx, written, res, o.by(id))
	}}, nil
}

// setNamespace names the lock namespace in the errors of decideRelease.
func setNamespace(err error, ns string) {
	var (
		tok *TokenError
		nh  *NotHolderError
	)
	switch {
	case errors.As(err, &tok):
		tok.Namespace = ns
	case errors.As(err, &nh):
		nh.Namespace = ns
	}
}

// by names who releases: o.By, else id.
func (o ReleaseOptions) by(id record.Identity) string {
	if o.By != "" {
		return o.By
	}
	if id == (record.Identity{}) {
		return "an unnamed user"
	}
	return id.String()
}

// holderToken returns the fencing token of rec's holder, read from the
// lock's version rv: the recorded token, or the lock's resourceVersion while the holder's
// take-over (or the hand-over to it) is still the last write. A holder
// handed the lock by a lockctl that did not yet make the hand-over the
// take-over has no token until it confirms: "".
func holderToken(rec *record.Record, rv string) string {
	switch h := rec.Holder; {
	case h.Token != "":
		return h.Token
	case h.TokenPending:
		return rv
	}
	return ""
}

// leave removes session from the queue of target's lock, if it is there,
// so a waiter that gives up leaves the lock as it found it.
func (c *Client) leave(ctx context.Context, target, session string) error {
	return c.update(ctx, "leave the queue of", target, nil, func(cm *corev1.ConfigMap) (change, error) {
		if cm == nil {
			return change{}, nil
		}
		rec, err := c.decode(cm, target)
		if err != nil || !record.LeaveQueue(rec, session, c.clk.Now()) {
			return change{}, err
		}
		return change{Decision: record.Decision{Record: rec}}, nil
	})
}

// The rules of the verbs but acquire (whose rule is Decide, decide.go):
// each a pure function of the record read that decides what the write
// changes, table-tested in rules_test.go.

// decideLeave is the rule of the end of a caller that re-entered the hold
// of rec at now: the hold stays as it is (holder, token, expiry, queue),
// and the ledger, kept by the holder, changes only when the caller's ledger
// (o.ledger) removes the caller's own mark (o.ledgerMark) from it
// (Ledger.Release), as releaseLedger lets a releasing holder's ledger do.
// It reports whether rec changed.
func decideLeave(rec *record.Record, o ReleaseOptions, now time.Time) bool {
	if o.ledger == nil || o.ledgerMark == "" || !rec.Holder.LedgerKept || rec.Ledger == nil {
		return false
	}
	next, marked, err := o.ledger.Release(rec.Ledger, o.ledgerMark)
	if err != nil || !marked {
		return false
	}
	rec.Ledger = next
	rec.Updated = record.Later(now, rec.Updated)
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
func decideRelease(target string, rec *record.Record, rv string, id record.Identity, o ReleaseOptions, ws []record.FreezeWindow, now time.Time) (*Released, bool, error) {
	if rec.IsFree() && rec.PositionOf(id, o.Job) == 0 {
		return &Released{}, false, nil
	}
	holder := rec.Holder
	res := &Released{Previous: &holder}
	if rec.Unheld() {
		// Frozen with no holder: nothing to release, but a waiter leaves.
		res.Previous = nil
	}
	switch {
	case o.Token != "" && !rec.Unheld():
		if tok := holderToken(rec, rv); tok != o.Token {
			return nil, false, &TokenError{Target: target, Token: o.Token, Holder: holder, HolderToken: tok}
		}
	case !id.Names(holder.Identity) || !record.OwnJob(holder.CIJob, o.Job) || rec.Unheld():
		if !o.Force {
			if i := rec.PositionOf(id, o.Job); i > 0 {
				rec.Waiters = append(rec.Waiters[:i-1:i-1], rec.Waiters[i:]...)
				rec.Updated = record.Later(now, rec.Updated)
				return &Released{LeftQueue: true}, true, nil
			}
			if rec.Unheld() {
				return res, false, nil
			}
			err := &NotHolderError{Target: target, Holder: holder}
			if id.Names(holder.Identity) {
				err.Caller = o.Job
			}
			return nil, false, err
		}
		if rec.Unheld() {
			return res, false, nil
		}
		res.Forced = true
	}
	releaseLedger(rec, o)
	ts := record.Later(now, rec.Updated)
	rec.Updated = ts
	rec.Thaw(now)
	if ws != nil {
		rec.DropLapsedWindow(ws, now)
		rec.ApplyWindows(ws, now)
	}
	rec.DropExpired(now)
	rec.OrderWaiters(now)
	// While the lock is frozen only a waiter that ignores the freeze takes
	// it; the others wait for the freeze to end.
	next := rec.FirstEligible(now)
	how, by := record.EndReleased, ""
	if res.Forced {
		how, by = record.EndBroken, o.by(id)
	}
	switch {
	case next == nil && rec.Freeze != nil:
		rec.Ended(holder, ts, how, by, "")
		rec.Vacate(ts)
	case next == nil:
		// NOTE: kept, free, rather than deleted, so its history outlives
		// the hold; every lockctl of this major version takes it over.
		rec.Ended(holder, ts, how, by, "")
		rec.Free(ts)
	default:
		if !res.Forced {
			how, by = record.EndHandedOver, next.Identity.String()
		}
		rec.Ended(holder, ts, how, by, "")
		rec.HandOver(*next, ts, now)
		rec.Overridden(ts, now)
		handed := rec.Holder
		res.HandedTo = &handed
	}
	return res, true, nil
}
