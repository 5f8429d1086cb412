package run

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/lock"
)

// recordingObserver keeps what Released says.
type recordingObserver struct {
	NopObserver
	mu       sync.Mutex
	released []string
}

func (o *recordingObserver) Released(target string, _ *lock.Released) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.released = append(o.released, target)
}

// stepUntil advances clk a renewal period at a time until ch delivers.
func stepUntil(t *testing.T, te *fakeEnv, ch <-chan error, every time.Duration) error {
	t.Helper()
	for range 20 {
		// NOTE: wait for the renewal goroutines' tickers before stepping.
		require.Eventually(t, te.clock.HasWaiters, 5*time.Second, time.Millisecond)
		te.clock.Step(every)
		select {
		case err := <-ch:
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
	t.Fatal("nothing reported")
	return nil
}

// TestHoldSeveralLocks: one Hold takes several locks in name order, and
// releases them all, last taken first.
func TestHoldSeveralLocks(t *testing.T) {
	t.Parallel()
	te := newFakeEnv(t)
	c := lock.New(te.cs.CoreV1(), te.cs.CoreV1(), "default")
	c.Clock = te.clock
	id := lock.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}
	obs := &recordingObserver{}
	h, err := AcquireAll(t.Context(), c, []lock.Request{
		{Target: "staging", Identity: id, TTL: 30 * time.Second},
		{Target: "db-migrations", Identity: id, TTL: 30 * time.Second},
	}, obs)
	require.NoError(t, err)
	require.Len(t, h.Helds(), 2)
	assert.Equal(t, "db-migrations", h.Target(), "the first in name order")
	assert.Equal(t, "staging", h.Helds()[1].Target)
	require.NoError(t, h.Release(t.Context()))
	assert.Equal(t, []string{"staging", "db-migrations"}, obs.released, "released last first")
	require.NoError(t, h.Release(t.Context()), "a second release does nothing")
	assert.Len(t, obs.released, 2)

	_, err = AcquireAll(t.Context(), c, []lock.Request{{Target: "staging", Identity: id}}, nil)
	assert.ErrorContains(t, err, "the TTL must be positive")
}

// TestHoldCancelled: a newer build with cancel-in-progress asks the hold
// to stop; its renewal reports it on Cancelled, once, and keeps renewing.
func TestHoldCancelled(t *testing.T) {
	t.Parallel()
	te := newFakeEnv(t)
	c := lock.New(te.cs.CoreV1(), te.cs.CoreV1(), "default")
	c.Clock = te.clock
	old := lock.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "41"}
	h, err := Acquire(t.Context(), c, lock.Request{Target: "staging", Identity: old, TTL: 3 * time.Second, Cancelable: true}, nil)
	require.NoError(t, err)

	newer := lock.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "42"}
	_, p, err := c.TryAcquire(t.Context(), lock.Request{Target: "staging", Identity: newer, CancelInProgress: true})
	require.NoError(t, err)
	require.NotNil(t, p, "the newer build waits")

	asked := stepUntil(t, te, h.Cancelled(), time.Second)
	var cre *lock.CancelRequestedError
	require.ErrorAs(t, asked, &cre)
	assert.Equal(t, newer, cre.By)
	assert.ErrorIs(t, asked, lock.ErrSuperseded)

	st, err := c.Get(context.Background(), "staging")
	require.NoError(t, err)
	assert.Equal(t, old, st.Status.Holder.Identity, "still held while it stops")
	require.NoError(t, h.Release(t.Context()))
	st, err = c.Get(context.Background(), "staging")
	require.NoError(t, err)
	assert.Equal(t, newer, st.Status.Holder.Identity, "handed to the build that asked")
}
