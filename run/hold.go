package run

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/lockctl/lockctl/lock"
)

// Hold is a lock held while something runs: taken with a short expiry
// (lock.Request.TTL) and renewed by a goroutine every third of it, so that
// a process that dies frees the lock within one TTL. It is safe for
// concurrent use.
type Hold struct {
	locks *lock.Client
	held  *lock.Held
	ttl   time.Duration
	obs   Observer

	cancel context.CancelFunc
	wg     sync.WaitGroup
	lost   chan error

	mu       sync.Mutex
	isLost   bool
	released bool
}

// Acquire waits for the lock as locks.Acquire does, for as long as ctx
// allows, then renews it every third of req.TTL until Release. req.TTL must
// be positive. Renewals that fail for a reason other than losing the lock
// are reported to obs (nil means nobody is told) and tried again.
func Acquire(ctx context.Context, locks *lock.Client, req lock.Request, obs Observer) (*Hold, error) {
	if req.TTL <= 0 {
		return nil, fmt.Errorf("hold lock %q: the TTL must be positive, got %s", req.Target, req.TTL)
	}
	held, err := locks.Acquire(ctx, req)
	if err != nil {
		return nil, err
	}
	renewCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	h := &Hold{
		locks: locks, held: held, ttl: req.TTL, obs: observerOrNop(obs),
		cancel: stop, lost: make(chan error, 1),
	}
	h.wg.Go(func() { h.renew(renewCtx) })
	return h, nil
}

// Held returns what Acquire took.
func (h *Hold) Held() *lock.Held { return h.held }

// Target returns the namespace whose lock is held.
func (h *Hold) Target() string { return h.held.Target }

// TTL returns how long the lock outlives the process once renewals stop.
func (h *Hold) TTL() time.Duration { return h.ttl }

// Describe identifies the lock for messages: "NAMESPACE/NAME".
func (h *Hold) Describe() string { return h.locks.Describe(h.held.Target) }

// Session returns the run session the hold stands for.
func (h *Hold) Session() Session {
	return Session{LockNamespace: h.locks.Namespace(), Target: h.held.Target, Session: h.held.Session}
}

// Lost receives, once, the error of the renewal that found the lock taken
// by someone else (it wraps lock.ErrLost). Renewals stop then.
func (h *Hold) Lost() <-chan error { return h.lost }

// renew pushes the lock's expiry every third of the TTL until ctx ends or
// the lock turns out to be someone else's.
func (h *Hold) renew(ctx context.Context) {
	every := h.ttl / 3
	t := h.locks.Clock.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		err := h.locks.Renew(ctx, h.held, h.ttl)
		switch {
		case errors.Is(err, lock.ErrLost):
			h.mu.Lock()
			h.isLost = true
			h.mu.Unlock()
			h.lost <- err
			return
		case err != nil && ctx.Err() == nil:
			h.obs.RenewFailed(h.held.Target, every, err)
		}
	}
}

// Release stops the renewals and gives the lock up, once, telling the
// observer who holds it next. A lost lock is left alone: it is someone
// else's. Calls after the first do nothing.
func (h *Hold) Release(ctx context.Context) error {
	h.cancel()
	h.wg.Wait()
	// NOTE: a lost lock is not released, but the Events of its
	// acquisition are still to be written before the process exits.
	h.held.WaitEvents(ctx)
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.isLost || h.released {
		return nil
	}
	h.released = true
	rel, err := h.locks.ReleaseHeld(ctx, h.held, lock.ReleaseOptions{})
	if err != nil {
		return fmt.Errorf("release lock %q: %w", h.held.Target, err)
	}
	h.obs.Released(h.held.Target, rel)
	return nil
}

// cleanupTimeout bounds the work after the run's context ended: aborting
// the job and releasing the lock.
const cleanupTimeout = 30 * time.Second

// CleanupContext is the context of the work after ctx ended: not cancelled
// with it, but bounded (30s).
func CleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}
