package run

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/servertime"
)

// ClockMargin is the part of a hold's TTL kept for the uncertainty of the
// clock its expiry is stamped on: an estimate of the API server's
// (servertime), within half a second and half a round trip after one
// answer and closer after a few, and for the time it takes to reap a
// command after SIGKILL.
const ClockMargin = time.Second

// maxDefaultKillGrace caps the default kill grace of long TTLs.
const maxDefaultKillGrace = 10 * time.Second

// DefaultKillGrace is the kill grace of a hold of ttl when none is given: a
// sixth of it to the 10ms, at most 10s (1s for a TTL of 6s, 5s for 30s).
func DefaultKillGrace(ttl time.Duration) time.Duration {
	return min((ttl / 6).Truncate(10*time.Millisecond), maxDefaultKillGrace)
}

// Timings are when a hold renews its locks and when it gives up on them.
// A renewal stamps the expiry TTL ahead on the API server's clock. A lock
// that has not been renewed for RenewDeadline (TTL − KillGrace −
// ClockMargin) is given up: what runs under it gets SIGTERM then, and
// SIGKILL KillGrace later, so that it has ended before the expiry it last
// wrote can pass on the API server's clock and another contender take the
// lock (docs/adr/0050-renew-deadline.md).
type Timings struct {
	// TTL is how long a renewal keeps the lock.
	TTL time.Duration
	// RenewEvery is how often a lock is renewed: a third of TTL.
	RenewEvery time.Duration
	// RetryEvery is how soon a failed renewal is tried again: a quarter of
	// RenewEvery.
	RetryEvery time.Duration
	// RenewDeadline is how long a lock may go without a renewal, counted
	// from the start of the last one that succeeded; each renewal request
	// ends by then at the latest.
	RenewDeadline time.Duration
	// KillGrace is how long a command stopped at the renew deadline has
	// between SIGTERM and SIGKILL.
	KillGrace time.Duration
}

// HoldTimings returns the timings of a hold of ttl whose command gets
// killGrace between SIGTERM and SIGKILL; a zero killGrace means
// DefaultKillGrace(ttl). A TTL too short for its grace (a renew deadline
// that comes before the first renewal) is a *TimingsError.
func HoldTimings(ttl, killGrace time.Duration) (Timings, error) {
	if killGrace == 0 {
		killGrace = DefaultKillGrace(ttl)
	}
	t := Timings{
		TTL: ttl, RenewEvery: ttl / 3, KillGrace: killGrace,
		RenewDeadline: ttl - killGrace - ClockMargin,
	}
	t.RetryEvery = t.RenewEvery / 4
	if ttl <= 0 || killGrace < 0 || t.RenewDeadline <= t.RenewEvery {
		return Timings{}, &TimingsError{TTL: ttl, KillGrace: killGrace}
	}
	return t, nil
}

// TimingsError is a TTL too short for its kill grace: the command would
// have to be stopped before the lock is first renewed.
type TimingsError struct {
	TTL, KillGrace time.Duration
}

func (e *TimingsError) Error() string {
	if e.TTL <= 0 {
		return fmt.Sprintf("the TTL must be positive, got %s", e.TTL)
	}
	if e.KillGrace < 0 {
		return fmt.Sprintf("the kill grace must not be negative, got %s", e.KillGrace)
	}
	// ttl − grace − margin > ttl/3  ⇔  ttl > 3/2 (grace + margin)
	least := (3*(e.KillGrace+ClockMargin)/2 + 100*time.Millisecond).Truncate(100 * time.Millisecond)
	return fmt.Sprintf("a TTL of %s is too short for a kill grace of %s: the command is stopped %s (kill grace) + %s (clock margin) "+
		"before the lock can expire, which leaves no time to renew it (first at a third of the TTL); give a TTL of at least %s or a shorter kill grace",
		e.TTL, e.KillGrace, e.KillGrace, ClockMargin, least)
}

// ErrNotRenewed means a lock was not renewed within its renew deadline, so
// what ran under it was stopped before its hold could expire.
var ErrNotRenewed = errors.New("lock not renewed in time")

// NotRenewedError is a lock that could not be renewed within the renew
// deadline: the API server did not answer in time (a partition, a silent
// connection) or kept refusing. It matches ErrNotRenewed.
type NotRenewedError struct {
	Target string
	// Deadline is the renew deadline, TTL the lock's.
	Deadline, TTL time.Duration
	// Last is the error of the last renewal that ended; nil when none
	// ended (the requests went unanswered).
	Last error
}

func (e *NotRenewedError) Error() string {
	s := fmt.Sprintf("lock %q could not be renewed for %s (TTL %s)", e.Target, e.Deadline, e.TTL)
	if e.Last != nil {
		s += ": " + e.Last.Error()
	} else {
		s += ": the API server did not answer"
	}
	return s
}

// Is makes a *NotRenewedError match ErrNotRenewed. The last renewal's error
// is in the message only: a timeout there is not the run's.
func (e *NotRenewedError) Is(target error) bool { return target == ErrNotRenewed }

// HoldOptions configure a Hold beyond its locks.
type HoldOptions struct {
	// Observer is told about renewals that fail; nil means nobody is.
	Observer Observer
	// KillGrace is how long a command stopped because the hold could not
	// be renewed gets between SIGTERM and SIGKILL (Timings.KillGrace); 0
	// means DefaultKillGrace of the shortest TTL.
	KillGrace time.Duration
}

// Hold is one or several locks held while something runs: taken with a
// short expiry (lock.Request.TTL) and each renewed by a goroutine every
// third of it, so that a process that dies frees them within one TTL.
// Losing any of them is losing the hold; so is not renewing any of them for
// its renew deadline (Timings). It is safe for concurrent use.
type Hold struct {
	// local measures durations: the base of a clock following the API
	// server's, whose estimate an answer may move.
	local clock.Clock
	// held are the locks, in the global order lock.AcquireAcross took
	// them in, and clients the client of each (of its cluster).
	held    []*lock.Held
	clients []*lock.Client
	ttl     time.Duration
	timings Timings
	obs     Observer

	cancel context.CancelFunc
	wg     sync.WaitGroup
	// lost, cancelled and notRenewed each receive once: the first lost
	// lock, the first request to stop, the first lock past its renew
	// deadline.
	lost, cancelled, notRenewed chan error
	cancelOnce, notRenewedOnce  sync.Once

	mu         sync.Mutex
	lostTarget string
	isLost     map[*lock.Held]bool
	pastDue    bool
	released   bool
}

// Acquire waits for the lock as locks.Acquire does, for as long as ctx
// allows, then renews it every third of req.TTL until Release. req.TTL must
// be positive. Renewals that fail for a reason other than losing the lock
// are reported to o.Observer and tried again; one that has not succeeded
// for the renew deadline is reported on NotRenewed.
func Acquire(ctx context.Context, locks *lock.Client, req lock.Request, o HoldOptions) (*Hold, error) {
	return AcquireAll(ctx, locks, []lock.Request{req}, o)
}

// AcquireAll takes several locks, all or nothing, as
// locks.AcquireAll does (one after the other in the global order of their
// targets, so that contenders for overlapping sets never deadlock), and
// renews each as Acquire does until Release. One request, one lock: the
// same as Acquire. The timings are those of the shortest TTL
// (HoldTimings); a TTL too short for the kill grace is a *TimingsError,
// before anything is written.
func AcquireAll(ctx context.Context, locks *lock.Client, reqs []lock.Request, o HoldOptions) (*Hold, error) {
	parts := make([]lock.Part, len(reqs))
	for i, req := range reqs {
		parts[i] = lock.Part{Locks: locks, Request: req}
	}
	return AcquireAcross(ctx, parts, o)
}

// AcquireAcross is AcquireAll over locks in several clusters, each part
// with the client of its cluster (lock.AcquireAcross: all or nothing, in
// one global order, context then target). Each lock is renewed by its
// own client on the clock of its own API server; the renew deadline
// applies to each, so a cluster that goes silent stops what runs under
// the hold before its lock can expire there (NotRenewed), and a lock
// lost in any cluster is the hold's loss.
func AcquireAcross(ctx context.Context, parts []lock.Part, o HoldOptions) (*Hold, error) {
	if len(parts) == 0 {
		return nil, errors.New("hold: no lock to take")
	}
	ttl := parts[0].Request.TTL
	for _, p := range parts {
		if p.Request.TTL <= 0 {
			return nil, fmt.Errorf("hold lock %q: the TTL must be positive, got %s", lock.Where(p.Locks.Context(), p.Request.Target), p.Request.TTL)
		}
		ttl = min(ttl, p.Request.TTL)
	}
	timings, err := HoldTimings(ttl, o.KillGrace)
	if err != nil {
		return nil, err
	}
	// NOTE: a lock handed over is held before it is confirmed, on the
	// waiter's expiry: the command must be able to stop before it.
	parts = slices.Clone(parts)
	for i := range parts {
		parts[i].Request.StopBefore = timings.KillGrace + ClockMargin
	}
	held, err := lock.AcquireAcross(ctx, parts)
	if err != nil {
		return nil, err
	}
	clients := make([]*lock.Client, len(held))
	for i, l := range held {
		for _, p := range parts {
			if p.Locks.Context() == l.Context && p.Request.Target == l.Target {
				clients[i] = p.Locks
			}
		}
	}
	renewCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	h := &Hold{
		local: localClock(clients[0].Clock()), held: held, clients: clients, ttl: ttl, timings: timings, obs: observerOrNop(o.Observer),
		cancel: stop, lost: make(chan error, 1), cancelled: make(chan error, 1), notRenewed: make(chan error, 1),
		isLost: map[*lock.Held]bool{},
	}
	for i, l := range held {
		renewed, bounded := h.stampedAt(clients[i], l.Holder)
		h.wg.Go(func() { h.renew(renewCtx, clients[i], l, renewed, bounded) })
	}
	return h, nil
}

// localClock is the clock durations are measured on: the base of a clock
// that follows the API server's, else c itself.
func localClock(c clock.WithTicker) clock.Clock {
	if sc, ok := c.(*servertime.Clock); ok {
		return sc.WithTicker
	}
	return c
}

// stampedAt returns when, on h.local, the expiry of the holder's claim
// that Acquire (or the confirmation of a hand-over) found or wrote was
// stamped, as if by a renewal of this hold (its expiry less h.ttl, whatever
// TTL the holder asked for: a hold re-entered may have another), counting
// the clock's uncertainty against the holder, and never later than now;
// false when it has no expiry (a holder pod keeps it) and so no renew
// deadline. The renew deadline counted from it falls KillGrace +
// ClockMargin before that expiry, or earlier; a hand-over not yet
// confirmed stands on the waiter's expiry, and so its deadline falls that
// much before the waiter's expiry.
func (h *Hold) stampedAt(locks *lock.Client, holder record.Claim) (time.Time, bool) {
	now := h.local.Now()
	exp := holder.Expires
	if holder.Pod != nil || exp == nil {
		return now, false
	}
	// NOTE: not the holder's own TTL: a re-entered hold taken with a
	// longer one (acquire --ttl 1h) would put the deadline in the past,
	// one taken with a shorter one past its expiry.
	stamp := exp.Add(-h.ttl)
	at := now.Add(stamp.Sub(locks.Clock().Now())).Add(-locks.ClockUncertainty())
	if at.After(now) {
		at = now
	}
	return at, true
}

// FirstLock returns the first lock Acquire took (the only one of Acquire).
func (h *Hold) FirstLock() *lock.Held { return h.held[0] }

// Locks returns every lock held, in the global order they were taken in.
func (h *Hold) Locks() []*lock.Held { return h.held }

// Target returns the namespace whose lock is held: the first of several.
func (h *Hold) Target() string { return h.held[0].Target }

// Token is the fencing token of the hold, for what runs under it
// (TokenEnv): the first lock's, or, in a hold across clusters, the
// composite token of every cluster's (lock.Tokens), whose part for one
// cluster lockctl stamp picks.
func (h *Hold) Token() string {
	if h.held[0].Context != "" {
		return lock.TokensOf(h.held).String()
	}
	return h.held[0].Token
}

// TTL returns how long the locks outlive the process once renewals stop.
func (h *Hold) TTL() time.Duration { return h.ttl }

// Timings returns when the hold renews and gives up.
func (h *Hold) Timings() Timings { return h.timings }

// Describe identifies the first lock for messages: "NAMESPACE/NAME".
func (h *Hold) Describe() string { return h.clients[0].Describe(h.held[0].Target) }

// Ref names the hold for the jobs a run submits (AnnotationHoldRef): the
// hold of the first lock. The run holds all its locks or is stopping, so one
// of them tells whether it lives.
func (h *Hold) Ref() HoldRef {
	return HoldRef{LockNamespace: h.clients[0].Namespace(), Target: h.held[0].Target, ClaimID: h.held[0].ClaimID}
}

// Lost receives, once, the error of the renewal that found one of the
// locks taken by someone else (it wraps lock.ErrLost). That lock's
// renewals stop then; LostTarget names it.
func (h *Hold) Lost() <-chan error { return h.lost }

// LostTarget returns the namespace of the lock reported on Lost.
func (h *Hold) LostTarget() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.lostTarget
}

// Cancelled receives, once, the *lock.CancelRequestedError of the renewal
// that found a newer build of the holder's branch asking it to stop
// (run --cancel-in-progress). Renewals go on, so the locks stay held
// while the run stops; it then releases them.
func (h *Hold) Cancelled() <-chan error { return h.cancelled }

// NotRenewed receives, once, a *NotRenewedError when one of the locks has
// gone its renew deadline (Timings.RenewDeadline) without a renewal: what
// runs under the hold must stop now to have ended before the lock can
// expire. Renewals go on meanwhile; one that succeeds keeps the lock, but
// the hold stays given up.
func (h *Hold) NotRenewed() <-chan error { return h.notRenewed }

// renew pushes l's expiry every third of the TTL until ctx ends or the
// lock turns out to be someone else's. renewed is when the expiry l holds
// was stamped; bounded says l has an expiry, and so a renew deadline.
func (h *Hold) renew(ctx context.Context, locks *lock.Client, l *lock.Held, renewed time.Time, bounded bool) {
	t := h.timings
	var (
		cancelled *lock.CancelRequestedError
		last      error
		given     bool // the renew deadline passed and was reported
	)
	if l.Holder.HandedOver {
		var ok bool
		if renewed, bounded, ok, last = h.awaitConfirmed(ctx, locks, l, renewed, bounded); !ok {
			return
		}
	}
	next := renewed.Add(t.RenewEvery)
	for {
		now := h.local.Now()
		deadline := renewed.Add(t.RenewDeadline)
		watching := bounded && !given
		if watching && !now.Before(deadline) {
			h.giveUp(l.Where(), last)
			given, watching = true, false
		}
		if wait := next.Sub(now); wait > 0 {
			if watching {
				wait = min(wait, deadline.Sub(now))
			}
			timer := h.local.NewTimer(wait)
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C():
			}
			continue
		}
		// NOTE: every renewal has a timeout of its own, and none outlives
		// the renew deadline: a request to a silent API server must not
		// keep the deadline from being noticed.
		timeout := t.RenewEvery
		if watching {
			timeout = min(timeout, deadline.Sub(now))
		}
		actx, cancel := context.WithTimeout(ctx, timeout)
		err := locks.Renew(actx, l, h.ttl)
		cancel()
		switch {
		case errors.Is(err, record.ErrLost):
			h.lose(l, err)
			return
		case err == nil || errors.As(err, &cancelled):
			renewed, next, last = now, now.Add(t.RenewEvery), nil
			if cancelled != nil {
				h.cancelOnce.Do(func() { h.cancelled <- cancelled })
			}
		case ctx.Err() != nil:
			return
		default:
			last = err
			next = h.local.Now().Add(t.RetryEvery)
			h.obs.RenewFailed(l.Where(), t.RetryEvery, err)
		}
	}
}

// awaitConfirmed waits for the confirmation of l, a lock handed over to
// the hold and held before it was confirmed (lock.Held.Confirm): the
// confirmation is its first renewal, due by the renew deadline counted
// from the waiter's expiry the hand-over stands on (renewed, bounded). It
// returns when the expiry l holds next was stamped and whether it has one,
// false when the lock was lost or ctx ended, and the confirmation's error
// when it failed. A confirmation that fails or is late leaves the renewals
// to go on, past the renew deadline: the loop reports it.
func (h *Hold) awaitConfirmed(ctx context.Context, locks *lock.Client, l *lock.Held, renewed time.Time, bounded bool) (time.Time, bool, bool, error) {
	var late <-chan time.Time
	if bounded {
		timer := h.local.NewTimer(renewed.Add(h.timings.RenewDeadline).Sub(h.local.Now()))
		defer timer.Stop()
		late = timer.C()
	}
	select {
	case <-ctx.Done():
		return renewed, bounded, false, nil
	case <-late:
		return renewed, bounded, true, nil
	case <-l.ConfirmDone():
	}
	holder, err := l.Confirm(ctx)
	switch {
	case err == nil:
		at, b := h.stampedAt(locks, holder)
		return at, b, true, nil
	case errors.Is(err, record.ErrLost):
		h.lose(l, err)
		return renewed, bounded, false, err
	case ctx.Err() != nil:
		return renewed, bounded, false, err
	}
	return renewed, bounded, true, err
}

// lose reports, once for the hold, that the lock l turned out to be
// someone else's (err wraps lock.ErrLost).
func (h *Hold) lose(l *lock.Held, err error) {
	h.mu.Lock()
	h.isLost[l] = true
	first := h.lostTarget == ""
	if first {
		h.lostTarget = l.Where()
	}
	h.mu.Unlock()
	if first {
		h.lost <- err
	}
}

// giveUp reports, once for the hold, that target's lock went its renew
// deadline without a renewal; last is the last renewal's error.
func (h *Hold) giveUp(target string, last error) {
	h.notRenewedOnce.Do(func() {
		h.mu.Lock()
		h.pastDue = true
		h.mu.Unlock()
		h.notRenewed <- &NotRenewedError{Target: target, Deadline: h.timings.RenewDeadline, TTL: h.ttl, Last: last}
	})
}

// Release stops the renewals and gives the locks up, last taken first,
// once, telling the observer who holds each next. A lost lock is left
// alone: it is someone else's. So is a lock the hold re-entered
// (lock.Held.Reentered): ReleaseHeld leaves it held as it was found.
// Calls after the first do nothing. A hold given up at its renew deadline
// is released for at most the time left until its expiry (KillGrace +
// ClockMargin): after that it is no longer the hold's to release, and the
// API server may still be unreachable.
func (h *Hold) Release(ctx context.Context) error {
	return h.ReleaseWith(ctx, lock.ReleaseOptions{})
}

// ReleaseWith is Release, giving each lock up with o (lock.Client.ReleaseHeld).
func (h *Hold) ReleaseWith(ctx context.Context, o lock.ReleaseOptions) error {
	h.cancel()
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return nil
	}
	h.released = true
	if h.pastDue {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, h.timings.KillGrace+ClockMargin)
		defer cancel()
	}
	// NOTE: the clusters at once, each last taken first: a cluster that
	// does not answer keeps no other's lock from being released in time.
	var (
		wg   sync.WaitGroup
		emu  sync.Mutex
		errs []error
	)
	for _, c := range distinct(h.clients) {
		wg.Go(func() {
			for i := len(h.held) - 1; i >= 0; i-- {
				l := h.held[i]
				if h.clients[i] != c {
					continue
				}
				if h.isLost[l] {
					// NOTE: a lost lock is not released, but the Events of its
					// acquisition are still to be written before the process
					// exits. ReleaseHeld waits for those of the others after
					// its write.
					l.StopWatching()
					l.WaitEvents(ctx)
					continue
				}
				rel, err := c.ReleaseHeld(ctx, l, o)
				// NOTE: the observer is told one thing at a time.
				emu.Lock()
				switch {
				case err != nil && l.Holder.Pod == nil:
					// NOTE: a hold that cannot be released lapses by
					// itself: say when, so nothing seems held for ever.
					errs = append(errs, fmt.Errorf("release lock %q (it lapses by itself within %s): %w", l.Where(), h.ttl, err))
				case err != nil:
					errs = append(errs, fmt.Errorf("release lock %q: %w", l.Where(), err))
				default:
					h.obs.Released(l.Where(), rel)
				}
				emu.Unlock()
			}
		})
	}
	wg.Wait()
	return errors.Join(errs...)
}

// distinct returns clients without repeats, in their order.
func distinct(clients []*lock.Client) []*lock.Client {
	var out []*lock.Client
	for _, c := range clients {
		if !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out
}

// cleanupTimeout bounds the work after the run's context ended: aborting
// the job and releasing the lock.
const cleanupTimeout = 30 * time.Second

// CleanupContext is the context of the work after ctx ended: not cancelled
// with it, but bounded (30s).
func CleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}
