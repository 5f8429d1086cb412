package lock

import (
	"context"
	"errors"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Released says what Release did.
type Released struct {
	// Previous is the holder the lock was taken from; nil when the lock was
	// not held (or not there).
	Previous *Claim
	// HandedTo is the waiter that holds the lock now; nil when the lock was
	// deleted because nobody waited.
	HandedTo *Claim
	// Forced is true when the lock was someone else's, or invalid, and
	// --force broke it.
	Forced bool
	// LeftQueue is true when the caller did not hold the lock but waited
	// for it, and gave up its place instead.
	LeftQueue bool
	// Invalid is set when a forced release deleted an invalid lock, or one
	// of a record version this lockctl cannot read.
	Invalid error
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
	Job CIJob

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
func (c *Client) Release(ctx context.Context, target string, id Identity, o ReleaseOptions) (*Released, error) {
	for attempt := 0; attempt < 20; attempt++ {
		cm, err := c.get(ctx, target)
		if err != nil {
			return nil, err
		}
		if cm == nil {
			return &Released{}, nil
		}
		res, err := c.releaseOnce(ctx, target, id, o, cm)
		if errors.Is(err, errRetry) {
			continue
		}
		return res, err
	}
	return nil, fmt.Errorf("release lock %s: too many concurrent changes, try again", c.Describe(target))
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
// With Client.KeepWatching the version written on is the newest the watch
// of the lock brought, and a write lost to another (a waiter joining the
// queue) is tried again on the version the watch brings next rather than
// on a fresh read; a hold without a watch starts one, from the version its
// write lost on, at its first lost write. The watch stops when ReleaseHeld
// returns.
func (c *Client) ReleaseHeld(ctx context.Context, h *Held, o ReleaseOptions) (*Released, error) {
	defer h.WaitEvents(ctx)
	defer h.StopWatching()
	o.beforeEvents = func() { h.WaitEvents(ctx) }
	id := h.Holder.Identity
	o.Job = h.Holder.CIJob
	for attempt := 0; attempt < 20 && o.Token == "" && !o.Force; attempt++ {
		cm := h.lastCM()
		if cm == nil {
			break
		}
		rec, err := Decode(cm)
		// NOTE: only a version in which h holds the lock is written on:
		// any other outcome (not the holder, free, unreadable) is decided
		// on a fresh read.
		if err != nil || rec.IsFree() || rec.Holder.Session != h.Session || rec.Holder.Identity != id {
			break
		}
		res, err := c.releaseOnce(ctx, h.Target, id, o, cm)
		if !errors.Is(err, errRetry) {
			return res, err
		}
		if !c.KeepWatching {
			break
		}
		if h.watching == nil {
			h.keep(c.watchFrom(ctx, cm))
		}
		if !h.awaitNewer(ctx, c.Clock, cm) {
			break
		}
	}
	return c.Release(ctx, h.Target, id, o)
}

func (c *Client) releaseOnce(ctx context.Context, target string, id Identity, o ReleaseOptions, cm *corev1.ConfigMap) (*Released, error) {
	log := c.Log.WithField("lock", c.Describe(target))
	rec, err := c.decode(cm, target)
	var (
		invalid *InvalidError
		version *VersionError
	)
	switch {
	case (errors.As(err, &invalid) || errors.As(err, &version)) && o.Force:
		if err := c.delete(ctx, cm); err != nil {
			return nil, err
		}
		log.WithField("err", err).Warn("deleted a lock this lockctl cannot read")
		o.eventsTurn()
		c.event(ctx, cm, true, ReasonForceReleased, fmt.Sprintf("unreadable lock deleted with --force by %s: %v", o.by(id), err))
		return &Released{Forced: true, Invalid: err}, nil
	case err != nil:
		return nil, err
	case rec.IsFree() && rec.positionOf(id, o.Job) == 0:
		return &Released{}, nil
	}
	holder := rec.Holder
	res := &Released{Previous: &holder}
	now := c.Clock.Now()
	if rec.unheld() {
		// Frozen with no holder: nothing to release, but a waiter leaves.
		res.Previous = nil
	}
	switch {
	case o.Token != "" && !rec.unheld():
		if tok := holderToken(rec, cm); tok != o.Token {
			return nil, &TokenError{Target: target, Namespace: c.namespace, Token: o.Token, Holder: holder, HolderToken: tok}
		}
	case !id.names(holder.Identity) || !ownJob(holder.CIJob, o.Job) || rec.unheld():
		if !o.Force {
			if i := rec.positionOf(id, o.Job); i > 0 {
				rec.Waiters = append(rec.Waiters[:i-1:i-1], rec.Waiters[i:]...)
				rec.Updated = later(now, rec.Updated)
				if _, err := c.write(ctx, target, cm, Decision{Record: rec}); err != nil {
					return nil, err
				}
				return &Released{LeftQueue: true}, nil
			}
			if rec.unheld() {
				return res, nil
			}
			err := &NotHolderError{Target: target, Namespace: c.namespace, Holder: holder}
			if id.names(holder.Identity) {
				err.Caller = o.Job
			}
			return nil, err
		}
		if rec.unheld() {
			return res, nil
		}
		res.Forced = true
	}
	ts := later(now, rec.Updated)
	rec.Updated = ts
	rec.thaw(now)
	if c.FreezeWindows != nil {
		rec.dropLapsedWindow(c.FreezeWindows, now)
		rec.applyWindows(c.FreezeWindows, now)
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
	if next == nil && rec.Freeze != nil {
		rec.ended(holder, ts, how, by, "")
		rec.vacate(ts)
		written, err := c.write(ctx, target, cm, Decision{Record: rec})
		if err != nil {
			return nil, err
		}
		log.WithField("holder", holder.Identity.String()).Debug("lock released; it stays frozen")
		o.eventsTurn()
		c.releaseEvents(ctx, written, res, o.by(id))
		return res, nil
	}
	if next == nil {
		// NOTE: kept, free, rather than deleted, so its history outlives
		// the hold; every lockctl of this major version takes it over.
		rec.ended(holder, ts, how, by, "")
		rec.free(ts)
		written, err := c.write(ctx, target, cm, Decision{Record: rec})
		if err != nil {
			return nil, err
		}
		log.WithField("holder", holder.Identity.String()).Debug("lock released")
		o.eventsTurn()
		c.releaseEvents(ctx, written, res, o.by(id))
		return res, nil
	}
	if !res.Forced {
		how, by = EndHandedOver, next.Identity.String()
	}
	rec.ended(holder, ts, how, by, "")
	rec.handOver(*next, ts, now)
	rec.overridden(ts, now)
	written, err := c.write(ctx, target, cm, Decision{Record: rec})
	if err != nil {
		return nil, err
	}
	handed := rec.Holder
	res.HandedTo = &handed
	log.WithField("holder", handed.Identity.String()).Debug("lock handed over")
	o.eventsTurn()
	c.releaseEvents(ctx, written, res, o.by(id))
	return res, nil
}

// by names who releases: o.By, else id.
func (o ReleaseOptions) by(id Identity) string {
	if o.By != "" {
		return o.By
	}
	if id == (Identity{}) {
		return "an unnamed user"
	}
	return id.String()
}

// delete removes cm only if it is still the version just read.
func (c *Client) delete(ctx context.Context, cm *corev1.ConfigMap) error {
	uid, rv := cm.UID, cm.ResourceVersion
	err := c.cms.ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
	})
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return errRetry
	}
	return fmt.Errorf("delete lock %s/%s: %w", cm.Namespace, cm.Name, err)
}

// positionOf returns the 1-based place of the first waiter with identity
// id of the caller's job (see ownJob), 0 if none.
func (r *Record) positionOf(id Identity, job CIJob) int {
	for i, w := range r.Waiters {
		if id.names(w.Identity) && ownJob(w.CIJob, job) {
			return i + 1
		}
	}
	return 0
}

// ownJob reports whether a claim of CI job held is the caller's (of job
// caller) to release without a token: either knows no job (the build is
// the unit, as before jobs were known), or it is the same job, in the
// same run or in a later one (a re-run releasing what the failed run
// left).
func ownJob(held, caller CIJob) bool {
	if !held.Known() || !caller.Known() {
		return true
	}
	return held.Job == caller.Job && (held.JobID == caller.JobID || caller.Attempt > held.Attempt)
}

// holderToken returns the fencing token of rec's holder, read from the lock
// cm: the recorded token, or the lock's resourceVersion while the holder's
// take-over is still the last write. A holder handed the lock that has not
// confirmed it yet has no token: "".
func holderToken(rec *Record, cm *corev1.ConfigMap) string {
	switch h := rec.Holder; {
	case h.HandedOver:
		return ""
	case h.Token != "":
		return h.Token
	case h.TokenPending:
		return cm.ResourceVersion
	}
	return ""
}
