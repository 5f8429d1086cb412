package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/servertime"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/lock/record"
)

// skewed is the real clock off by a fixed offset.
type skewed struct {
	clock.RealClock
	off time.Duration
}

func (s skewed) Now() time.Time                  { return time.Now().Add(s.off) }
func (s skewed) Since(t time.Time) time.Duration { return s.Now().Sub(t) }

// skewedClient is a lock client in a fresh process on a machine whose clock
// is off by off: its server clock has not heard from the API server yet,
// and it judges expiries on the API server's clock as lockctl does.
func skewedClient(t *testing.T, env *testenv.Env, ns string, off time.Duration) *lock.Client {
	t.Helper()
	sc := servertime.New(skewed{off: off})
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.Wrap(sc.WrapTransport)
	cs, err := kube.NewForConfig(cfg)
	require.NoError(t, err)
	return lock.New(cs.CoreV1(), cs.CoreV1(), ns, sc, lock.Options{})
}

// TestIntegrationClockSkew: a holder whose clock is 10 minutes fast or slow
// takes a lock with a short TTL as its first request and renews it;
// contenders 10 minutes the other way never take it while it renews, and
// take it within TTL + one renewal period of its last renewal once it
// stops: a waiter that queued while it lived, and a contender that arrives
// after it stopped, just before its expiry (judged on its own clock from
// when it first saw the record, as client-go's leader election does, that
// one would wait a whole TTL more).
func TestIntegrationClockSkew(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	const ttl, skew = 6 * time.Second, 10 * time.Minute
	const renewEvery = ttl / 3
	// lateBy is when the late contender arrives after the last renewal.
	const lateBy = ttl - time.Second
	// uncertainty is how far two contenders' estimates of the API server's
	// clock may disagree: each is within half a second plus half a round
	// trip after one answer, and round trips are long on a loaded machine.
	const uncertainty = 2 * time.Second
	for _, tt := range []struct {
		name         string
		target       string
		holder, late time.Duration
		// waiter, when not 0, is the skew of a contender that queues while
		// the holder lives.
		waiter time.Duration
		// renewals is how many TTLs the holder renews for before it dies.
		renewals int
	}{
		{name: "holder fast, waiter slow", target: "fast-holder", holder: skew, waiter: -skew, late: -skew, renewals: 3},
		{name: "holder slow, waiter fast", target: "slow-holder", holder: -skew, waiter: skew, late: skew, renewals: 3},
		{name: "holder fast, late arrival slow", target: "fast-holder-late", holder: skew, late: -skew, renewals: 3},
		{name: "holder slow, late arrival fast", target: "slow-holder-late", holder: -skew, late: skew, renewals: 3},
		{name: "holder fast dies at once, waiter slow", target: "fast-holder-dies", holder: skew, waiter: -skew, late: -skew},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			holder := skewedClient(t, env, ns, tt.holder)
			before := time.Now() // before and after the last renewal
			h := mustAcquire(t, holder, lock.Request{Target: tt.target, Identity: clitest.Identity("web", 1), TTL: ttl})
			after := time.Now()
			var (
				done   <-chan result
				queued <-chan lock.Progress
			)
			if tt.waiter != 0 {
				done, queued = acquireAsync(t.Context(), skewedClient(t, env, ns, tt.waiter), lock.Request{Target: tt.target, Identity: clitest.Identity("api", 1)})
				awaitQueued(t, queued, "waiter")
			}

			// The holder renews: nobody takes it.
			for end := time.Now().Add(time.Duration(tt.renewals) * ttl); time.Now().Before(end); time.Sleep(renewEvery) {
				before = time.Now()
				require.NoError(t, holder.Renew(t.Context(), h, ttl), "the live holder keeps the lock")
				after = time.Now()
				select {
				case r := <-done:
					t.Fatalf("the waiter took a live holder's lock: %+v", r)
				default:
				}
			}
			// The holder dies; a contender arrives shortly before its expiry
			// (it may find it expired already on a loaded machine).
			time.Sleep(time.Until(after.Add(lateBy)))
			late := skewedClient(t, env, ns, tt.late)
			lateDone, _ := acquireAsync(t.Context(), late, lock.Request{Target: tt.target, Identity: clitest.Identity("docs", 1)})
			taker, takerID := late, clitest.Identity("docs", 1)
			if tt.waiter != 0 {
				taker, takerID = nil, clitest.Identity("api", 1)
			} else {
				done = lateDone
			}
			r := await(t, done, "first in line")
			taken := time.Now()
			require.NoError(t, r.err)
			assert.Equal(t, takerID, r.held.Holder.Identity, "the first in line takes over")
			t.Logf("%s: taken over %s after the last renewal (TTL %s, renewal every %s)",
				tt.name, taken.Sub(after).Round(10*time.Millisecond), ttl, renewEvery)
			assert.GreaterOrEqual(t, taken.Sub(after), ttl-uncertainty, "not before the expiry")
			assert.LessOrEqual(t, taken.Sub(before), ttl+renewEvery+uncertainty/2, "within TTL + one renewal period")
			assert.ErrorIs(t, holder.Renew(t.Context(), h, ttl), record.ErrLost, "the old holder knows it lost the lock: no overlapping holds")

			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			if taker == nil {
				// The late contender queued behind the waiter: it gets the lock in turn.
				_, err := holder.Release(ctx, tt.target, takerID, lock.ReleaseOptions{})
				require.NoError(t, err)
				lr := await(t, lateDone, "late contender")
				require.NoError(t, lr.err, "the late contender gets it in turn")
			}
			_, _ = late.Release(ctx, tt.target, clitest.Identity("docs", 1), lock.ReleaseOptions{})
		})
	}
}
