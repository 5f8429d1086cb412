package run

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
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
	c := lock.New(kubetest.CoreV1(te.cs.CoreV1()), kubetest.CoreV1(te.cs.CoreV1()), "default", te.clock, lock.Options{})
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}
	obs := &recordingObserver{}
	h, err := AcquireAll(t.Context(), c, []lock.Request{
		{Target: "staging", Identity: id, TTL: 30 * time.Second},
		{Target: "db-migrations", Identity: id, TTL: 30 * time.Second},
	}, HoldOptions{Observer: obs})
	require.NoError(t, err)
	require.Len(t, h.Locks(), 2)
	assert.Equal(t, "db-migrations", h.Target(), "the first in name order")
	assert.Equal(t, "staging", h.Locks()[1].Target)
	require.NoError(t, h.Release(t.Context()))
	assert.Equal(t, []string{"staging", "db-migrations"}, obs.released, "released last first")
	require.NoError(t, h.Release(t.Context()), "a second release does nothing")
	assert.Len(t, obs.released, 2)

	_, err = AcquireAll(t.Context(), c, []lock.Request{{Target: "staging", Identity: id}}, HoldOptions{})
	assert.ErrorContains(t, err, "the TTL must be positive")
}

// TestHoldCancelled: a newer build with cancel-in-progress asks the hold
// to stop; its renewal reports it on Cancelled, once, and keeps renewing.
func TestHoldCancelled(t *testing.T) {
	t.Parallel()
	te := newFakeEnv(t)
	c := lock.New(kubetest.CoreV1(te.cs.CoreV1()), kubetest.CoreV1(te.cs.CoreV1()), "default", te.clock, lock.Options{})
	old := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "41"}
	h, err := Acquire(t.Context(), c, lock.Request{Target: "staging", Identity: old, TTL: 3 * time.Second, Cancelable: true}, HoldOptions{})
	require.NoError(t, err)

	newer := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "42"}
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

// TestHoldTimings: the renew deadline leaves the kill grace and the clock
// margin before the expiry, and a TTL too short for its grace is refused.
func TestHoldTimings(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		ttl, grace time.Duration
		want       Timings
		wantErr    string
	}{
		{name: "6s", ttl: 6 * time.Second, want: Timings{TTL: 6 * time.Second, RenewEvery: 2 * time.Second, RetryEvery: 500 * time.Millisecond, RenewDeadline: 4 * time.Second, KillGrace: time.Second}},
		{name: "30s, run's default", ttl: 30 * time.Second, want: Timings{TTL: 30 * time.Second, RenewEvery: 10 * time.Second, RetryEvery: 2500 * time.Millisecond, RenewDeadline: 24 * time.Second, KillGrace: 5 * time.Second}},
		{name: "1h: the grace is capped", ttl: time.Hour, want: Timings{TTL: time.Hour, RenewEvery: 20 * time.Minute, RetryEvery: 5 * time.Minute, RenewDeadline: time.Hour - 11*time.Second, KillGrace: 10 * time.Second}},
		{name: "a grace given", ttl: 30 * time.Second, grace: 20 * time.Second, want: Timings{TTL: 30 * time.Second, RenewEvery: 10 * time.Second, RetryEvery: 2500 * time.Millisecond, RenewDeadline: 9 * time.Second, KillGrace: 20 * time.Second}, wantErr: "a TTL of 30s is too short for a kill grace of 20s"},
		{name: "too short for the default grace", ttl: 1500 * time.Millisecond, wantErr: "a TTL of 1.5s is too short for a kill grace of 250ms"},
		{name: "too short for the grace given", ttl: 6 * time.Second, grace: 5 * time.Second, wantErr: "give a TTL of at least 9.1s"},
		{name: "no TTL", wantErr: "the TTL must be positive"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := HoldTimings(tt.ttl, tt.grace)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr, "ttl %s, grace %s", tt.ttl, tt.grace)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "ttl %s", tt.ttl)
			assert.Less(t, got.RenewDeadline+got.KillGrace+ClockMargin, tt.ttl+time.Nanosecond, "the command has ended before the expiry")
		})
	}
}

// TestHoldNotRenewed: renewals that keep failing (the API server refusing
// or not answering) are retried every quarter of the renewal period; at
// the renew deadline, and not before, the hold reports NotRenewed once,
// and renewals go on.
func TestHoldNotRenewed(t *testing.T) {
	t.Parallel()
	te := newFakeEnv(t)
	c := lock.New(kubetest.CoreV1(te.cs.CoreV1()), kubetest.CoreV1(te.cs.CoreV1()), "default", te.clock, lock.Options{})
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}
	obs := &failObserver{}
	h, err := Acquire(t.Context(), c, lock.Request{Target: "staging", Identity: id, TTL: 6 * time.Second}, HoldOptions{Observer: obs})
	require.NoError(t, err)
	te.cs.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("partitioned")
	})

	// Renewals at 2s (fails), then every 500ms: 2.5, 3, 3.5; the deadline
	// at 4s.
	for step := range 7 {
		require.Eventually(t, te.clock.HasWaiters, 5*time.Second, time.Millisecond, "step %d", step)
		te.clock.Step(500 * time.Millisecond)
		if step < 3 {
			continue
		}
		require.Eventually(t, func() bool { return obs.failures() >= step-2 }, 5*time.Second, time.Millisecond, "renewal failed at step %d", step)
		select {
		case err := <-h.NotRenewed():
			t.Fatalf("reported at step %d, before the deadline: %v", step, err)
		default:
		}
	}
	require.Eventually(t, te.clock.HasWaiters, 5*time.Second, time.Millisecond)
	te.clock.Step(500 * time.Millisecond) // 4s
	var late error
	require.Eventually(t, func() bool {
		select {
		case late = <-h.NotRenewed():
			return true
		default:
			return false
		}
	}, 5*time.Second, time.Millisecond, "reported at the deadline")
	var nr *NotRenewedError
	require.ErrorAs(t, late, &nr)
	assert.ErrorIs(t, late, ErrNotRenewed)
	assert.Equal(t, "staging", nr.Target)
	assert.Equal(t, 4*time.Second, nr.Deadline)
	assert.ErrorContains(t, late, `lock "staging" could not be renewed for 4s (TTL 6s): read lock default/`)
	assert.ErrorContains(t, late, "partitioned")
	assert.False(t, errors.Is(late, record.ErrLost), "not a lost lock")

	n := obs.failures()
	require.Eventually(t, te.clock.HasWaiters, 5*time.Second, time.Millisecond)
	te.clock.Step(500 * time.Millisecond)
	require.Eventually(t, func() bool { return obs.failures() > n }, 5*time.Second, time.Millisecond, "renewals go on")
	select {
	case err := <-h.NotRenewed():
		t.Fatalf("reported twice: %v", err)
	default:
	}
}

// failObserver counts failed renewals.
type failObserver struct {
	NopObserver
	mu    sync.Mutex
	count int
}

func (o *failObserver) RenewFailed(string, time.Duration, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.count++
}

func (o *failObserver) failures() int {
	o.mu.Lock()
	defer o.mu.Unlock()
	return o.count
}

// leftObserver keeps what Released says.
type leftObserver struct {
	NopObserver
	mu  sync.Mutex
	rel []*lock.Released
}

func (o *leftObserver) Released(_ string, rel *lock.Released) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.rel = append(o.rel, rel)
}

// writes counts the writes of ConfigMaps the fake clientset saw.
func writes(te *fakeEnv) int {
	n := 0
	for _, a := range te.cs.Actions() {
		if a.GetResource().Resource == "configmaps" && (a.GetVerb() == "create" || a.GetVerb() == "update" || a.GetVerb() == "delete") {
			n++
		}
	}
	return n
}

// TestHoldReentered: a run's hold that re-enters a longer one (acquire
// --ttl 1h, ten minutes before a run of 30s) is not given up at a renew
// deadline counted from acquire's take, renews without shortening the
// expiry, and at its end leaves the hold as it found it, without a write.
func TestHoldReentered(t *testing.T) {
	t.Parallel()
	te := newFakeEnv(t)
	c := lock.New(kubetest.CoreV1(te.cs.CoreV1()), kubetest.CoreV1(te.cs.CoreV1()), "default", te.clock, lock.Options{})
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "812"}
	first, err := c.Acquire(t.Context(), lock.Request{Target: "staging", Identity: id, TTL: time.Hour})
	require.NoError(t, err)
	first.StopWatching()
	first.WaitEvents(t.Context())
	expires := first.Holder.Expires.Time
	te.clock.Step(10 * time.Minute)

	obs := &leftObserver{}
	h, err := Acquire(t.Context(), c, lock.Request{Target: "staging", Identity: id, TTL: 30 * time.Second}, HoldOptions{Observer: obs})
	require.NoError(t, err)
	require.True(t, h.FirstLock().Reentered, "re-entered")
	assert.Equal(t, first.ClaimID, h.FirstLock().ClaimID, "acquire's hold")
	for i := range 3 {
		require.Eventually(t, te.clock.HasWaiters, 5*time.Second, time.Millisecond, "renewal %d", i)
		n := writes(te)
		te.clock.Step(10 * time.Second)
		require.Eventually(t, func() bool { return writes(te) > n }, 5*time.Second, time.Millisecond, "renewal %d writes", i)
		select {
		case err := <-h.NotRenewed():
			t.Fatalf("given up at renewal %d: %v", i, err)
		case err := <-h.Lost():
			t.Fatalf("lost at renewal %d: %v", i, err)
		default:
		}
		st, err := c.Get(t.Context(), "staging")
		require.NoError(t, err)
		assert.Equal(t, expires.UTC(), st.Status.Holder.Expires.UTC(), "renewal %d does not shorten acquire's hour", i)
	}

	n := writes(te)
	require.NoError(t, h.Release(t.Context()))
	assert.Equal(t, n, writes(te), "left without a write")
	st, err := c.Get(t.Context(), "staging")
	require.NoError(t, err)
	require.NotNil(t, st, "still held")
	assert.Equal(t, first.ClaimID, st.Status.Holder.ClaimID, "by acquire's hold")
	assert.Equal(t, first.Token, st.Status.Token, "with its token")
	assert.Equal(t, expires.UTC(), st.Status.Holder.Expires.UTC(), "until its expiry")
	require.Len(t, obs.rel, 1)
	assert.True(t, obs.rel[0].Left, "left")
	require.NotNil(t, obs.rel[0].Kept, "kept")
	assert.Equal(t, first.ClaimID, obs.rel[0].Kept.ClaimID)
	assert.Nil(t, obs.rel[0].Previous, "nothing released")
}

// TestHoldReenteredNearItsExpiry: a hold re-entered 10s before its expiry
// (acquire --ttl 40s, 30s earlier) is renewed at once, TTL past now; one
// re-entered 25s before it whose renewals fail is given up at its renew
// deadline, KillGrace + ClockMargin before that expiry, and not before.
func TestHoldReenteredNearItsExpiry(t *testing.T) {
	t.Parallel()
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "812"}
	take := func(t *testing.T, te *fakeEnv, c *lock.Client, after time.Duration, o HoldOptions) *Hold {
		t.Helper()
		first, err := c.Acquire(t.Context(), lock.Request{Target: "staging", Identity: id, TTL: 40 * time.Second})
		require.NoError(t, err)
		first.StopWatching()
		first.WaitEvents(t.Context())
		te.clock.Step(after)
		h, err := Acquire(t.Context(), c, lock.Request{Target: "staging", Identity: id, TTL: 30 * time.Second}, o)
		require.NoError(t, err)
		require.True(t, h.FirstLock().Reentered, "re-entered")
		return h
	}

	t.Run("renewed at once", func(t *testing.T) {
		t.Parallel()
		te := newFakeEnv(t)
		c := lock.New(kubetest.CoreV1(te.cs.CoreV1()), kubetest.CoreV1(te.cs.CoreV1()), "default", te.clock, lock.Options{})
		h := take(t, te, c, 30*time.Second, HoldOptions{})
		require.Eventually(t, func() bool {
			st, err := c.Get(t.Context(), "staging")
			require.NoError(t, err)
			return st.Status.Holder.Expires.Time.Equal(te.clock.Now().Add(30 * time.Second))
		}, 5*time.Second, time.Millisecond, "renewed TTL past now, without a step of the clock")
		require.NoError(t, h.Release(t.Context()))
	})

	t.Run("given up in time", func(t *testing.T) {
		t.Parallel()
		te := newFakeEnv(t)
		c := lock.New(kubetest.CoreV1(te.cs.CoreV1()), kubetest.CoreV1(te.cs.CoreV1()), "default", te.clock, lock.Options{})
		start := te.clock.Now()
		obs := &failObserver{}
		h := take(t, te, c, 15*time.Second, HoldOptions{Observer: obs})
		te.cs.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
			return true, nil, apierrors.NewServiceUnavailable("partitioned")
		})
		// The expiry is start+40s; the renew deadline 6s before it.
		require.Eventually(t, te.clock.HasWaiters, 5*time.Second, time.Millisecond)
		te.clock.SetTime(start.Add(33 * time.Second))
		require.Eventually(t, func() bool { return obs.failures() > 0 }, 5*time.Second, time.Millisecond, "a renewal failed")
		select {
		case err := <-h.NotRenewed():
			t.Fatalf("given up before the deadline: %v", err)
		default:
		}
		require.Eventually(t, te.clock.HasWaiters, 5*time.Second, time.Millisecond)
		te.clock.SetTime(start.Add(34 * time.Second))
		select {
		case err := <-h.NotRenewed():
			assert.ErrorIs(t, err, ErrNotRenewed)
		case <-time.After(5 * time.Second):
			t.Fatal("not given up at the deadline")
		}
	})
}
