package run

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"k8s.io/utils/clock"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
)

// waitTimeout bounds every wait in these tests; a healthy run needs a
// fraction of it.
const waitTimeout = 2 * time.Minute

func ident(repo, build string) record.Identity {
	return record.Identity{Owner: "acme", Repo: repo, Branch: "main", Build: build}
}

func requests(id record.Identity, ttl time.Duration, targets ...string) []lock.Request {
	var reqs []lock.Request
	for _, target := range targets {
		reqs = append(reqs, lock.Request{Target: target, Identity: id, TTL: ttl, Policy: record.PolicyFIFO, Cancelable: true})
	}
	return reqs
}

// TestIntegrationHoldSeveralLocksNoDeadlock: many contenders hold
// overlapping sets of locks, each naming its set in its own order, round
// after round, as `run --lock A --lock B` does. All finish (no deadlock,
// every hold is all or nothing) and no lock ever has two holders.
func TestIntegrationHoldSeveralLocksNoDeadlock(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	targets := []string{"a", "b", "c", "d", "e"}
	const contenders, rounds = 16, 3
	var (
		mu      sync.Mutex
		holding = map[string]int{}
		maxHeld = map[string]int{}
		done    int
	)
	start := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, contenders)
	for i := range contenders {
		// Two or three neighbouring locks of the ring, given backwards for
		// odd contenders: every pair of sets in opposite orders overlaps
		// somewhere.
		set := []string{targets[i%5], targets[(i+1)%5]}
		if i%3 == 0 {
			set = append(set, targets[(i+3)%5])
		}
		if i%2 == 1 {
			slices.Reverse(set)
		}
		wg.Go(func() {
			l := lock.New(env.Kube.CoreV1(), env.Kube.CoreV1(), ns, clock.RealClock{}, lock.Options{})
			for r := range rounds {
				id := ident(fmt.Sprintf("repo-%d", i), fmt.Sprint(r+1))
				ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
				h, err := AcquireAll(ctx, l, requests(id, 30*time.Second, set...), HoldOptions{})
				cancel()
				if err != nil {
					errs <- fmt.Errorf("%s %v: %w", id, set, err)
					return
				}
				mu.Lock()
				for _, target := range set {
					holding[target]++
					maxHeld[target] = max(maxHeld[target], holding[target])
				}
				mu.Unlock()
				time.Sleep(2 * time.Millisecond) // hold them a moment
				mu.Lock()
				for _, target := range set {
					holding[target]--
				}
				mu.Unlock()
				if err := h.Release(t.Context()); err != nil {
					errs <- fmt.Errorf("%s: release: %w", id, err)
					return
				}
				mu.Lock()
				done++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	for _, target := range targets {
		assert.Equal(t, 1, maxHeld[target], "lock %q never has two holders", target)
	}
	assert.Equal(t, contenders*rounds, done, "every contender held its locks every round")
	t.Logf("%d contenders × %d rounds over %d locks (sets of 2-3, opposite orders): all done in %s",
		contenders, rounds, len(targets), time.Since(start).Round(time.Millisecond))
}

// TestIntegrationHoldLosingOneOfSeveral: a hold of two locks that loses
// one (broken with --force) reports it on Lost, naming it, and releases
// only the other one.
func TestIntegrationHoldLosingOneOfSeveral(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := lock.New(env.Kube.CoreV1(), env.Kube.CoreV1(), ns, clock.RealClock{}, lock.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	// A short TTL: renewals every second.
	h, err := AcquireAll(ctx, l, requests(ident("web", "1"), 3*time.Second, "db", "app"), HoldOptions{})
	require.NoError(t, err)
	require.Len(t, h.Locks(), 2)
	assert.Equal(t, []string{"app", "db"}, []string{h.Locks()[0].Target, h.Locks()[1].Target}, "taken in name order")
	assert.NotEqual(t, h.Locks()[0].Token, h.Locks()[1].Token, "a token per lock")

	_, err = l.Release(ctx, "db", ident("ops", "1"), lock.ReleaseOptions{Force: true})
	require.NoError(t, err)
	select {
	case lost := <-h.Lost():
		assert.ErrorIs(t, lost, record.ErrLost)
		assert.Equal(t, "db", h.LostTarget())
	case <-ctx.Done():
		t.Fatal("losing db was not reported")
	}
	require.NoError(t, h.Release(ctx))
	st, err := l.Get(ctx, "app")
	require.NoError(t, err)
	assert.True(t, st == nil || st.Status.Holder == nil || st.Status.Holder.Identity != ident("web", "1"), "app released: %+v", st)
}

// TestIntegrationCancelInProgressStopsACommand: a newer build with
// cancel-in-progress asks the older run of its branch to stop; the run's
// command is stopped, the run releases, and the newer build holds the lock
// next, ahead of a build of another repository queued before it.
func TestIntegrationCancelInProgressStopsACommand(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := lock.New(env.Kube.CoreV1(), env.Kube.CoreV1(), ns, clock.RealClock{}, lock.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()

	h, err := Acquire(ctx, l, lock.Request{Target: "staging", Identity: ident("web", "41"), TTL: 3 * time.Second, Cancelable: true}, HoldOptions{})
	require.NoError(t, err)
	c, err := NewCommand([]string{"sleep", "120"}, CommandOptions{})
	require.NoError(t, err)
	ran := make(chan error, 1)
	go func() { ran <- c.Run(ctx, h, nil) }()

	other := make(chan error, 1)
	otherQueued := make(chan struct{})
	var once sync.Once
	go func() {
		_, err := l.Acquire(ctx, lock.Request{Target: "staging", Identity: ident("api", "7"),
			Callbacks: lock.Callbacks{OnProgress: func(lock.Progress) { once.Do(func() { close(otherQueued) }) }}})
		other <- err
	}()
	select {
	case <-otherQueued:
	case <-ctx.Done():
		t.Fatal("api#7 not queued")
	}

	newer := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, lock.Request{Target: "staging", Identity: ident("web", "42"), CancelInProgress: true, Cancelable: true})
		newer <- err
	}()

	var runErr error
	select {
	case runErr = <-ran:
	case <-ctx.Done():
		t.Fatal("the older run's command was not stopped")
	}
	require.ErrorIs(t, runErr, lock.ErrSuperseded, "the run stops as superseded")
	var asked *lock.CancelRequestedError
	require.ErrorAs(t, runErr, &asked)
	assert.Equal(t, ident("web", "42"), asked.By)
	require.NoError(t, h.Release(ctx))

	select {
	case err := <-newer:
		require.NoError(t, err, "the newer build holds the lock next")
	case <-ctx.Done():
		t.Fatal("web#42 did not get the lock")
	}
	select {
	case err := <-other:
		t.Fatalf("api#7 got ahead of the build that asked: %v", err)
	default:
	}
	st, err := l.Get(ctx, "staging")
	require.NoError(t, err)
	require.NotNil(t, st.Status.Holder)
	assert.Equal(t, ident("web", "42"), st.Status.Holder.Identity)
	_, err = l.Release(ctx, "staging", ident("web", "42"), lock.ReleaseOptions{})
	require.NoError(t, err)
	select {
	case err := <-other:
		require.NoError(t, err, "api#7 comes next")
	case <-ctx.Done():
		t.Fatal("api#7 did not get the lock")
	}
}

// TestIntegrationCancelInProgressSparesAcquire: a holder that took the lock
// with acquire (not Cancelable, like every lockctl before record 1.5) is
// never asked; the newer build waits for its release.
func TestIntegrationCancelInProgressSparesAcquire(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := lock.New(env.Kube.CoreV1(), env.Kube.CoreV1(), ns, clock.RealClock{}, lock.Options{})
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()

	held, err := l.Acquire(ctx, lock.Request{Target: "staging", Identity: ident("web", "41"), TTL: time.Minute})
	require.NoError(t, err)
	queued := make(chan struct{})
	var once sync.Once
	newer := make(chan error, 1)
	go func() {
		_, err := l.Acquire(ctx, lock.Request{Target: "staging", Identity: ident("web", "42"), CancelInProgress: true, Cancelable: true,
			Callbacks: lock.Callbacks{OnProgress: func(lock.Progress) { once.Do(func() { close(queued) }) }}})
		newer <- err
	}()
	select {
	case <-queued:
	case <-ctx.Done():
		t.Fatal("web#42 not queued")
	}
	require.NoError(t, l.Renew(ctx, held, time.Minute), "the acquire holder is not asked to stop")
	st, err := l.Get(ctx, "staging")
	require.NoError(t, err)
	assert.Nil(t, st.Status.Holder.CancelRequest, "no request on the holder")

	_, err = l.Release(ctx, "staging", ident("web", "41"), lock.ReleaseOptions{})
	require.NoError(t, err)
	select {
	case err := <-newer:
		require.NoError(t, err)
	case <-ctx.Done():
		t.Fatal("web#42 did not get the lock")
	}
}
