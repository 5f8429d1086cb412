package lock_test

import (
	"testing"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/lock/record"
)

// TestIntegrationPriorityServesHighFirst: with a holder and a queue of a
// normal and a low waiter, a high arrival is placed first (behind the
// holder, which keeps the lock), and releases hand the lock over in
// priority order: high, normal, low.
func TestIntegrationPriorityServesHighFirst(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	l := newClient(t, env.Kube, env.Namespace(t))
	holder := lock.Request{Target: "prod", Identity: clitest.Identity("web", 1)}
	mustAcquire(t, l, holder)

	normal, normalQueued := acquireAsync(t.Context(), l, lock.Request{Target: "prod", Identity: clitest.Identity("api", 1)})
	awaitQueued(t, normalQueued, "normal waiter")
	low, lowQueued := acquireAsync(t.Context(), l, lock.Request{Target: "prod", Identity: clitest.Identity("docs", 1), Priority: record.PriorityLow})
	p := awaitQueued(t, lowQueued, "low waiter")
	assert.Equal(t, 2, p.Position, "low queues behind normal")
	high, highQueued := acquireAsync(t.Context(), l, lock.Request{Target: "prod", Identity: clitest.Identity("hotfix", 1), Priority: record.PriorityHigh})
	p = awaitQueued(t, highQueued, "high waiter")
	assert.Equal(t, 1, p.Position, "high queues ahead of normal and low")
	assert.Equal(t, "web", p.Holder.Repo, "the holder keeps the lock")

	got, err := l.Get(t.Context(), "prod")
	require.NoError(t, err)
	require.Len(t, got.Status.Waiters, 3)
	for i, want := range []struct {
		repo string
		p    record.Priority
	}{{"hotfix", record.PriorityHigh}, {"api", record.PriorityNormal}, {"docs", record.PriorityLow}} {
		assert.Equal(t, want.repo, got.Status.Waiters[i].Repo, "waiter %d", i+1)
		assert.Equal(t, want.p, got.Status.Waiters[i].Priority, "waiter %d's priority in status", i+1)
	}

	next := holder.Identity
	for _, w := range []struct {
		name string
		done <-chan result
	}{{"high", high}, {"normal", normal}, {"low", low}} {
		_, err := l.Release(t.Context(), "prod", next, lock.ReleaseOptions{})
		require.NoError(t, err, "release by %s", next)
		r := await(t, w.done, w.name+" waiter")
		require.NoError(t, r.err, "%s waiter gets the lock next", w.name)
		next = r.held.Holder.Identity
	}
	_, err = l.Release(t.Context(), "prod", next, lock.ReleaseOptions{})
	require.NoError(t, err)
}

// TestIntegrationPriorityNewestWinsWithinPriority: a newer high build of a
// branch replaces an older high one; an older normal build of that branch
// keeps waiting behind it rather than giving up to a build of another
// priority.
func TestIntegrationPriorityNewestWinsWithinPriority(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	l := newClient(t, env.Kube, env.Namespace(t))
	holder := lock.Request{Target: "prod", Identity: clitest.Identity("db", 1)}
	mustAcquire(t, l, holder)

	normal41, q := acquireAsync(t.Context(), l, lock.Request{Target: "prod", Identity: clitest.Identity("web", 41)})
	awaitQueued(t, q, "normal 41")
	high42, q := acquireAsync(t.Context(), l, lock.Request{Target: "prod", Identity: clitest.Identity("web", 42), Priority: record.PriorityHigh})
	assert.Equal(t, 1, awaitQueued(t, q, "high 42").Position)
	high43, q := acquireAsync(t.Context(), l, lock.Request{Target: "prod", Identity: clitest.Identity("web", 43), Priority: record.PriorityHigh})
	assert.Equal(t, 1, awaitQueued(t, q, "high 43").Position, "the newer high build takes the older one's place")

	r := await(t, high42, "high 42")
	assert.ErrorIs(t, r.err, lock.ErrSuperseded, "the older high build gives up")

	_, err := l.Release(t.Context(), "prod", holder.Identity, lock.ReleaseOptions{})
	require.NoError(t, err)
	r = await(t, high43, "high 43")
	require.NoError(t, r.err, "the newer high build holds the lock next")
	r = await(t, normal41, "normal 41")
	assert.ErrorIs(t, r.err, lock.ErrSuperseded, "the older normal build gives up once a newer build of its branch holds the lock")

	_, err = l.Release(t.Context(), "prod", clitest.Identity("web", 43), lock.ReleaseOptions{})
	require.NoError(t, err)
}
