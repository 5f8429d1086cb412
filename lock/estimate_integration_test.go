package lock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/lock/record"
)

// TestIntegrationEstimateWait: on the real API server, a lock is held six
// times for about hold each, then a holder and two waiters ahead hold it
// as long again; the estimate the last waiter is shown when it joins
// lands within 25 % of the wait it then has. Both are computed from
// recorded times: this checks the estimator's accuracy, not any speed.
func TestIntegrationEstimateWait(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := newClient(t, env.Kube, ns)
	const hold = 2 * time.Second
	req := func(repo string, build int) lock.Request {
		return lock.Request{Target: "production", Identity: clitest.Identity(repo, build), ClaimID: fmt.Sprint(repo, build)}
	}
	release := func(repo string, build int) {
		_, err := l.Release(t.Context(), "production", clitest.Identity(repo, build), lock.ReleaseOptions{})
		require.NoError(t, err, "release %s#%d", repo, build)
	}
	// The history: regular holds.
	for i := 1; i <= 6; i++ {
		mustAcquire(t, l, req("hist", i))
		time.Sleep(hold) // NOTE: the hold's length, what the estimate learns from
		release("hist", i)
	}

	mustAcquire(t, l, req("a", 1))
	aHeld := time.Now()
	var (
		mu       sync.Mutex
		joined   time.Time
		estimate *record.Estimate
	)
	// contend queues repo behind those before it; once it holds the lock
	// it keeps it for hold (measure: not at all) and releases it.
	contend := func(repo string, measure bool) (queued <-chan struct{}, done <-chan time.Time) {
		q, d := make(chan struct{}), make(chan time.Time, 1)
		r := req(repo, 1)
		var once sync.Once
		r.Callbacks.OnProgress = func(p lock.Progress) {
			once.Do(func() {
				if measure {
					now := l.Clock().Now()
					mu.Lock()
					joined, estimate = now, p.Estimate(now)
					mu.Unlock()
				}
				close(q)
			})
		}
		go func() {
			ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
			defer cancel()
			h, err := l.Acquire(ctx, r)
			got := l.Clock().Now()
			if !assert.NoError(t, err, "acquire %s", repo) {
				d <- time.Time{}
				return
			}
			if !measure {
				time.Sleep(hold)
			}
			_, err = l.ReleaseHeld(t.Context(), h, lock.ReleaseOptions{})
			assert.NoError(t, err, "release %s", repo)
			d <- got
		}()
		return q, d
	}
	qb, db := contend("b", false)
	<-qb
	qc, dc := contend("c", false)
	<-qc
	qw, dw := contend("w", true)
	<-qw
	time.Sleep(time.Until(aHeld.Add(hold))) // the rest of a's hold
	release("a", 1)
	<-db
	<-dc
	got := <-dw
	require.False(t, got.IsZero(), "w got the lock")

	mu.Lock()
	defer mu.Unlock()
	require.NotNil(t, estimate, "a history of six regular holds gives an estimate")
	real := got.Sub(joined)
	t.Logf("estimate %s (%s), real wait %s", estimate, estimate.Basis(), real)
	assert.Equal(t, estimate.Low, estimate.High, "regular holds give one figure")
	assert.InDelta(t, real.Seconds(), estimate.Low.Seconds(), 0.25*real.Seconds(), "estimate %s vs real wait %s", estimate, real)
}
