package lock_test

import (
	"context"
	"testing"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/lock/record"
)

type allResult struct {
	held []*lock.Held
	err  error
}

// acquireAllAsync starts AcquireAll in a goroutine; it reports each wait
// (which names the lock waited for) on queued.
func acquireAllAsync(ctx context.Context, l *lock.Client, id record.Identity, targets ...string) (<-chan allResult, <-chan lock.Progress) {
	done := make(chan allResult, 1)
	queued := make(chan lock.Progress, 16)
	var reqs []lock.Request
	for _, target := range targets {
		reqs = append(reqs, lock.Request{Target: target, Identity: id, Callbacks: lock.Callbacks{OnProgress: func(p lock.Progress) {
			select {
			case queued <- p:
			default:
			}
		}}})
	}
	go func() {
		h, err := lock.AcquireAll(l, ctx, reqs)
		done <- allResult{h, err}
	}()
	return done, queued
}

// TestIntegrationAcquireAll: two contenders ask for the same two locks in
// opposite orders while a third holds one of them; both take them in name
// order, so neither deadlocks: the first holds "a" and waits for "b", the
// second waits for "a"; each gets both, with a token per lock.
func TestIntegrationAcquireAll(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	l := newClient(t, env.Kube, env.Namespace(t))
	mustAcquire(t, l, lock.Request{Target: "b", Identity: clitest.Identity("holder", 1)})

	first, firstQueued := acquireAllAsync(t.Context(), l, clitest.Identity("one", 1), "b", "a")
	p := awaitQueued(t, firstQueued, "first")
	assert.Equal(t, "b", p.Target, "the first holds a and waits for b")
	second, secondQueued := acquireAllAsync(t.Context(), l, clitest.Identity("two", 1), "a", "b")
	p = awaitQueued(t, secondQueued, "second")
	assert.Equal(t, "a", p.Target, "the second waits for a, holding nothing")

	_, err := l.Release(t.Context(), "b", clitest.Identity("holder", 1), lock.ReleaseOptions{})
	require.NoError(t, err)
	var r allResult
	select {
	case r = <-first:
	case <-t.Context().Done():
	}
	require.NoError(t, r.err, "the first gets both")
	require.Len(t, r.held, 2)
	assert.Equal(t, []string{"a", "b"}, []string{r.held[0].Target, r.held[1].Target})
	assert.NotEmpty(t, r.held[0].Token)
	assert.NotEmpty(t, r.held[1].Token)

	_, err = l.ReleaseAll(t.Context(), []string{"a", "b"}, clitest.Identity("one", 1), lock.ReleaseOptions{})
	require.NoError(t, err)
	select {
	case r = <-second:
	case <-t.Context().Done():
	}
	require.NoError(t, r.err, "the second gets both")
	require.Len(t, r.held, 2)
}

// TestIntegrationAcquireAllGivesBack: a lock that cannot be taken in time
// gives back the ones taken before it.
func TestIntegrationAcquireAllGivesBack(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	l := newClient(t, env.Kube, env.Namespace(t))
	mustAcquire(t, l, lock.Request{Target: "b", Identity: clitest.Identity("holder", 1)})
	_, err := lock.AcquireAll(l, t.Context(), []lock.Request{
		{Target: "a", Identity: clitest.Identity("web", 1)},
		{Target: "b", Identity: clitest.Identity("web", 1), NoWait: true},
	})
	var held *lock.HeldError
	require.ErrorAs(t, err, &held, "b is held")
	got, err := l.Get(t.Context(), "a")
	require.NoError(t, err)
	assert.Nil(t, got, "a was given back")
}
