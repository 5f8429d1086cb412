package run

import (
	"context"
	"os"
	"path/filepath"
	"sync"
	"syscall"
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

func TestQuoteCommand(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		argv []string
		want string
	}{
		{name: "plain words", argv: []string{"./deploy.sh", "--env", "staging"}, want: `./deploy.sh --env staging`},
		{name: "quotes and empty", argv: []string{"sh", "-c", "echo it's; exit 7", ""}, want: `sh -c 'echo it'\''s; exit 7' ''`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, QuoteCommand(tt.argv), "argv %q", tt.argv)
		})
	}
}

// stopObserver keeps how the command was stopped and how it ended.
type stopObserver struct {
	NopObserver
	mu    sync.Mutex
	stops []Stop
	ended *os.ProcessState
}

func (o *stopObserver) Stopping(s Stop) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.stops = append(o.stops, s)
}

func (o *stopObserver) Exited(ps *os.ProcessState, _ error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.ended = ps
}

// TestCommandNotRenewed: a command whose lock cannot be renewed gets
// SIGTERM at the renew deadline and, ignoring it, SIGKILL a kill grace
// later; its process group goes with it, and Run's error says why.
func TestCommandNotRenewed(t *testing.T) {
	t.Parallel()
	te := newFakeEnv(t)
	c := lock.New(kubetest.CoreV1(te.cs.CoreV1()), kubetest.CoreV1(te.cs.CoreV1()), "default", te.clock, lock.Options{})
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}
	h, err := Acquire(t.Context(), c, lock.Request{Target: "staging", Identity: id, TTL: 6 * time.Second}, HoldOptions{})
	require.NoError(t, err)
	te.cs.PrependReactor("get", "configmaps", func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, apierrors.NewServiceUnavailable("partitioned")
	})

	marker := filepath.Join(t.TempDir(), "started")
	cmd, err := NewCommand([]string{"sh", "-c", `trap "" TERM; touch "$1"; sleep 600 & wait; sleep 600`, "sh", marker}, CommandOptions{})
	require.NoError(t, err)
	obs := &stopObserver{}
	done := make(chan error, 1)
	go func() { done <- cmd.Run(t.Context(), h, obs) }()
	require.Eventually(t, func() bool { _, err := os.Stat(marker); return err == nil }, 10*time.Second, 10*time.Millisecond, "the command started")

	var runErr error
	for step := 0; runErr == nil; step++ {
		require.Less(t, step, 40, "the command was not stopped")
		select {
		case runErr = <-done:
			continue
		default:
		}
		if te.clock.HasWaiters() {
			te.clock.Step(500 * time.Millisecond)
		}
		select {
		case runErr = <-done:
		case <-time.After(50 * time.Millisecond):
		}
	}
	assert.ErrorIs(t, runErr, ErrNotRenewed)
	assert.ErrorContains(t, runErr, `lock "staging" could not be renewed for 4s (TTL 6s)`)
	assert.ErrorContains(t, runErr, "sh -c")
	assert.ErrorContains(t, runErr, "was stopped before the lock could expire")
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Len(t, obs.stops, 1)
	assert.Equal(t, syscall.SIGTERM, obs.stops[0].Signal)
	assert.Equal(t, time.Second, obs.stops[0].KillAfter)
	assert.ErrorIs(t, obs.stops[0].NotRenewed, ErrNotRenewed)
	require.NotNil(t, obs.ended)
	sig, ok := exitSignal(obs.ended)
	require.True(t, ok, "ended by a signal: %v", obs.ended)
	assert.Equal(t, syscall.SIGKILL, sig, "SIGTERM was ignored")
}

// TestCommandStoppedAgain: interrupted, a command that traps the signal
// and takes its time is waited for; a second signal on again sends its
// process group SIGKILL at once, and run says so.
func TestCommandStoppedAgain(t *testing.T) {
	t.Parallel()
	te := newFakeEnv(t)
	c := lock.New(kubetest.CoreV1(te.cs.CoreV1()), kubetest.CoreV1(te.cs.CoreV1()), "default", te.clock, lock.Options{})
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}
	h, err := Acquire(t.Context(), c, lock.Request{Target: "staging", Identity: id, TTL: time.Minute}, HoldOptions{})
	require.NoError(t, err)

	dir := t.TempDir()
	marker, trapped := filepath.Join(dir, "started"), filepath.Join(dir, "trapped")
	cmd, err := NewCommand([]string{"sh", "-c", `trap 'touch "$2"' INT TERM; touch "$1"; sleep 600 & wait; sleep 600`, "sh", marker, trapped}, CommandOptions{})
	require.NoError(t, err)
	obs := &stopObserver{}
	ctx, cancel := context.WithCancelCause(t.Context())
	again := make(chan os.Signal)
	type result struct {
		urgent bool
		err    error
	}
	done := make(chan result, 1)
	go func() {
		urgent, err := cmd.run(ctx, h, obs, again)
		done <- result{urgent, err}
	}()
	require.Eventually(t, func() bool { _, err := os.Stat(marker); return err == nil }, 10*time.Second, 10*time.Millisecond, "the command started")
	cancel(interrupt{os.Interrupt})
	require.Eventually(t, func() bool { _, err := os.Stat(trapped); return err == nil }, 10*time.Second, 10*time.Millisecond, "the command got SIGINT and goes on")
	again <- syscall.SIGTERM

	r := <-done
	assert.True(t, r.urgent)
	assert.ErrorIs(t, r.err, context.Canceled)
	obs.mu.Lock()
	defer obs.mu.Unlock()
	require.Len(t, obs.stops, 2)
	assert.Equal(t, os.Interrupt, obs.stops[0].Signal, "SIGINT passed on first")
	assert.True(t, obs.stops[0].AgainStops, "and a second signal would stop it")
	assert.Equal(t, syscall.SIGTERM, obs.stops[1].Again)
	assert.Equal(t, syscall.SIGKILL, obs.stops[1].Signal)
	require.NotNil(t, obs.ended)
	sig, ok := exitSignal(obs.ended)
	require.True(t, ok, "ended by a signal: %v", obs.ended)
	assert.Equal(t, syscall.SIGKILL, sig)
}

// interrupt is a cancel cause carrying a signal, as cmd's.
type interrupt struct{ sig os.Signal }

func (i interrupt) Error() string     { return "interrupted" }
func (i interrupt) Signal() os.Signal { return i.sig }
