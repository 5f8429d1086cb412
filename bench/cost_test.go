package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lockctl/lockctl/internal/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/scheduler"
)

var (
	buildOnce sync.Once
	binPath   string
	buildErr  error
)

// lockctlBinary builds the lockctl binary once, as `make build` does.
func lockctlBinary(b testing.TB) string {
	b.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "lockctl-bench-")
		if err != nil {
			buildErr = err
			return
		}
		_, file, _, _ := runtime.Caller(0)
		binPath = filepath.Join(dir, "lockctl")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", binPath, ".")
		cmd.Dir = filepath.Dir(filepath.Dir(file))
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			buildErr = fmt.Errorf("build lockctl: %v\n%s", err, out)
		}
	})
	require.NoError(b, buildErr)
	return binPath
}

// BenchmarkReconcileCost measures how the reconcile loop's cost grows with
// the number of jobs (LOCKCTL_BENCH_COST_JOBS, default 1000,5000,10000): a
// reconciler process drives N fresh triggered jobs to their end (kwok
// finishing each pod as it runs) and the benchmark reports its API requests
// per job and its peak RSS (VmHWM).
//
// By default the process is this test binary running the same
// scheduler.Controller as `lockctl reconcile`, with lockctl's client
// settings, counting its own requests: one pass per size. With
// LOCKCTL_BENCH_COST_PROCESS=lockctl it is the `lockctl reconcile` binary
// itself, whose requests are then counted by an in-process controller on a
// second batch of N jobs, which doubles the run time.
func BenchmarkReconcileCost(b *testing.B) {
	env := testenv.Get(b)
	for _, n := range envInts("LOCKCTL_BENCH_COST_JOBS", []int{1000, 5000, 10000}) {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			var r costRun
			for range b.N {
				r = reconcileProcess(b, env, n)
				if r.counts == nil {
					in := runReconciler(b, env, n)
					r.counts = &in.counts
				}
			}
			b.ReportMetric(float64(r.counts.Total())/float64(n), "req/job")
			b.ReportMetric(float64(r.counts.Writes())/float64(n), "writes/job")
			b.ReportMetric(float64(r.rss)/(1<<20), "peak-rss-MiB")
			b.ReportMetric(r.terminal.Seconds(), "terminal-s")
			b.ReportMetric(0, "ns/op")
			b.Logf("%d jobs, %s:", n, r.what)
			b.Logf("  %.2f requests per job (%s)", float64(r.counts.Total())/float64(n), verbs(*r.counts))
			b.Logf("  peak RSS %.1f MiB; all jobs terminal after %s", float64(r.rss)/(1<<20), r.terminal.Round(time.Millisecond))
		})
	}
}

// reconcilerHelperEnv makes the test binary run a scheduler.Controller on
// the job namespace it names (pods in the same namespace, lockctl's client
// settings) until it is interrupted, then print its request counts: what
// `lockctl reconcile` runs, for measuring it while the command does not
// exist yet.
const reconcilerHelperEnv = "LOCKCTL_BENCH_RECONCILER_NAMESPACE"

// requestsPrefix starts the helper's last line: the JSON of its Counts.
const requestsPrefix = "requests "

func runReconcilerHelper() {
	ns := os.Getenv(reconcilerHelperEnv)
	var counter Counter
	cfg, err := clientcmd.BuildConfigFromFlags("", os.Getenv("KUBECONFIG"))
	if err == nil {
		var cs kubernetes.Interface
		if cs, err = kubernetes.NewForConfig(counter.Wrap(withClientSettings(cfg, lockctlQPS, lockctlBurst))); err == nil {
			var c *scheduler.Controller
			c, err = scheduler.NewController(cs, ns, map[string]kubernetes.Interface{job.DefaultCluster: cs}, scheduler.Options{PodNamespace: ns})
			if err == nil {
				ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
				err = c.Run(ctx)
				stop()
			}
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "reconciler helper:", err)
		os.Exit(1)
	}
	out, _ := json.Marshal(counter.Counts())
	fmt.Println(requestsPrefix + string(out))
	os.Exit(0)
}

// costRun is what one reconciler process cost.
type costRun struct {
	what     string
	rss      int64
	terminal time.Duration
	counts   *Counts // nil when the process could not count
}

// reconcileProcess runs a reconciler process on n fresh jobs until all are
// terminal and returns its peak resident set size and, for the helper, its
// request counts.
func reconcileProcess(b *testing.B, env *testenv.Env, n int) costRun {
	ctx := within(b, 45*time.Minute)
	ns := env.Namespace(b)
	setup := setupClient(b, env)
	submitJobs(ctx, b, setup, ns, n)
	finishPods(ctx, setup, ns, nil)

	environ := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.TempDir(), "KUBECONFIG=" + env.Kubeconfig}
	var cmd *exec.Cmd
	r := costRun{what: "lockctl reconcile"}
	bin := lockctlBinary(b)
	useHelper := os.Getenv("LOCKCTL_BENCH_COST_PROCESS") != "lockctl"
	if out, err := exec.Command(bin, "reconcile", "--help").CombinedOutput(); !useHelper && err == nil && bytes.Contains(out, []byte("reconcile")) {
		cmd = exec.CommandContext(ctx, bin, "reconcile", "-n", ns)
	} else {
		exe, err := os.Executable()
		require.NoError(b, err)
		r.what = "the test binary running scheduler.Controller as lockctl reconcile does"
		cmd = exec.CommandContext(ctx, exe)
		environ = append(environ, reconcilerHelperEnv+"="+ns)
	}
	cmd.Env = environ
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(b, cmd.Start())
	start := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	sample := func() {
		if hwm, err := vmHWM(cmd.Process.Pid); err == nil {
			r.rss = max(r.rss, hwm)
		}
	}
	for {
		select {
		case err := <-exited:
			b.Fatalf("%s exited early: %v: %s", r.what, err, lastLines(stderr.String(), 5))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			b.Fatalf("%s: %v", r.what, context.Cause(ctx))
		case <-tick.C:
		}
		sample()
		list, err := setup.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: job.ActiveSelector})
		if err != nil || len(list.Items) > 0 {
			continue
		}
		r.terminal = time.Since(start)
		sample()
		_ = cmd.Process.Signal(os.Interrupt)
		<-exited
		for _, line := range strings.Split(stdout.String(), "\n") {
			if raw, ok := strings.CutPrefix(line, requestsPrefix); ok {
				var c Counts
				require.NoError(b, json.Unmarshal([]byte(raw), &c))
				r.counts = &c
			}
		}
		return r
	}
}

// vmHWM reads the peak resident set size of a process from /proc.
func vmHWM(pid int) (int64, error) {
	f, err := os.Open(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if v, ok := strings.CutPrefix(sc.Text(), "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no VmHWM in /proc/%d/status", pid)
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, "\n")
}

// BenchmarkColdStart times a whole `lockctl acquire` process on a free lock
// against `kubectl create configmap` of the same size (the kubectl on PATH),
// alternating the two, LOCKCTL_BENCH_COLD_RUNS times each (default 30).
func BenchmarkColdStart(b *testing.B) {
	env := testenv.Get(b)
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		b.Skip("no kubectl on PATH to compare with")
	}
	bin := lockctlBinary(b)
	runs := envInt("LOCKCTL_BENCH_COLD_RUNS", 30)
	var lk, kc Sample
	for range b.N {
		ns := env.Namespace(b)
		environ := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + ns}
		timed := func(name string, args ...string) time.Duration {
			cmd := exec.Command(name, args...)
			cmd.Env = environ
			start := time.Now()
			out, err := cmd.CombinedOutput()
			d := time.Since(start)
			require.NoError(b, err, "%s %v: %s", name, args, out)
			return d
		}
		size := 0
		for i := range runs {
			target := fmt.Sprintf("cold-%03d", i)
			lk = append(lk, timed(bin, "acquire", target, "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1", "-q"))
			if size == 0 {
				cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), lock.Name(target), metav1.GetOptions{})
				require.NoError(b, err)
				for _, v := range cm.Annotations {
					size += len(v)
				}
			}
			kc = append(kc, timed(kubectl, "-n", ns, "create", "configmap", fmt.Sprintf("kubectl-%03d", i),
				"--from-literal=lock="+strings.Repeat("x", size)))
		}
	}
	ratio := float64(lk.Percentile(50)) / float64(kc.Percentile(50))
	report(b, "lockctl-", lk)
	report(b, "kubectl-", kc)
	b.ReportMetric(ratio, "lockctl/kubectl-p50-ratio")
	b.ReportMetric(0, "ns/op")
	b.Logf("cold start, whole process, %d runs each", len(lk))
	b.Logf("  lockctl acquire (free lock):          %s", lk)
	b.Logf("  kubectl create configmap (same size): %s", kc)
	b.Logf("  lockctl/kubectl at p50: %.2f", ratio)
}
