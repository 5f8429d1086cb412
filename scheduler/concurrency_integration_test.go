package scheduler

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// lockctlBinary builds lockctl once per test binary.
func lockctlBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lockctl-bin-")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "lockctl")
		out, err := exec.Command("go", "build", "-o", binary, "github.com/lockctl/lockctl").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v: %s", err, out)
		}
	})
	require.NoError(t, buildErr)
	return binary
}

// reconciler is a lockctl reconcile process.
type reconciler struct {
	cmd *exec.Cmd
	log string
}

func (it *itest) startReconciler(args ...string) *reconciler {
	it.t.Helper()
	log := filepath.Join(it.t.TempDir(), "reconcile.log")
	out, err := os.Create(log)
	require.NoError(it.t, err)
	it.t.Cleanup(func() { out.Close() })
	cmd := exec.Command(lockctlBinary(it.t), append([]string{"reconcile", "--kubeconfig", it.env.Kubeconfig, "-n", it.ns}, args...)...)
	cmd.Stdout, cmd.Stderr = out, out
	require.NoError(it.t, cmd.Start())
	return &reconciler{cmd: cmd, log: log}
}

// stop sends SIGTERM and returns the exit code.
func (r *reconciler) stop(t *testing.T) int {
	t.Helper()
	_ = r.cmd.Process.Signal(syscall.SIGTERM)
	done := make(chan error, 1)
	go func() { done <- r.cmd.Wait() }()
	var err error
	select {
	case err = <-done:
	case <-time.After(30 * time.Second):
		_ = r.cmd.Process.Kill()
		err = <-done
	}
	if exitErr := (*exec.ExitError)(nil); err != nil && !errors.As(err, &exitErr) {
		t.Errorf("wait for lockctl reconcile: %v", err)
	}
	return r.cmd.ProcessState.ExitCode()
}

func TestIntegrationConcurrentReconcilers(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	const jobs, limit = 100, 5
	pods := it.watchPods()
	for i := range jobs {
		it.submit(fmt.Sprintf("c%03d", i), exits("0", "100ms"))
	}
	var procs []*reconciler
	for range 3 {
		procs = append(procs, it.startReconciler("--max-concurrency", fmt.Sprint(limit), "--workers", "4"))
	}
	// A cron pass overlapping the loops, again and again.
	cronCtx, stopCron := context.WithCancel(t.Context())
	cronDone := make(chan struct{})
	go func() {
		defer close(cronDone)
		for cronCtx.Err() == nil {
			cmd := exec.CommandContext(cronCtx, lockctlBinary(t), "reconcile", "--once", "--kubeconfig", it.env.Kubeconfig,
				"-n", it.ns, "--max-concurrency", fmt.Sprint(limit))
			_ = cmd.Run()
		}
	}()

	var left []string
	done := assert.Eventually(t, func() bool {
		all, err := it.store.List(t.Context(), job.ListOptions{})
		if err != nil {
			return false
		}
		left = left[:0]
		for _, j := range all {
			if !j.IsTerminal() {
				left = append(left, j.Name)
			}
		}
		return len(all) == jobs && len(left) == 0
	}, 4*time.Minute, 200*time.Millisecond, "every job terminal")
	stopCron()
	<-cronDone
	for i, p := range procs {
		assert.Equal(t, 0, p.stop(t), "reconciler %d exits 0 on SIGTERM", i)
		if !done || t.Failed() {
			data, _ := os.ReadFile(p.log)
			t.Logf("reconciler %d log:\n%s", i, data)
		}
	}
	require.True(t, done, "jobs left: %v", left)

	all, err := it.store.List(t.Context(), job.ListOptions{})
	require.NoError(t, err)
	ids := map[string]string{}
	for _, j := range all {
		assert.Equal(t, job.Success, j.Status.State, "job %s", j.Name)
		if other, dup := ids[j.Status.BuildID]; dup {
			t.Errorf("jobs %s and %s share build id %s", j.Name, other, j.Status.BuildID)
		}
		ids[j.Status.BuildID] = j.Name
	}
	pods.mu.Lock()
	defer pods.mu.Unlock()
	for name, uids := range pods.uids {
		assert.Len(t, uids, 1, "job %s had one pod", name)
	}
	assert.Len(t, pods.uids, jobs, "one pod per job")
	assert.LessOrEqual(t, pods.maxSeen, limit, "never more than %d pods running (sampled from pod events)", limit)
	t.Logf("most pods running at once: %d", pods.maxSeen)
}

// countingTransport counts the requests a client sends.
type countingTransport struct {
	next http.RoundTripper
	n    *atomic.Int64
}

func (c countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c.n.Add(1)
	return c.next.RoundTrip(r)
}

// BenchmarkIntegrationTriggeredToPending measures how fast one reconcile loop
// moves 500 submitted jobs to pending (pods created) on the local control
// plane, and how many API requests it sends per job. Run it with
//
//	go test ./scheduler -run '^$' -bench IntegrationTriggeredToPending -benchtime 1x
//
// It reports figures and asserts no timing.
func BenchmarkIntegrationTriggeredToPending(b *testing.B) {
	env := testenv.Get(b)
	const jobs = 500
	for range b.N {
		b.StopTimer()
		ns := env.Namespace(b)
		cfg := rest.CopyConfig(env.RESTConfig)
		cfg.QPS, cfg.Burst = 200, 400
		submitter := kubernetes.NewForConfigOrDie(cfg)
		store := job.NewStore(kubetest.CoreV1(submitter.CoreV1()), ns, job.StoreOptions{})
		for i := range jobs {
			_, err := store.Create(b.Context(), &job.Job{
				TypeMeta:   jobTypeMeta,
				ObjectMeta: metaNamed(fmt.Sprintf("b%03d", i)),
				Spec:       job.JobSpec{Job: "bench", Type: job.Periodic, PodSpec: benchPodSpec()},
			})
			require.NoError(b, err)
		}
		var requests atomic.Int64
		cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { return countingTransport{next: rt, n: &requests} })
		cs := kubernetes.NewForConfigOrDie(cfg)
		c, err := NewController(kubetest.Clients(cs), ns, map[string]Clientset{job.DefaultCluster: kubetest.Clients(cs)}, Options{Workers: benchWorkers()})
		require.NoError(b, err)
		ctx, cancel := context.WithCancel(b.Context())
		runDone := make(chan error, 1)
		b.StartTimer()
		start := time.Now()
		go func() { runDone <- c.Run(ctx) }()
		require.Eventually(b, func() bool {
			all, err := store.List(b.Context(), job.ListOptions{})
			if err != nil {
				return false
			}
			for _, j := range all {
				if j.Status.State != job.Pending {
					return false
				}
			}
			return len(all) == jobs
		}, 5*time.Minute, 50*time.Millisecond)
		elapsed := time.Since(start)
		b.StopTimer()
		cancel()
		require.NoError(b, <-runDone)
		b.ReportMetric(float64(jobs)/elapsed.Seconds(), "jobs/s")
		b.ReportMetric(float64(requests.Load())/jobs, "requests/job")
		b.Logf("%d jobs triggered→pending in %s: %.1f jobs/s, %d API requests (%.2f per job)",
			jobs, elapsed.Round(time.Millisecond), float64(jobs)/elapsed.Seconds(), requests.Load(), float64(requests.Load())/jobs)
	}
}

// benchWorkers is the reconciler's worker count in the benchmark:
// LOCKCTL_BENCH_WORKERS, default DefaultWorkers.
func benchWorkers() int {
	var n int
	if _, err := fmt.Sscan(os.Getenv("LOCKCTL_BENCH_WORKERS"), &n); err != nil || n < 1 {
		return DefaultWorkers
	}
	return n
}
