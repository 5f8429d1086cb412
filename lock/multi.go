package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"
)

// releaseTimeout bounds the release of the locks AcquireAll took before it
// failed, which runs even when the caller's context is done.
const releaseTimeout = 30 * time.Second

// RequestsFor returns the requests of one caller for several locks, as
// AcquireAll takes them: base for each target, with its Target set.
func RequestsFor(base Request, targets []string) []Request {
	reqs := make([]Request, len(targets))
	for i, target := range targets {
		reqs[i] = base
		reqs[i].Target = target
	}
	return reqs
}

// AcquireAll takes the locks of several targets, all or nothing: one
// Request per target, with the same fields otherwise. The locks are taken
// one after the other in the global order of their targets (sorted by
// name), whatever order reqs has, so that any number of contenders for
// overlapping sets never wait on each other in a cycle: a deadlock needs
// a contender that holds a later target and waits for an earlier one,
// which this order forbids. A contender holds the earlier locks while it
// waits for the later ones (that is what makes it safe); its waiting
// display (Request.OnProgress) names the target it waits for.
//
// When one lock cannot be taken (timeout, superseded, held with NoWait, an
// error) the locks AcquireAll took are released again, those it already
// held (re-entered) are left as they were, and the error of the lock that
// failed is returned, wrapped with its target. On success the result has
// one Held per target, in the global order, each with its own fencing
// token.
func (c *Client) AcquireAll(ctx context.Context, reqs []Request) ([]*Held, error) {
	ordered := slices.Clone(reqs)
	slices.SortFunc(ordered, func(a, b Request) int { return compareTargets(a.Target, b.Target) })
	for i := 1; i < len(ordered); i++ {
		if ordered[i].Target == ordered[i-1].Target {
			return nil, fmt.Errorf("lock %q is named twice", ordered[i].Target)
		}
	}
	var out []*Held
	for _, req := range ordered {
		h, err := c.Acquire(ctx, req)
		if err != nil {
			c.releaseTaken(ctx, out)
			if len(ordered) == 1 {
				return nil, err
			}
			return nil, &allError{Target: req.Target, Held: len(out), Of: len(ordered), Err: err}
		}
		out = append(out, h)
	}
	return out, nil
}

// compareTargets is the global order of lock targets.
func compareTargets(a, b string) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// releaseTaken gives back, last first, the locks of held that were taken
// rather than re-entered, on a context that outlives a cancelled ctx.
func (c *Client) releaseTaken(ctx context.Context, held []*Held) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	for i := len(held) - 1; i >= 0; i-- {
		h := held[i]
		h.StopWatching()
		// The Events of the acquisition come before those of the release.
		h.WaitEvents(rctx)
		if h.Reentered {
			continue
		}
		if _, err := c.Release(rctx, h.Target, h.Holder.Identity, ReleaseOptions{}); err != nil {
			c.log.WithField("lock", c.Describe(h.Target)).WithField("err", err).Warn("could not give back a lock after another could not be taken")
		}
	}
}

// allError says which of several locks AcquireAll could not take. It
// unwraps to that lock's error, so errors.Is/As see a *TimeoutError or a
// *SupersededError as for one lock.
type allError struct {
	// Target is the lock that could not be taken.
	Target string
	// Held is how many locks had been taken (and were given back); Of is
	// how many were asked for.
	Held, Of int
	Err      error
}

func (e *allError) Error() string {
	if e.Held == 0 {
		return fmt.Sprintf("lock %q (1 of %d): %v", e.Target, e.Of, e.Err)
	}
	return fmt.Sprintf("lock %q (%d of %d; the %d taken before it given back): %v", e.Target, e.Held+1, e.Of, e.Held, e.Err)
}

func (e *allError) Unwrap() error { return e.Err }

// ReleaseAll releases the locks of targets for id, as Release does for
// each, last in the global order first. It goes on past a failure and
// returns what each release did, in the order of targets, with the
// failures joined.
func (c *Client) ReleaseAll(ctx context.Context, targets []string, id Identity, o ReleaseOptions) ([]*Released, error) {
	order := make([]int, len(targets))
	for i := range order {
		order[i] = i
	}
	slices.SortFunc(order, func(a, b int) int { return -compareTargets(targets[a], targets[b]) })
	out := make([]*Released, len(targets))
	var errs []error
	for _, i := range order {
		res, err := c.Release(ctx, targets[i], id, o)
		if err != nil {
			errs = append(errs, fmt.Errorf("release lock %q: %w", targets[i], err))
			continue
		}
		out[i] = res
	}
	return out, errors.Join(errs...)
}
