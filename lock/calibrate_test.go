package lock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

// calibrating is a fake server clock (as servertime.Clock): it follows the
// local fake clock until it hears from the API server, then the local clock
// plus the server's offset.
type calibrating struct {
	*testingclock.FakeClock

	mu     sync.Mutex
	off    time.Duration
	synced bool
	unc    time.Duration // the uncertainty once synced
}

var _ serverClock = (*calibrating)(nil)

func (c *calibrating) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.FakeClock.Now().Add(c.off)
}

func (c *calibrating) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *calibrating) Uncertainty() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.unc, c.synced
}

// hears makes every answer of cs teach the clock that the server is off
// ahead of the local clock.
func (c *calibrating) hears(cs *fake.Clientset, off time.Duration) {
	cs.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.off, c.synced = off, true
		return false, nil, nil
	})
}

// TestAcquireCalibratesFirst: a client whose server clock has not heard
// from the API server reads the lock before it decides anything, so the
// expiry it stamps and the wait it reports are on the server's clock; one
// that has heard takes a free lock with one create.
func TestAcquireCalibratesFirst(t *testing.T) {
	t.Parallel()
	const off = -10 * time.Minute // the local clock is 10 minutes fast
	server := t0.Add(off)
	tests := []struct {
		name        string
		synced      bool
		holder      *record.Record // the lock, if held
		wantActions []string
		wantExpires time.Time // the caller's expiry as holder; zero when it waits
	}{
		{name: "free lock, clock not calibrated", wantActions: []string{"get configmaps", "create configmaps"}, wantExpires: server.Add(time.Hour)},
		{name: "free lock, clock calibrated: read first all the same", synced: true, wantActions: []string{"get configmaps", "create configmaps"}, wantExpires: server.Add(time.Hour)},
		{
			name:        "held lock, clock not calibrated: queued by the first write, and says so",
			holder:      recordOf(held(claim("h", "api", "main", "7"), server)),
			wantActions: []string{"get configmaps", "update configmaps"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var objs []runtime.Object
			if tt.holder != nil {
				objs = append(objs, lockObject(t, tt.holder))
			}
			cs := fake.NewClientset(objs...)
			clk := &calibrating{FakeClock: testingclock.NewFakeClock(t0)}
			if tt.synced {
				clk.off, clk.synced = off, true
			}
			clk.hears(cs, off)
			c := New(kubetest.CoreV1(cs.CoreV1()), kubetest.CoreV1(cs.CoreV1()), lockNS, clock.RealClock{}, Options{})
			c.clk = clk
			c.SetFreezeWindows(nil)

			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			req := request("1")
			var progress []Progress
			req.Callbacks.OnProgress = func(p Progress) {
				progress = append(progress, p)
				cancel() // enough: the wait is reported
			}
			h, err := c.Acquire(ctx, req)
			got := verbs(cs)
			require.GreaterOrEqual(t, len(got), len(tt.wantActions), "actions %v", got)
			assert.Equal(t, tt.wantActions, got[:len(tt.wantActions)], "first requests")
			if !tt.wantExpires.IsZero() {
				require.NoError(t, err)
				require.NotNil(t, h.Holder.Expires)
				assert.Equal(t, tt.wantExpires, h.Holder.Expires.Time, "expiry stamped on the server's clock")
				return
			}
			assert.ErrorIs(t, err, context.Canceled)
			require.Len(t, progress, 1, "the wait is reported once queued")
			assert.Equal(t, 1, progress[0].Position)
			assert.Equal(t, server, progress[0].Started, "the wait starts on the server's clock")
		})
	}
}

// TestExpiryJudgedWithUncertainty: a holder's expiry counts as passed only
// once the server clock's estimate is past it by more than its uncertainty;
// until then the contender waits and looks again when it is sure.
func TestExpiryJudgedWithUncertainty(t *testing.T) {
	t.Parallel()
	expires := t0.Add(-300 * time.Millisecond) // just past on the estimate
	tests := []struct {
		name          string
		uncertainty   time.Duration
		wantOutcome   record.Outcome
		wantNextCheck time.Time
	}{
		{name: "within the uncertainty: still alive", uncertainty: 500 * time.Millisecond, wantOutcome: record.Waiting, wantNextCheck: expires.Add(500 * time.Millisecond)},
		{name: "past it: taken over", uncertainty: 100 * time.Millisecond, wantOutcome: record.Acquired},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := held(claim("h", "api", "main", "7"), t0.Add(-time.Hour))
			h.Expires = microPtr(expires)
			cm := lockObject(t, recordOf(h))
			cs := fake.NewClientset(cm)
			c := New(kubetest.CoreV1(cs.CoreV1()), kubetest.CoreV1(cs.CoreV1()), lockNS, clock.RealClock{}, Options{})
			c.clk = &calibrating{FakeClock: testingclock.NewFakeClock(t0), synced: true, unc: tt.uncertainty}
			req := request("1")
			me, err := c.claim(t.Context(), req)
			require.NoError(t, err)
			res, err := c.step(t.Context(), req, me, cm, nil)
			require.NoError(t, err)
			assert.Equal(t, tt.wantOutcome, res.decision.Outcome)
			if !tt.wantNextCheck.IsZero() {
				assert.True(t, tt.wantNextCheck.Equal(res.decision.NextCheck), "looks again once the expiry is surely past: %s", res.decision.NextCheck)
			}
		})
	}
}
