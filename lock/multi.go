package lock

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"
)

// releaseTimeout bounds the release of the locks acquireAll took before it
// failed, which runs even when the caller's context is done.
const releaseTimeout = 30 * time.Second

// requestsFor returns the requests of one caller for several locks, as
// acquireAll takes them: base for each target, with its Target set.
func requestsFor(base Request, targets []string) []Request {
	reqs := make([]Request, len(targets))
	for i, target := range targets {
		reqs[i] = base
		reqs[i].Target = target
	}
	return reqs
}

// Part is one lock of a hold that may span clusters: the request, and the
// client of the cluster the lock is taken in (its Options.Context names
// the cluster).
type Part struct {
	Locks   *Client
	Request Request
}

// PartsFor returns the parts of one caller holding the locks of targets in
// the cluster of every client: base for each target in each cluster
// (requestsFor), clients first.
func PartsFor(clients []*Client, base Request, targets []string) []Part {
	var parts []Part
	for _, c := range clients {
		for _, req := range requestsFor(base, targets) {
			parts = append(parts, Part{Locks: c, Request: req})
		}
	}
	return parts
}

// Where names the lock of target for messages: the target in one cluster
// (context ""), CONTEXT/TARGET in a hold across clusters.
func Where(context, target string) string {
	if context == "" {
		return target
	}
	return context + "/" + target
}

// Where names the lock waited for, as Held.Where does.
func (p *Progress) Where() string { return Where(p.Context, p.Target) }

// acquireAll takes the locks of several targets, all or nothing: one
// Request per target, with the same fields otherwise. The locks are taken
// one after the other in the global order of their targets (sorted by
// name), whatever order reqs has, so that any number of contenders for
// overlapping sets never wait on each other in a cycle: a deadlock needs
// a contender that holds a later target and waits for an earlier one,
// which this order forbids. A contender holds the earlier locks while it
// waits for the later ones (that is what makes it safe); its waiting
// display (Request.Callbacks.OnProgress) names the target it waits for.
//
// When one lock cannot be taken (timeout, superseded, held with NoWait, an
// error) the locks acquireAll took are released again, those it already
// held (re-entered) are left as they were, and the error of the lock that
// failed is returned, wrapped with its target. On success the result has
// one Held per target, in the global order, each with its own fencing
// token.
func (c *Client) acquireAll(ctx context.Context, reqs []Request) ([]*Held, error) {
	parts := make([]Part, len(reqs))
	for i, req := range reqs {
		parts[i] = Part{Locks: c, Request: req}
	}
	return AcquireAcross(ctx, parts)
}

// AcquireAcross is acquireAll over locks in several clusters: each part
// is taken with its own client, all or nothing, in one global order,
// kubeconfig context (Options.Context) first, then target, so that
// contenders for overlapping sets in any clusters never deadlock. Each
// cluster keeps its own record and its own fencing token.
//
// When the parts span more than one client, their requests overlap: every
// lock not yet held is tried at once (as with Request.NoWait), in
// parallel. If all are taken, that is the hold. Otherwise the locks taken
// after the first one that was not (in the global order) are given back,
// that one is waited for as acquireAll waits, and the rest are tried at
// once again: a contender never waits for a lock while it holds a later
// one.
//
// A lock whose API server does not answer, or cannot be reached, is tried
// again (as a lock whose cluster answers is waited for) and reported on
// its OnProgress with Progress.Unreachable, until ctx ends: then every
// lock taken is given back and the error is an *unreachableError, which
// matches ErrTimeout.
func AcquireAcross(ctx context.Context, parts []Part) ([]*Held, error) {
	ordered := slices.Clone(parts)
	slices.SortFunc(ordered, comparePartsOrder)
	for i := 1; i < len(ordered); i++ {
		if comparePartsOrder(ordered[i], ordered[i-1]) == 0 {
			return nil, fmt.Errorf("lock %q is named twice", ordered[i].where())
		}
	}
	if len(ordered) == 0 {
		return nil, nil
	}
	across := spansClients(ordered)
	overlap := across && !allNoWait(ordered)
	started := ordered[0].Locks.clk.Now()
	out := make([]*Held, 0, len(ordered))
	var looks []*lookout
	defer func() { stopLooking(looks) }()
	for i := 0; i < len(ordered); i++ {
		if overlap && (len(ordered)-i > 1 || looks != nil) {
			// NOTE: the rest at once, as far as none of it is held by
			// another; from the first that is, one after the other again.
			taken, next := tryAll(ctx, ordered[i:], looks, started)
			stopLooking(looks)
			looks = nil
			out, i = append(out, taken...), i+next
			if i == len(ordered) {
				break
			}
		}
		p := ordered[i]
		if overlap && i+1 < len(ordered) {
			// NOTE: while it waits, the contender follows the locks it tries
			// next, so that the try needs no read of its own.
			looks = lookOut(ctx, ordered[i+1:])
		}
		h, err := p.acquire(ctx, across, started)
		if err != nil {
			releaseTaken(ctx, ordered[:len(out)], out)
			if len(ordered) == 1 {
				return nil, err
			}
			return nil, &allError{Context: p.Locks.Context(), Target: p.Request.Target, Held: len(out), Of: len(ordered), Err: err}
		}
		out = append(out, h)
	}
	return out, nil
}

// comparePartsOrder is the global order of locks: context, then target.
func comparePartsOrder(a, b Part) int {
	if c := strings.Compare(a.Locks.Context(), b.Locks.Context()); c != 0 {
		return c
	}
	return compareTargets(a.Request.Target, b.Request.Target)
}

// compareTargets is the global order of lock targets in one cluster.
func compareTargets(a, b string) int { return strings.Compare(a, b) }

func (p Part) where() string { return Where(p.Locks.Context(), p.Request.Target) }

func spansClients(parts []Part) bool {
	for _, p := range parts[min(1, len(parts)):] {
		if p.Locks != parts[0].Locks {
			return true
		}
	}
	return false
}

func allNoWait(parts []Part) bool {
	for _, p := range parts {
		if !p.Request.NoWait {
			return false
		}
	}
	return true
}

// tryAll tries every part of ordered at once, in parallel, without
// waiting (Request.NoWait), reading the lock of ordered[i] through
// looks[i] when there is one. It returns the locks held afterwards, a
// prefix of ordered, and the index of the first part not held: the locks
// taken after it are given back.
func tryAll(ctx context.Context, ordered []Part, looks []*lookout, started time.Time) ([]*Held, int) {
	held := make([]*Held, len(ordered))
	var wg sync.WaitGroup
	for i, p := range ordered {
		wg.Go(func() {
			req := p.Request
			req.NoWait = true
			if i < len(looks) {
				req.known = looks[i].reader(p.Locks)
			}
			if h, err := p.acquireOnce(ctx, req, started); err == nil {
				held[i] = h
			}
		})
	}
	wg.Wait()
	first := slices.Index(held, nil)
	if first < 0 {
		return held, len(ordered)
	}
	var later []Part
	var laterHeld []*Held
	for i := first + 1; i < len(ordered); i++ {
		if held[i] != nil {
			later, laterHeld = append(later, ordered[i]), append(laterHeld, held[i])
		}
	}
	releaseTaken(ctx, later, laterHeld)
	return held[:first], first
}

// Pauses between tries of a lock whose API server did not answer: the
// first, and the longest they grow to by doubling; and how long a request
// goes unanswered before the contender says so.
const (
	firstUnreachableDelay = 250 * time.Millisecond
	maxUnreachableDelay   = 5 * time.Second
	silentAfter           = 5 * time.Second
)

// acquire takes p's lock as Acquire does. In a hold across clusters, a
// lock whose API server does not answer or cannot be reached is reported
// on the request's OnProgress and tried again until ctx ends (once with
// Request.NoWait); started is when the hold's wait began.
func (p Part) acquire(ctx context.Context, across bool, started time.Time) (*Held, error) {
	if !across {
		return p.Locks.Acquire(ctx, p.Request)
	}
	c, req := p.Locks, p.Request
	var delay time.Duration
	for {
		h, err := p.acquireOnce(ctx, req, started)
		switch {
		case err == nil:
			return h, nil
		case errors.Is(err, ErrTimeout) && !readBefore(err):
			// NOTE: a wait that never read the lock timed out on its API
			// server, not on a holder.
			return nil, &unreachableError{Context: c.Context(), Target: req.Target, Waited: c.clk.Since(started), Err: err}
		case ctx.Err() != nil || !transient(err) || req.NoWait:
			return nil, err
		}
		delay = min(max(2*delay, firstUnreachableDelay), maxUnreachableDelay)
		if req.Callbacks.OnProgress != nil {
			req.Callbacks.OnProgress(Progress{Context: c.Context(), Target: req.Target, Started: started, Unreachable: err.Error()})
		}
		c.log.Warn(fmt.Sprintf("API server of context %q not reached; trying again in %s", c.Context(), delay), "lock", c.Describe(req.Target), "err", err)
		t := c.clk.NewTimer(delay)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, &unreachableError{Context: c.Context(), Target: req.Target, Waited: c.clk.Since(started), Err: err}
		case <-t.C():
		}
	}
}

// acquireOnce is Acquire of req with p's client, saying on the request's
// OnProgress when the lock's API server has not answered for silentAfter
// (counted from started, when the wait began).
func (p Part) acquireOnce(ctx context.Context, req Request, started time.Time) (*Held, error) {
	c, report := p.Locks, req.Callbacks.OnProgress
	if report == nil {
		return c.Acquire(ctx, req)
	}
	answered := make(chan struct{})
	var once sync.Once
	req.Callbacks.OnProgress = func(pr Progress) {
		once.Do(func() { close(answered) })
		report(pr)
	}
	t := c.clk.NewTimer(silentAfter)
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		select {
		case <-t.C():
			report(Progress{Context: c.Context(), Target: req.Target, Started: started,
				Unreachable: fmt.Sprintf("no answer for %s", roundWait(c.clk.Since(started)))})
		case <-answered:
		case <-done:
		}
	})
	defer func() {
		t.Stop()
		close(done)
		wg.Wait()
	}()
	return c.Acquire(ctx, req)
}

// readBefore reports whether err, a timeout, came after the lock was read:
// it names a holder or a freeze.
func readBefore(err error) bool {
	var te *TimeoutError
	return errors.As(err, &te) && (te.Holder.ClaimID != "" || te.Holder.Build != "" || te.Freeze != nil)
}

// unreachableError is a lock of a hold across clusters whose API server
// did not answer, or could not be reached, before the caller's deadline:
// the locks taken before it were given back. It matches ErrTimeout.
type unreachableError struct {
	// Context names the lock's cluster; Target is the lock.
	Context, Target string
	Waited          time.Duration
	// Err is the last request's error.
	Err error
}

func (e *unreachableError) Error() string {
	msg := fmt.Sprintf("timed out after %s waiting for lock %q: the API server of context %q did not answer", roundWait(e.Waited), Where(e.Context, e.Target), e.Context)
	var te *TimeoutError
	if e.Err != nil && !errors.As(e.Err, &te) {
		// NOTE: a wait that timed out says nothing more than this.
		msg += " (" + e.Err.Error() + ")"
	}
	return msg
}

// Is matches ErrTimeout.
func (e *unreachableError) Is(target error) bool { return target == ErrTimeout }

// releaseTaken gives back the locks of held (taken for parts) that were
// taken rather than re-entered, on a context that outlives a cancelled
// ctx: last first in each cluster, the clusters at once, so that one that
// does not answer keeps no other's lock.
func releaseTaken(ctx context.Context, parts []Part, held []*Held) {
	rctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), releaseTimeout)
	defer cancel()
	var wg sync.WaitGroup
	for _, c := range clientsOf(parts) {
		wg.Go(func() {
			for i := len(held) - 1; i >= 0; i-- {
				h := held[i]
				if parts[i].Locks != c {
					continue
				}
				h.StopWatching()
				// The Events of the acquisition come before those of the release.
				h.WaitEvents(rctx)
				if h.Reentered {
					continue
				}
				if _, err := c.Release(rctx, h.Target, h.Holder.Identity, ReleaseOptions{}); err != nil {
					c.log.Warn("could not give back a lock after another could not be taken", "lock", c.Describe(h.Target), "err", err)
				}
			}
		})
	}
	wg.Wait()
}

// clientsOf returns the clients of parts, each once, in their order.
func clientsOf(parts []Part) []*Client {
	var out []*Client
	for _, p := range parts {
		if !slices.Contains(out, p.Locks) {
			out = append(out, p.Locks)
		}
	}
	return out
}

// allError says which of several locks acquireAll could not take. It
// unwraps to that lock's error, so errors.Is/As see a *TimeoutError or a
// *SupersededError as for one lock.
type allError struct {
	// Context and Target are the lock that could not be taken.
	Context, Target string
	// Held is how many locks had been taken (and were given back); Of is
	// how many were asked for.
	Held, Of int
	Err      error
}

func (e *allError) Error() string {
	where := Where(e.Context, e.Target)
	if e.Held == 0 {
		return fmt.Sprintf("lock %q (1 of %d): %v", where, e.Of, e.Err)
	}
	return fmt.Sprintf("lock %q (%d of %d; the %d taken before it given back): %v", where, e.Held+1, e.Of, e.Held, e.Err)
}

func (e *allError) Unwrap() error { return e.Err }

// ReleaseAll releases the locks of targets for id, as Release does for
// each, last in the global order first. It goes on past a failure and
// returns what each release did, in the order of targets, with the
// failures joined.
func (c *Client) ReleaseAll(ctx context.Context, targets []string, id record.Identity, o ReleaseOptions) ([]*Released, error) {
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
			errs = append(errs, fmt.Errorf("release lock %q: %w", Where(c.Context(), targets[i]), err))
			continue
		}
		out[i] = res
	}
	return out, errors.Join(errs...)
}

// lookout keeps the newest version of a lock a contender tries next,
// read and then watched while it waits for an earlier one, so that the
// try writes on it at once: a version that is no longer the newest loses
// its write (Conflict), and the lock is read again as always.
type lookout struct {
	mu   sync.Mutex
	read bool // the lock was read; cm nil then means there is none
	cm   *corev1.ConfigMap
	// changed is closed, and replaced, when cm changes.
	changed chan struct{}

	cancel context.CancelFunc
	done   chan struct{}
}

// lookOut starts a lookout for the lock of every part.
func lookOut(ctx context.Context, parts []Part) []*lookout {
	looks := make([]*lookout, len(parts))
	for i, p := range parts {
		lctx, cancel := context.WithCancel(ctx)
		l := &lookout{cancel: cancel, done: make(chan struct{}), changed: make(chan struct{})}
		looks[i] = l
		go func() {
			defer close(l.done)
			l.follow(lctx, p.Locks, p.Request.Target)
		}()
	}
	return looks
}

// follow reads the lock of target, then keeps every newer version its
// watch brings, until ctx ends.
func (l *lookout) follow(ctx context.Context, c *Client, target string) {
	cm, err := c.get(ctx, target)
	if err != nil {
		return
	}
	l.mu.Lock()
	l.read, l.cm = true, cm
	l.mu.Unlock()
	if cm == nil {
		return
	}
	w := c.watchFrom(ctx, cm)
	if w == nil {
		l.mu.Lock()
		l.read = false
		l.mu.Unlock()
		return
	}
	defer w.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case ev, ok := <-w.ResultChan():
			if !ok {
				// NOTE: a version the watch may have missed is not trusted.
				l.mu.Lock()
				l.read = false
				l.mu.Unlock()
				return
			}
			next, isCM := ev.Object.(*corev1.ConfigMap)
			if !isCM || next.Name != cm.Name {
				continue
			}
			l.mu.Lock()
			switch {
			case ev.Type == watch.Deleted:
				l.cm = nil
			case l.cm == nil || !rvOlder(next.ResourceVersion, l.cm.ResourceVersion):
				l.cm = next
			}
			close(l.changed)
			l.changed = make(chan struct{})
			l.mu.Unlock()
		}
	}
}

// reader reads the lock for a try: the newest version the lookout has
// when it shows the lock free, or no lock; else, after a lost write, or
// when the lookout has none, from the API server.
//
// NOTE: a version that shows a holder may be one whose release the watch
// has not brought yet (a hold across clusters is released in each at
// once): a try on it would give up without a write, so the release is
// awaited for a moment (catchUp) before the lock is read.
func (l *lookout) reader(c *Client) reader {
	return func(ctx context.Context, target string, lost *corev1.ConfigMap, attempt int) (*corev1.ConfigMap, error) {
		if attempt > 0 || lost != nil {
			return c.get(ctx, target)
		}
		t := c.clk.NewTimer(catchUp)
		defer t.Stop()
		for {
			l.mu.Lock()
			read, cm, changed := l.read, l.cm, l.changed
			l.mu.Unlock()
			switch {
			case !read:
				return c.get(ctx, target)
			case cm == nil:
				return nil, nil
			}
			if rec, err := record.Decode(cm); err == nil && rec.Unheld() && len(rec.Waiters) == 0 {
				return cm, nil
			}
			select {
			case <-changed:
			case <-t.C():
				return c.get(ctx, target)
			case <-ctx.Done():
				return nil, ctx.Err()
			}
		}
	}
}

// stopLooking stops the lookouts of looks and waits for them.
func stopLooking(looks []*lookout) {
	for _, l := range looks {
		l.cancel()
	}
	for _, l := range looks {
		<-l.done
	}
}
