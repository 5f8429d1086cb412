package reliability

import (
	"bytes"
	"context"
	"io"
	"log/slog"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/scheduler"
)

// TestIntegrationAPIServerRestartMidWait restarts kube-apiserver while a
// waiter waits. It is not parallel: every test of the package loses the API
// server meanwhile.
//
//   - released after the restart: the waiter's watch comes back by itself
//     and it takes the lock when the holder releases.
//
//   - expired during the outage: the holder's TTL and the waiter's own
//     renewal fall due while the API server is down; the waiter keeps its
//     place and takes the lock once the server is back.
//
//   - a lockctl acquire process waiting: as the first, and the outage
//     leaves no client-go log lines on its stderr.
//
// In all, exactly one holder remains and the queue is empty.
func TestIntegrationAPIServerRestartMidWait(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	tests := []struct {
		name    string
		holdTTL time.Duration
		down    time.Duration
		release bool
		cli     bool
	}{
		{name: "released after the restart", holdTTL: time.Hour, down: time.Second, release: true},
		{name: "expired during the outage", holdTTL: 3 * time.Second, down: 6 * time.Second},
		{name: "a lockctl process waits", holdTTL: time.Hour, down: 2 * time.Second, release: true, cli: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			target := targetName(tt.name)
			holder := lockClient(t, env.RESTConfig, ns)
			// Short enough that the waiter's renewal falls in the outage.
			waiter := lockClientWith(t, env.RESTConfig, ns, lock.Options{WaiterTTL: 3 * time.Second})
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			_, err := holder.Acquire(ctx, lock.Request{Target: target, Identity: clitest.Identity("holder", 1), TTL: tt.holdTTL})
			require.NoError(t, err)
			var done <-chan clitest.Acquisition
			cliDone := make(chan clitest.Outcome, 1)
			if tt.cli {
				clitest.Binary(t) // built before the clock below starts: a build on a busy machine takes longer
				go func() {
					cliDone <- clitest.Run(t, time.Minute, os.TempDir(), nil, "acquire", target, "--owner", "acme", "--repo", "waiter", "--branch", "main", "--build", "1",
						"--kubeconfig", env.Kubeconfig, "--lock-namespace", ns, "--timeout", "80s", "--progress", "plain")
				}()
				require.Eventually(t, func() bool {
					l, err := holder.Get(ctx, target)
					return err == nil && l != nil && len(l.Status.Waiters) == 1
				}, 30*time.Second, 50*time.Millisecond, "the lockctl process queues")
			} else {
				done = clitest.AcquireQueued(ctx, t, waiter, lock.Request{Target: target, Identity: clitest.Identity("waiter", 1)})
			}

			require.NoError(t, env.RestartAPIServer(ctx, tt.down), "restart kube-apiserver")
			if tt.release {
				_, err := holder.Release(ctx, target, clitest.Identity("holder", 1), lock.ReleaseOptions{})
				require.NoError(t, err, "release after the restart")
			}
			if tt.cli {
				o := <-cliDone
				require.Equal(t, 0, o.Code, "the lockctl process takes the lock; stderr:\n%s", o.Stderr)
				assert.NotRegexp(t, `(?m)^[IWEF]\d{4} `, o.Stderr, "no client-go (klog) lines")
			} else {
				r := clitest.Await(t, done, time.Minute, "waiter")
				require.NoError(t, r.Err, "the waiter resumes by itself and takes the lock")
			}

			got, err := waiter.Get(ctx, target)
			require.NoError(t, err)
			require.NotNil(t, got)
			assert.Equal(t, "waiter", got.Status.Holder.Repo, "one holder: the waiter")
			assert.Empty(t, got.Status.Waiters, "nobody else queued")
			_, err = waiter.Release(ctx, target, clitest.Identity("waiter", 1), lock.ReleaseOptions{})
			require.NoError(t, err)
		})
	}
}

// targetName turns a test case name into a lock target: lower-case
// letters, digits and dashes.
func targetName(name string) string {
	out := make([]byte, 0, len(name))
	for i := 0; i < len(name); i++ {
		c := name[i]
		if (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') {
			out = append(out, c)
		} else {
			out = append(out, '-')
		}
	}
	return string(out)
}

// TestIntegrationAPIServerRestartMidReconcile restarts kube-apiserver while
// an in-process reconcile loop drives a batch of jobs. Not parallel, like
// TestIntegrationAPIServerRestartMidWait. The loop resumes by itself: every
// job ends in success with one pod of one build.
func TestIntegrationAPIServerRestartMidReconcile(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	const jobs = 16
	submitJobs(t, env.Client, ns, jobs)
	ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
	defer cancel()
	podWorkload(ctx, t, env.Client, ns, 300*time.Millisecond)

	var logs bytes.Buffer
	logger := slog.New(slog.NewTextHandler(&syncWriter{w: &logs}, &slog.HandlerOptions{Level: slog.LevelDebug}))
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("reconcile loop log (last 60 lines):\n%s", clitest.LastLines(logs.String(), 60))
		}
	})
	c, err := scheduler.NewController(env.Kube, ns, map[string]scheduler.Clientset{job.DefaultCluster: env.Kube},
		scheduler.Options{PodNamespace: ns, MaxConcurrency: helperMaxConcurrency, Log: logger})
	require.NoError(t, err)
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	go func() { stopped <- c.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-stopped; err != nil {
			t.Logf("reconcile loop stopped: %v", err)
		}
	}()

	store := job.NewStore(env.Kube.CoreV1(), ns, job.StoreOptions{})
	terminal := func() int {
		all, err := store.List(ctx, job.ListOptions{})
		if err != nil {
			return -1
		}
		n := 0
		for _, j := range all {
			if j.IsTerminal() {
				n++
			}
		}
		return n
	}
	// Restart once the loop is under way, with jobs in every state.
	for terminal() < jobs/4 {
		select {
		case <-ctx.Done():
			t.Fatalf("the loop made no progress before the restart: %v", context.Cause(ctx))
		case <-time.After(200 * time.Millisecond):
		}
	}
	before, restartAt := terminal(), time.Now()
	require.NoError(t, env.RestartAPIServer(ctx, 2*time.Second), "restart kube-apiserver")
	t.Logf("restarted the API server in %s with %d of %d jobs terminal", time.Since(restartAt).Round(time.Millisecond), before, jobs)
	defer func() {
		if !t.Failed() {
			t.Logf("all jobs terminal %s after the restart began", time.Since(restartAt).Round(time.Millisecond))
		}
	}()
	for n := terminal(); n != jobs; n = terminal() {
		select {
		case <-ctx.Done():
			t.Fatalf("%d of %d jobs terminal after the restart: %v", n, jobs, context.Cause(ctx))
		case <-time.After(200 * time.Millisecond):
		}
	}
	all, err := store.List(t.Context(), job.ListOptions{})
	require.NoError(t, err)
	for _, j := range all {
		assert.Equal(t, job.Success, j.Status.State, "job %s: %s", j.Name, j.Status.Description)
	}
}

// syncWriter serialises writes of concurrent loggers.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
