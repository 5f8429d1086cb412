package bench

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/events"
	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
)

// BenchmarkReconcileCost measures how the reconcile loop's cost grows with
// the number of jobs (LOCKCTL_BENCH_COST_JOBS, default 1000,10000): the
// `lockctl reconcile` binary, built as `make build` builds it and run with
// its default settings, drives N fresh triggered jobs to their end (kwok
// finishing each pod as it runs). The benchmark reports
//   - its API requests per job, by verb and by resource, counted whole by a
//     proxy in front of the API server that the binary's kubeconfig names;
//   - its peak resident set size (VmHWM from /proc), and
//   - its peak Go heap (go_memstats_heap_alloc_bytes and heap_inuse from
//     its --metrics-addr endpoint, sampled every 200 ms).
//
// It runs once per --job-events setting in LOCKCTL_BENCH_JOB_EVENTS
// (default all,none; all is the binary's default).
// LOCKCTL_BENCH_COST_GOMEMLIMIT, when set, is passed to the binary as
// GOMEMLIMIT.
func BenchmarkReconcileCost(b *testing.B) {
	env := testenv.Get(b)
	settings := envJobEvents(b)
	for _, n := range envInts("LOCKCTL_BENCH_COST_JOBS", []int{1000, 10000}) {
		for _, e := range settings {
			b.Run(fmt.Sprintf("jobs=%d/job-events=%s", n, e), func(b *testing.B) {
				benchmarkReconcileCost(b, env, n, e)
			})
		}
	}
}

func benchmarkReconcileCost(b *testing.B, env *testenv.Env, n int, jobEvents events.JobEvents) {
	var r costRun
	for range b.N {
		r = reconcileProcess(b, env, n, jobEvents)
	}
	b.ReportMetric(float64(r.counts.Total())/float64(n), "req/job")
	b.ReportMetric(float64(r.counts.Writes())/float64(n), "writes/job")
	b.ReportMetric(float64(r.rss)/(1<<20), "peak-rss-MiB")
	b.ReportMetric(float64(r.heapAlloc)/(1<<20), "peak-heap-alloc-MiB")
	b.ReportMetric(float64(r.heapInuse)/(1<<20), "peak-heap-inuse-MiB")
	b.ReportMetric(r.terminal.Seconds(), "terminal-s")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d jobs, lockctl reconcile --job-events=%s (defaults otherwise%s):", n, jobEvents, r.memLimit)
	b.Logf("  %.2f requests per job (%s)", float64(r.counts.Total())/float64(n), verbs(r.counts))
	b.Logf("  by resource: %s", perJob(r.counts, n))
	b.Logf("  peak RSS %.1f MiB; peak Go heap %.1f MiB allocated, %.1f MiB in use; all jobs terminal after %s",
		float64(r.rss)/(1<<20), float64(r.heapAlloc)/(1<<20), float64(r.heapInuse)/(1<<20), r.terminal.Round(time.Millisecond))
}

// perJob renders counts by verb and resource divided by n jobs.
func perJob(c Counts, n int) string {
	var parts []string
	for v, k := range c.ByResource {
		parts = append(parts, fmt.Sprintf("%s %.2f", v, float64(k)/float64(n)))
	}
	sort.Strings(parts)
	return strings.Join(parts, ", ")
}

// costRun is what one reconciler process cost.
type costRun struct {
	rss                  int64
	heapAlloc, heapInuse int64
	terminal             time.Duration
	counts               Counts
	memLimit             string
}

// reconcileProcess runs `lockctl reconcile` on n fresh jobs until all are
// terminal and returns its peak memory and its request counts.
func reconcileProcess(b *testing.B, env *testenv.Env, n int, jobEvents events.JobEvents) costRun {
	ctx := within(b, 45*time.Minute)
	ns := env.Namespace(b)
	setup := setupClient(b, env)
	submitJobs(ctx, b, setup, ns, n)
	finishPods(ctx, setup, ns, nil)
	proxy := startCountingProxy(b, env)

	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	metricsAddr := ln.Addr().String()
	require.NoError(b, ln.Close())
	environ := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "KUBECONFIG=" + proxy.Kubeconfig}
	r := costRun{}
	if v := os.Getenv("LOCKCTL_BENCH_COST_GOMEMLIMIT"); v != "" {
		environ = append(environ, "GOMEMLIMIT="+v)
		r.memLimit = ", GOMEMLIMIT=" + v
	}
	cmd := exec.CommandContext(ctx, clitest.Binary(b), "reconcile", "-n", ns, "--metrics-addr", metricsAddr, "--job-events", string(jobEvents))
	cmd.Env = environ
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(b, cmd.Start())
	start := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	metrics := &http.Client{Timeout: 2 * time.Second}
	sample := func() {
		if hwm, err := vmHWM(cmd.Process.Pid); err == nil {
			r.rss = max(r.rss, hwm)
		}
		alloc, inuse, err := goHeap(ctx, metrics, "http://"+metricsAddr+"/metrics")
		if err == nil {
			r.heapAlloc, r.heapInuse = max(r.heapAlloc, alloc), max(r.heapInuse, inuse)
		}
	}
	for {
		select {
		case err := <-exited:
			b.Fatalf("lockctl reconcile exited early: %v: %s", err, clitest.LastLines(stderr.String(), 5))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			b.Fatalf("lockctl reconcile: %v", context.Cause(ctx))
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
		if err := <-exited; err != nil {
			b.Logf("lockctl reconcile stopped: %v", err)
		}
		// NOTE: counted once it has exited: it writes the Events still
		// queued before it does.
		r.counts = proxy.Counts()
		return r
	}
}

// goHeap reads the Go heap of a process from its Prometheus metrics:
// go_memstats_heap_alloc_bytes and go_memstats_heap_inuse_bytes.
func goHeap(ctx context.Context, c *http.Client, url string) (alloc, inuse int64, err error) {
	v, err := scrapeValues(ctx, c, url, "go_memstats_heap_alloc_bytes", "go_memstats_heap_inuse_bytes")
	return int64(v["go_memstats_heap_alloc_bytes"]), int64(v["go_memstats_heap_inuse_bytes"]), err
}

// scrapeValues reads the samples named, without labels, from the
// Prometheus text exposition at url; a sample not found is missing from
// the map.
func scrapeValues(ctx context.Context, c *http.Client, url string, names ...string) (map[string]float64, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := c.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	out := map[string]float64{}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		name, value, ok := strings.Cut(sc.Text(), " ")
		if !ok || !slices.Contains(names, name) {
			continue
		}
		if f, perr := strconv.ParseFloat(strings.TrimSpace(value), 64); perr == nil {
			out[name] = f
		}
	}
	return out, sc.Err()
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

// BenchmarkColdStart times a whole `lockctl acquire` process on a free lock
// against `kubectl create configmap` of the same size (the kubectl on PATH),
// alternating the two, LOCKCTL_BENCH_COLD_RUNS times each (default 30).
func BenchmarkColdStart(b *testing.B) {
	env := testenv.Get(b)
	kubectl, err := exec.LookPath("kubectl")
	if err != nil {
		b.Skip("no kubectl on PATH to compare with")
	}
	bin := clitest.Binary(b)
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
