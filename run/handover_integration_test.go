package run

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// TestIntegrationHandedOverHoldNotConfirmedStops: a run waiting for a lock
// is handed it and cut off from the API server right then: it holds on
// the hand-over its watch brought, cannot confirm it (its first renewal),
// and reports NotRenewed, so its command stops, before the waiter's expiry
// the hand-over stands on; only after that expiry does another contender
// take the lock.
func TestIntegrationHandedOverHoldNotConfirmedStops(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	plain := lock.New(env.Kube.CoreV1(), env.Kube.CoreV1(), ns, clock.RealClock{}, lock.Options{})
	first, err := plain.Acquire(t.Context(), lock.Request{Target: "staging", Identity: ident("web", "1"), TTL: time.Minute})
	require.NoError(t, err)

	cut := &testenv.SilentAfterCut{}
	cs, err := kube.NewForConfig(cut.Config(env.RESTConfig))
	require.NoError(t, err)
	cutOff := lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{WaiterTTL: 8 * time.Second})

	queued := make(chan struct{})
	req := lock.Request{Target: "staging", Identity: ident("api", "2"), TTL: 6 * time.Second, Policy: record.PolicyFIFO,
		Callbacks: lock.Callbacks{OnProgress: func(lock.Progress) {
			select {
			case <-queued:
			default:
				close(queued)
			}
		}}}
	type result struct {
		h   *Hold
		err error
	}
	done := make(chan result, 1)
	go func() {
		h, err := Acquire(t.Context(), cutOff, req, HoldOptions{KillGrace: time.Second})
		done <- result{h, err}
	}()
	select {
	case <-queued:
	case <-time.After(waitTimeout):
		t.Fatal("api#2 not queued")
	}
	next := make(chan *lock.Held, 1)
	go func() {
		ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
		defer cancel()
		h, err := plain.Acquire(ctx, lock.Request{Target: "staging", Identity: ident("db", "3"), TTL: time.Minute, Policy: record.PolicyFIFO})
		assert.NoError(t, err)
		next <- h
	}()
	require.Eventually(t, func() bool {
		l, err := plain.Get(t.Context(), "staging")
		return err == nil && l != nil && len(l.Status.Waiters) == 2
	}, waitTimeout, 10*time.Millisecond, "both waiters queued")

	cut.Cut()
	_, err = plain.ReleaseHeld(t.Context(), first, lock.ReleaseOptions{})
	require.NoError(t, err)
	r := <-done
	require.NoError(t, r.err, "held on the hand-over")
	held := r.h.FirstLock()
	require.True(t, held.Holder.HandedOver, "before its confirmation")
	expires := held.Holder.Expires.Time

	var stopAt time.Time
	select {
	case err := <-r.h.NotRenewed():
		stopAt = time.Now()
		require.ErrorIs(t, err, ErrNotRenewed)
	case err := <-r.h.Lost():
		t.Fatalf("lost instead of not renewed: %v", err)
	case <-time.After(waitTimeout):
		t.Fatal("never stopped")
	}
	assert.True(t, stopAt.Before(expires), "stopped at %s, before the waiter's expiry %s", stopAt.Format(time.StampMicro), expires.Format(time.StampMicro))
	taken := <-next
	require.NotNil(t, taken)
	assert.True(t, stopAt.Before(taken.Holder.Since.Time), "the next holder took over (%s) after the cut-off run stopped (%s)",
		taken.Holder.Since.Time.Format(time.StampMicro), stopAt.Format(time.StampMicro))
	rctx, cancel := context.WithTimeout(t.Context(), 3*time.Second)
	defer cancel()
	_ = r.h.Release(rctx)
}
