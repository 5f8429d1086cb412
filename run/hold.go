package run

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockctl/lockctl/lock"
)

// Hold is one or several locks held while something runs: taken with a
// short expiry (lock.Request.TTL) and each renewed by a goroutine every
// third of it, so that a process that dies frees them within one TTL.
// Losing any of them is losing the hold. It is safe for concurrent use.
type Hold struct {
	locks *lock.Client
	// held are the locks, in the global order lock.Client.AcquireAll took
	// them in.
	held []*lock.Held
	ttl  time.Duration
	obs  Observer

	cancel context.CancelFunc
	wg     sync.WaitGroup
	// lost and cancelled each receive once: the first lost lock, the first
	// request to stop.
	lost, cancelled chan error
	cancelOnce      sync.Once

	mu         sync.Mutex
	lostTarget string
	isLost     map[string]bool
	released   bool
}

// Acquire waits for the lock as locks.Acquire does, for as long as ctx
// allows, then renews it every third of req.TTL until Release. req.TTL must
// be positive. Renewals that fail for a reason other than losing the lock
// are reported to obs (nil means nobody is told) and tried again.
func Acquire(ctx context.Context, locks *lock.Client, req lock.Request, obs Observer) (*Hold, error) {
	return AcquireAll(ctx, locks, []lock.Request{req}, obs)
}

// AcquireAll takes several locks, all or nothing, as
// locks.AcquireAll does (one after the other in the global order of their
// targets, so that contenders for overlapping sets never deadlock), and
// renews each as Acquire does until Release. One request, one lock: the
// same as Acquire.
func AcquireAll(ctx context.Context, locks *lock.Client, reqs []lock.Request, obs Observer) (*Hold, error) {
	if len(reqs) == 0 {
		return nil, errors.New("hold: no lock to take")
	}
	ttl := reqs[0].TTL
	for _, req := range reqs {
		if req.TTL <= 0 {
			return nil, fmt.Errorf("hold lock %q: the TTL must be positive, got %s", req.Target, req.TTL)
		}
		ttl = min(ttl, req.TTL)
	}
	held, err := locks.AcquireAll(ctx, reqs)
	if err != nil {
		return nil, err
	}
	renewCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	h := &Hold{
		locks: locks, held: held, ttl: ttl, obs: observerOrNop(obs),
		cancel: stop, lost: make(chan error, 1), cancelled: make(chan error, 1),
		isLost: map[string]bool{},
	}
	for _, l := range held {
		h.wg.Go(func() { h.renew(renewCtx, l) })
	}
	return h, nil
}

// Held returns the first lock Acquire took (the only one of Acquire).
func (h *Hold) Held() *lock.Held { return h.held[0] }

// Helds returns every lock held, in the global order they were taken in.
func (h *Hold) Helds() []*lock.Held { return h.held }

// Target returns the namespace whose lock is held: the first of several.
func (h *Hold) Target() string { return h.held[0].Target }

// TTL returns how long the locks outlive the process once renewals stop.
func (h *Hold) TTL() time.Duration { return h.ttl }

// Describe identifies the first lock for messages: "NAMESPACE/NAME".
func (h *Hold) Describe() string { return h.locks.Describe(h.held[0].Target) }

// Session returns the run session the hold stands for: the hold of the
// first lock. The run holds all its locks or is stopping, so one of them
// tells whether it lives.
func (h *Hold) Session() Session {
	return Session{LockNamespace: h.locks.Namespace(), Target: h.held[0].Target, Session: h.held[0].Session}
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

// renew pushes l's expiry every third of the TTL until ctx ends or the
// lock turns out to be someone else's.
func (h *Hold) renew(ctx context.Context, l *lock.Held) {
	every := h.ttl / 3
	t := h.locks.Clock.NewTicker(every)
	defer t.Stop()
	var cancelled *lock.CancelRequestedError
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		err := h.locks.Renew(ctx, l, h.ttl)
		switch {
		case errors.Is(err, lock.ErrLost):
			h.mu.Lock()
			h.isLost[l.Target] = true
			first := h.lostTarget == ""
			if first {
				h.lostTarget = l.Target
			}
			h.mu.Unlock()
			if first {
				h.lost <- err
			}
			return
		case errors.As(err, &cancelled):
			h.cancelOnce.Do(func() { h.cancelled <- cancelled })
		case err != nil && ctx.Err() == nil:
			h.obs.RenewFailed(l.Target, every, err)
		}
	}
}

// Release stops the renewals and gives the locks up, last taken first,
// once, telling the observer who holds each next. A lost lock is left
// alone: it is someone else's. Calls after the first do nothing.
func (h *Hold) Release(ctx context.Context) error {
	h.cancel()
	h.wg.Wait()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.released {
		return nil
	}
	h.released = true
	var errs []error
	for i := len(h.held) - 1; i >= 0; i-- {
		l := h.held[i]
		if h.isLost[l.Target] {
			// NOTE: a lost lock is not released, but the Events of its
			// acquisition are still to be written before the process
			// exits. ReleaseHeld waits for those of the others after its
			// write.
			l.StopWatching()
			l.WaitEvents(ctx)
			continue
		}
		rel, err := h.locks.ReleaseHeld(ctx, l, lock.ReleaseOptions{})
		if err != nil {
			errs = append(errs, fmt.Errorf("release lock %q: %w", l.Target, err))
			continue
		}
		h.obs.Released(l.Target, rel)
	}
	return errors.Join(errs...)
}

// cleanupTimeout bounds the work after the run's context ended: aborting
// the job and releasing the lock.
const cleanupTimeout = 30 * time.Second

// CleanupContext is the context of the work after ctx ended: not cancelled
// with it, but bounded (30s).
func CleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}
