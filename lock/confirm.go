package lock

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
)

// A waiter the lock is handed over to holds it as soon as it sees the
// hand-over write (its watch event, or a read): that write made it the
// holder, and its resourceVersion is the hold's fencing token. The record
// still names it as handed over (Claim.HandedOver), so everyone else judges
// the hold by the waiter's expiry until the new holder confirms it in the
// background; the confirmation is the hold's first renewal
// (docs/adr/0074-hold-on-hand-over.md), written once the hold has run for
// Options.ConfirmAfter: a hold released before then is never confirmed,
// and its release writes on the hand-over's version
// (docs/adr/0079-confirm-after-a-second.md).

// defaultConfirmAfter is how long a hold that began with a hand-over runs
// before its confirmation is written, unless Options.ConfirmAfter says
// otherwise: a short hold, released within it, costs the lock no write and
// the other waiters no watch event.
const defaultConfirmAfter = time.Second

// Pauses between attempts to confirm a hand-over after transient API
// errors: the first, and the longest they grow to by doubling. The
// waiter's expiry, tens of seconds away, bounds them all.
const (
	firstConfirmRetry = 100 * time.Millisecond
	maxConfirmRetry   = 2 * time.Second
)

// confirmMargin is kept between the moment a hold not confirmed in time is
// reported lost and the waiter's expiry it stood on (less the clock's
// uncertainty, counted apart): for the timer to fire, the request out to
// be cancelled and the caller to hear of it, on a loaded machine.
const confirmMargin = time.Second

// errUnconfirmed means a hold that began with a hand-over was not
// confirmed before the waiter's expiry it stood on could pass: it is lost.
var errUnconfirmed = errors.New("hand-over not confirmed in time")

// unconfirmedError is a hand-over its new holder could not confirm in time
// (Held.Confirm): the API server did not answer, or kept failing, until
// Request.StopBefore and a second before the waiter's expiry. The hold is
// lost; what runs under it must stop. It matches errUnconfirmed.
type unconfirmedError struct {
	Target string
	// Expires is the waiter's expiry the hand-over stood on, on the API
	// server's clock.
	Expires time.Time
	// Last is the last attempt's error; nil when none ended.
	Last error
}

func (e *unconfirmedError) Error() string {
	s := fmt.Sprintf("lock %q was handed over but could not be confirmed before %s", e.Target, e.Expires.UTC().Format(time.RFC3339))
	if e.Last != nil {
		return s + ": " + e.Last.Error()
	}
	return s + ": the API server did not answer"
}

// Is makes an *unconfirmedError match errUnconfirmed.
func (e *unconfirmedError) Is(target error) bool { return target == errUnconfirmed }

// errConfirmStopped is the cause of a confirmation its hold stopped.
var errConfirmStopped = errors.New("confirmation stopped")

// errConfirmDeadline is the cause of a confirmation out of time.
var errConfirmDeadline = errors.New("confirmation out of time")

// errConfirmSkipped is the cause of a confirmation its hold's release
// made needless before it was due.
var errConfirmSkipped = errors.New("released before the confirmation was due")

// The states of a confirmation: waiting until it is due (the zero value),
// writing, or skipped because the hold was released before it was due.
const (
	confirmWaiting int32 = iota
	confirmWriting
	confirmSkipped
)

// confirmation is the background confirmation of a hold that began with a
// hand-over.
type confirmation struct {
	// deadline is when, on the client's clock, the hold is lost unless
	// confirmed; bounded is false for a holder in a pod, whose pod, not
	// the expiry, keeps the hold.
	deadline time.Time
	bounded  bool
	expires  time.Time

	cancel context.CancelCauseFunc
	done   chan struct{}
	// hurry is closed when someone waits for the confirmation (Confirm):
	// it is written at once.
	hurry     chan struct{}
	hurryOnce sync.Once
	// state is confirmWaiting until the confirmation is due, then
	// confirmWriting, or confirmSkipped once a release took its place.
	state atomic.Int32
	// holder and err are the result, set before done is closed.
	holder record.Claim
	err    error
}

// hurryUp makes the confirmation due now.
func (cf *confirmation) hurryUp() { cf.hurryOnce.Do(func() { close(cf.hurry) }) }

// closed is a channel closed from the start.
var closed = func() chan struct{} { c := make(chan struct{}); close(c); return c }()

// handedToMe returns the hold of a waiter that w.st.cm names as the holder
// the lock was handed over to, unconfirmed, or nil to decide as usual. A
// hand-over whose waiter expiry leaves less than w.req.StopBefore, a
// second (confirmMargin) and a sixth of the waiter TTL is not held early:
// the waiter confirms it first (Decide), as it had to before.
func (w *waiter) handedToMe() *Held {
	c, cm := w.c, w.st.cm
	if cm == nil {
		return nil
	}
	rec, err := c.decode(cm, w.req.Target)
	if err != nil || rec.IsFree() {
		return nil
	}
	h := rec.Holder
	if !h.HandedOver || h.ClaimID != w.me.ClaimID || h.Identity != w.me.Identity {
		return nil
	}
	if l := w.req.Ledger; l != nil {
		// NOTE: a mark the ledger leaves (lockctl run's job namespace)
		// must be written by the write that takes the lock (takeLedger)
		// before the contender looks or submits: the confirmation comes
		// first.
		if _, _, _, marked, err := l.Take(rec.Ledger, h.LedgerKept, true, h.ClaimID); err != nil || marked {
			return nil
		}
	}
	cf := &confirmation{bounded: h.Pod == nil, done: make(chan struct{}), hurry: make(chan struct{})}
	if cf.bounded {
		if h.Expires == nil {
			return nil
		}
		cf.expires = h.Expires.Time
		cf.deadline = h.Expires.Add(-c.clockSlack() - w.req.StopBefore - confirmMargin)
		if cf.deadline.Sub(c.clk.Now()) < c.waiterTTL()/6 {
			return nil
		}
	}
	// The hand-over write's version: pending in this version, or recorded
	// since. A lockctl that did not make the hand-over the take-over left
	// neither: the version that shows the hand-over stands in for it, and
	// the confirmation records it.
	token := h.Token
	if token == "" {
		token = cm.ResourceVersion
	}
	// A contender with a ledger holds early only when the ledger needs no
	// mark, so needs no look (above); anyone else looks.
	vouched := w.req.Ledger != nil
	if w.req.Callbacks.OnTaking != nil && !vouched {
		w.req.Callbacks.OnTaking()
	}
	held := &Held{
		Context:    c.opts.Context,
		Target:     w.req.Target,
		Namespace:  c.namespace,
		Name:       cm.Name,
		UID:        cm.UID,
		ClaimID:    h.ClaimID,
		Holder:     h,
		Token:      token,
		Vouched:    vouched,
		last:       &lastSeen{cm: cm},
		events:     cf.done,
		confirming: cf,
		ledger:     w.req.Ledger,
	}
	if f := rec.Freeze; f != nil && h.IgnoredFreeze != "" {
		held.IgnoredFreeze = f
	}
	c.log.Debug("lock handed over; confirming in the background", "lock", c.Describe(w.req.Target), "holder", h.Identity.String())
	return w.took(held)
}

// confirmInBackground starts the confirmation of h, a hold that began with
// a hand-over (handedToMe), on a context of its own: it outlives the wait's.
func (c *Client) confirmInBackground(ctx context.Context, h *Held) {
	cf := h.confirming
	cctx, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	cf.cancel = cancel
	if cf.bounded {
		// NOTE: the deadline runs on the clock's timers, which measure
		// local time, from the moment the hold began; a request still
		// out then is cancelled with it.
		t := c.clk.NewTimer(cf.deadline.Sub(c.clk.Now()))
		go func() {
			defer t.Stop()
			select {
			case <-t.C():
				cancel(errConfirmDeadline)
			case <-cctx.Done():
			}
		}()
	}
	go c.confirm(cctx, h, cf)
}

// confirm writes the confirmation of h's hand-over until it is stored, the
// lock turns out to be someone else's, ctx ends (its deadline, or the hold
// stopped it) or an error that will not pass; it records the result in cf
// and closes cf.done.
func (c *Client) confirm(ctx context.Context, h *Held, cf *confirmation) {
	defer close(cf.done)
	defer cf.cancel(nil)
	log := c.log.With("lock", c.Describe(h.Target), "holder", h.Holder.Identity.String())
	if !c.confirmDue(ctx, cf) {
		if cf.state.Load() == confirmSkipped {
			// NOTE: the Event of the acquisition is recorded all the
			// same, before the release's (which wait for done).
			c.heldEvent(context.WithoutCancel(ctx), h.lastCM(), h.Holder, h.Token)
			log.Debug("released before the hand-over was due to be confirmed")
		}
		cf.err = c.confirmEnded(ctx, h, cf, nil)
		return
	}
	var (
		last  error
		delay time.Duration
	)
	for {
		holder, written, wrote, err := c.confirmOnce(ctx, h)
		switch {
		case err == nil:
			cf.holder = holder
			h.remember(written)
			if wrote {
				c.confirmedEvent(context.WithoutCancel(ctx), written, holder, h.Token)
			}
			log.Debug("hand-over confirmed")
			return
		case errors.Is(err, record.ErrLost):
			cf.err = err
			log.Warn("lock lost before the hand-over was confirmed", "err", err)
			return
		case ctx.Err() != nil:
			cf.err = c.confirmEnded(ctx, h, cf, last)
			return
		case !transient(err):
			cf.err = fmt.Errorf("confirm the hand-over of lock %s: %w", c.Describe(h.Target), err)
			return
		}
		last = err
		delay = min(max(2*delay, firstConfirmRetry), maxConfirmRetry)
		log.Warn(fmt.Sprintf("could not confirm the hand-over; trying again in %s", delay), "err", err)
		t := c.clk.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			cf.err = c.confirmEnded(ctx, h, cf, last)
			return
		case <-t.C():
		}
	}
}

// confirmDue waits until the confirmation cf is due: Options.ConfirmAfter
// after the hold began (at most half the time left until its deadline), or
// at once when someone waits for it (Confirm). It reports whether the
// confirmation is to be written: false when ctx ended first (its deadline,
// or its hold stopped or released it).
func (c *Client) confirmDue(ctx context.Context, cf *confirmation) bool {
	delay := c.opts.ConfirmAfter
	if cf.bounded {
		delay = min(delay, cf.deadline.Sub(c.clk.Now())/2)
	}
	if delay > 0 {
		t := c.clk.NewTimer(delay)
		select {
		case <-t.C():
		case <-cf.hurry:
		case <-ctx.Done():
		}
		t.Stop()
	}
	// NOTE: leaving the wait, the confirmation is no longer the release's
	// to skip, unless the release skipped it first.
	writing := cf.state.CompareAndSwap(confirmWaiting, confirmWriting)
	return writing && ctx.Err() == nil
}

// confirmEnded is the error of a confirmation whose context ended: its
// deadline passed, or its hold stopped it.
func (c *Client) confirmEnded(ctx context.Context, h *Held, cf *confirmation, last error) error {
	if errors.Is(context.Cause(ctx), errConfirmDeadline) {
		err := &unconfirmedError{Target: h.Target, Expires: cf.expires, Last: last}
		c.log.Warn("hold lost: the hand-over could not be confirmed in time", "lock", c.Describe(h.Target), "err", err)
		return err
	}
	return fmt.Errorf("confirm the hand-over of lock %s: %w", c.Describe(h.Target), errConfirmStopped)
}

// confirmOnce writes the confirmation of h's hand-over once (through the
// one write path, deciding again after a lost write), on the newest version
// of the lock h knows of. It returns the holder's claim as stored, the
// version that stores it, and whether this call wrote it (false when an
// earlier attempt, whose answer was lost, did).
func (c *Client) confirmOnce(ctx context.Context, h *Held) (holder record.Claim, written *corev1.ConfigMap, wrote bool, err error) {
	err = c.update(ctx, "confirm the hand-over of", h.Target, c.confirmVersions(h), func(cm *corev1.ConfigMap) (change, error) {
		if cm == nil {
			return change{}, fmt.Errorf("confirm lock %s: %w: it was deleted", c.Describe(h.Target), record.ErrLost)
		}
		rec, err := c.decode(cm, h.Target)
		if err != nil {
			return change{}, err
		}
		write, err := record.DecideConfirm(rec, h.ClaimID, h.Token, h.ledger != nil, c.clk.Now())
		if err != nil {
			return change{}, fmt.Errorf("confirm lock %s: %w", c.Describe(h.Target), err)
		}
		ch := change{stored: func(_ context.Context, out *corev1.ConfigMap) {
			holder, written = rec.Holder, out
		}}
		if write {
			ch.Record, wrote = rec, true
		}
		return ch, nil
	})
	return holder, written, wrote, err
}

// confirmVersions is the reader of a confirmation: the version of the lock
// the hold began in, then, after a lost write, the newer one its watch
// brings, else a fresh read. It never starts a watch.
func (c *Client) confirmVersions(h *Held) reader {
	return func(ctx context.Context, target string, lost *corev1.ConfigMap, _ int) (*corev1.ConfigMap, error) {
		if lost == nil || h.awaitNewer(ctx, c.clk, lost) {
			if cm := h.lastCM(); cm != nil {
				return cm, nil
			}
		}
		return c.get(ctx, target)
	}
}

// ConfirmDone returns a channel closed once the confirmation of a hold
// that began with a hand-over (Holder.HandedOver) has ended, stored or
// not (Confirm says which); for any other hold it is closed already.
func (h *Held) ConfirmDone() <-chan struct{} {
	if h == nil || h.confirming == nil {
		return closed
	}
	return h.confirming.done
}

// Confirm waits, as long as ctx allows, until the hold no longer rests on
// the hand-over it began with, and returns the holder's claim as the
// confirmation stored it (Holder itself for a hold that began otherwise).
// A confirmation not yet due (Options.ConfirmAfter) is written at once.
// Until then the hold lasts until the waiter's expiry in Holder.Expires on
// the API server's clock (for a holder without a pod); Confirm returns an
// error matching errUnconfirmed once it could not be confirmed by
// Request.StopBefore and a second before that expiry, one matching ErrLost when the lock
// turned out to be someone else's, and ctx's error when ctx ends first. A
// process that keeps the lock past its exit (lockctl acquire) calls it
// before it exits.
func (h *Held) Confirm(ctx context.Context) (record.Claim, error) {
	if h == nil || h.confirming == nil {
		return h.holderOrZero(), nil
	}
	h.confirming.hurryUp()
	select {
	case <-h.confirming.done:
		return h.confirming.holder, h.confirming.err
	case <-ctx.Done():
		return record.Claim{}, fmt.Errorf("confirm the hand-over of lock %q: %w", h.Target, ctx.Err())
	}
}

func (h *Held) holderOrZero() record.Claim {
	if h == nil {
		return record.Claim{}
	}
	return h.Holder
}

// settleConfirmation waits, as long as ctx allows, for the confirmation of
// h to end, and stops it when ctx ends first. A confirmation not yet due
// is skipped instead, at once: nothing was written, and the release writes
// on the hand-over's version.
func (h *Held) settleConfirmation(ctx context.Context) {
	if h == nil || h.confirming == nil || h.confirming.cancel == nil {
		return
	}
	if h.confirming.state.CompareAndSwap(confirmWaiting, confirmSkipped) {
		h.confirming.cancel(errConfirmSkipped)
		return
	}
	select {
	case <-h.confirming.done:
	case <-ctx.Done():
		h.confirming.cancel(errConfirmStopped)
		<-h.confirming.done
	}
}
