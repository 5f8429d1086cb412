package lock

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"syscall"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
	testingclock "k8s.io/utils/clock/testing"
)

func TestWaiterMayRetry(t *testing.T) {
	t.Parallel()
	cms := schema.GroupResource{Resource: "configmaps"}
	refused := &url.Error{Op: "Put", URL: "https://127.0.0.1:6443/api", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}
	tests := []struct {
		name   string
		err    error
		joined bool
		want   bool
	}{
		{name: "connection refused while queued", err: fmt.Errorf("write lock x: %w", refused), joined: true, want: true},
		{name: "connection refused before joining", err: refused, joined: false, want: false},
		{name: "unexpected EOF", err: &url.Error{Op: "Get", URL: "u", Err: io.ErrUnexpectedEOF}, joined: true, want: true},
		{name: "503", err: apierrors.NewServiceUnavailable("restarting"), joined: true, want: true},
		{name: "500", err: apierrors.NewInternalError(errors.New("etcd")), joined: true, want: true},
		{name: "504", err: apierrors.NewTimeoutError("slow", 1), joined: true, want: true},
		{name: "429", err: apierrors.NewTooManyRequests("busy", 1), joined: true, want: true},
		{name: "forbidden", err: apierrors.NewForbidden(cms, "lockctl-lock-x", errors.New("rbac")), joined: true, want: false},
		{name: "invalid", err: apierrors.NewBadRequest("no"), joined: true, want: false},
		{name: "invalid lock", err: &record.InvalidError{Field: "holder", Reason: "x"}, joined: true, want: false},
		{name: "superseded", err: &SupersededError{}, joined: true, want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			w := &waiter{st: waitState{joined: tt.joined}}
			assert.Equal(t, tt.want, w.mayRetry(context.Background(), tt.err), "%v", tt.err)
		})
	}

	t.Run("not once the context ended", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithCancel(context.Background())
		cancel()
		w := &waiter{st: waitState{joined: true}}
		assert.False(t, w.mayRetry(ctx, apierrors.NewServiceUnavailable("x")))
	})
}

func TestAmbiguous(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want bool
	}{
		{name: "connection refused: never sent", err: &url.Error{Op: "Put", URL: "u", Err: &net.OpError{Op: "dial", Net: "tcp", Err: syscall.ECONNREFUSED}}, want: false},
		{name: "429: refused before applying", err: apierrors.NewTooManyRequests("busy", 1), want: false},
		{name: "EOF: answer lost", err: &url.Error{Op: "Put", URL: "u", Err: io.ErrUnexpectedEOF}, want: true},
		{name: "500", err: apierrors.NewInternalError(errors.New("etcd")), want: true},
		{name: "conflict: not applied", err: apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("rv")), want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, ambiguous(tt.err), "%v", tt.err)
		})
	}
}

func TestWaiterBackOff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		lost       int
		round      time.Duration
		last       time.Duration // the previous window
		wantWindow time.Duration // 0: no pause at all
	}{
		{name: "no measured round trip", lost: 1, round: 0, wantWindow: 0},
		{name: "first loss", lost: 1, round: 10 * time.Millisecond, wantWindow: 160 * time.Millisecond},
		{name: "third loss doubles twice", lost: 3, round: 10 * time.Millisecond, wantWindow: 640 * time.Millisecond},
		{name: "capped", lost: 40, round: time.Second, wantWindow: maxJoinBackOff},
		{name: "never shrinks: twice the last window", lost: 2, round: time.Millisecond, last: 500 * time.Millisecond, wantWindow: time.Second},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			clk := testingclock.NewFakeClock(time.Unix(0, 0))
			c := New(nil, nil, "ci", clock.RealClock{}, Options{})
			c.clk = clk
			w := &waiter{c: c, st: waitState{window: tt.last}}
			done := make(chan error, 1)
			go func() {
				woken, err := w.backOff(t.Context(), tt.lost, tt.round)
				assert.False(t, woken)
				done <- err
			}()
			if tt.wantWindow == 0 {
				require.NoError(t, <-done)
				return
			}
			require.Eventually(t, clk.HasWaiters, 10*time.Second, time.Millisecond, "a timer is set")
			clk.Step(tt.wantWindow)
			require.NoError(t, <-done, "pause over within the window")
			assert.Equal(t, tt.wantWindow, w.st.window, "the window drawn from")
		})
	}

	t.Run("ends with the context", func(t *testing.T) {
		t.Parallel()
		c := New(nil, nil, "ci", clock.RealClock{}, Options{})
		c.clk = testingclock.NewFakeClock(time.Unix(0, 0))
		ctx, cancel := context.WithCancel(t.Context())
		cancel()
		_, err := (&waiter{c: c}).backOff(ctx, 1, time.Second)
		assert.ErrorIs(t, err, context.Canceled)
	})

	// A lock the watch sees free, or gone, ends the pause at once; one
	// held or queued for does not.
	for _, tt := range []struct {
		name string
		ev   func(t *testing.T) watch.Event
	}{
		{name: "freed", ev: func(t *testing.T) watch.Event {
			return watch.Event{Type: watch.Modified, Object: lockObject(t, freeRecord())}
		}},
		{name: "deleted", ev: func(t *testing.T) watch.Event {
			return watch.Event{Type: watch.Deleted, Object: lockObject(t, freeRecord(queued(claim("w", "db", "main", "1"), t0)))}
		}},
	} {
		t.Run("woken when "+tt.name, func(t *testing.T) {
			t.Parallel()
			clk := testingclock.NewFakeClock(t0)
			c := New(nil, nil, lockNS, clock.RealClock{}, Options{})
			c.clk = clk
			events := watch.NewFakeWithChanSize(3, false)
			w := &waiter{c: c, req: Request{Target: "staging"}, lockEvents: events}
			events.Add(lockObject(t, recordOf(held(claim("h", "api", "main", "7"), t0))))
			events.Modify(lockObject(t, freeRecord(queued(claim("w", "db", "main", "1"), t0))))
			events.Action(tt.ev(t).Type, tt.ev(t).Object)
			woken, err := w.backOff(t.Context(), 1, time.Second)
			require.NoError(t, err)
			assert.True(t, woken, "the pause ended without the clock moving")
			if tt.name == "freed" {
				require.NotNil(t, w.st.cm)
				assert.True(t, record.IsFree(w.st.cm), "the free version is the one to write on")
			}
		})
	}
}
