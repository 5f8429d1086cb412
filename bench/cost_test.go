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
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/lockctl/lockctl/events"
	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock/record"
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
// GOMEMLIMIT, and LOCKCTL_BENCH_PENDING_TIMEOUT as --unscheduled-timeout
// and --pending-timeout.
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
	// ready is from the process's start to its /readyz answering (its
	// caches of job records and pods filled); firstPass to every job
	// record having left triggered (the loop has made a step on each);
	// terminal to every job terminal.
	ready, firstPass, terminal time.Duration
	counts                     Counts
	memLimit                   string
}

// reconcileProcess runs `lockctl reconcile` on n fresh jobs until all are
// terminal and returns its peak memory, its request counts and how long
// its first pass and the whole took.
func reconcileProcess(b *testing.B, env *testenv.Env, n int, jobEvents events.JobEvents) costRun {
	ctx := within(b, 90*time.Minute)
	ns := env.Namespace(b)
	setup := setupClient(b, env)
	start := time.Now()
	submitJobs(ctx, b, setup, ns, n)
	b.Logf("made %d job records in %s", n, time.Since(start).Round(time.Millisecond))
	states := watchJobStates(ctx, b, withClientSettings(env.RESTConfig, 1000, 2000), ns)
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
	args := []string{"reconcile", "-n", ns, "--metrics-addr", metricsAddr, "--job-events", string(jobEvents)}
	if v := os.Getenv("LOCKCTL_BENCH_PENDING_TIMEOUT"); v != "" {
		// A machine too busy for the scheduler and kwok to start pods as
		// fast as they are made would otherwise end some at a timeout.
		args = append(args, "--unscheduled-timeout", v, "--pending-timeout", v)
		r.memLimit += ", --unscheduled-timeout and --pending-timeout " + v
	}
	cmd := exec.CommandContext(ctx, clitest.Binary(b), args...)
	cmd.Env = environ
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(b, cmd.Start())
	start = time.Now()
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
	progress := time.Now()
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
		if r.ready == 0 && isReady(ctx, metrics, "http://"+metricsAddr+"/readyz") {
			r.ready = time.Since(start)
		}
		triggered, terminal := states.counts()
		if r.firstPass == 0 && triggered == 0 {
			r.firstPass = time.Since(start)
		}
		if time.Since(progress) >= time.Minute {
			progress = time.Now()
			b.Logf("  after %s: %d jobs triggered, %d terminal; peak RSS %.1f MiB", time.Since(start).Round(time.Second), triggered, terminal, float64(r.rss)/(1<<20))
		}
		if terminal < n {
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

// isReady reports whether url (a /readyz) answers 200.
func isReady(ctx context.Context, c *http.Client, url string) bool {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return false
	}
	resp, err := c.Do(req)
	if err != nil {
		return false
	}
	_ = resp.Body.Close()
	return resp.StatusCode == http.StatusOK
}

// jobStates counts the job records of a namespace by their labels, from a
// watch of their metadata only: at 50k records, listing them whole every
// 200 ms (as this benchmark did) was more work for the API server than
// the loop measured.
type jobStates struct {
	mu                sync.Mutex
	byName            map[string]string // name → its state, "complete" once terminal
	triggeredN, doneN int
}

// watchJobStates watches the metadata of the job records in ns until ctx
// ends, and returns once it has listed them.
func watchJobStates(ctx context.Context, b *testing.B, cfg *rest.Config, ns string) *jobStates {
	b.Helper()
	mc, err := metadata.NewForConfig(cfg)
	require.NoError(b, err)
	inf := metadatainformer.NewFilteredMetadataInformer(mc, corev1.SchemeGroupVersion.WithResource("configmaps"), ns, 0, cache.Indexers{},
		func(o *metav1.ListOptions) { o.LabelSelector = job.Selector })
	s := &jobStates{byName: map[string]string{}}
	set := func(obj any) {
		m, err := meta.Accessor(obj)
		if err != nil {
			return
		}
		state := m.GetLabels()[job.LabelState]
		if m.GetLabels()[job.LabelComplete] == "true" {
			state = "complete"
		}
		s.mu.Lock()
		defer s.mu.Unlock()
		s.count(s.byName[m.GetName()], -1)
		s.byName[m.GetName()] = state
		s.count(state, 1)
	}
	_, _ = inf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    set,
		UpdateFunc: func(_, obj any) { set(obj) },
	})
	go inf.Informer().RunWithContext(ctx)
	require.True(b, cache.WaitForCacheSync(ctx.Done(), inf.Informer().HasSynced), "list the job records")
	return s
}

func (s *jobStates) count(state string, d int) {
	switch state {
	case "":
	case string(job.Triggered):
		s.triggeredN += d
	case "complete":
		s.doneN += d
	}
}

// counts returns how many records are triggered and how many terminal.
func (s *jobStates) counts() (triggered, terminal int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.triggeredN, s.doneN
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
				cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(context.Background(), record.Name(target), metav1.GetOptions{})
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

// BenchmarkReconcileScale is BenchmarkReconcileCost's curve beyond 10k
// jobs, for make scale: `lockctl reconcile --job-events=none` (the setting
// that keeps three requests per job) over N fresh jobs
// (LOCKCTL_BENCH_SCALE_JOBS, default 1000,10000,50000), one run each. At
// each N it reports the requests per job, the peak RSS and the peak RSS per
// job, and the times from the process's start to its caches filled
// (/readyz), to its first pass done (every record has left triggered) and
// to every job terminal; it draws reconcile-memory and reconcile-time
// (WritePlot).
func BenchmarkReconcileScale(b *testing.B) {
	env := testenv.Get(b)
	type point struct {
		n int
		r costRun
	}
	var points []point
	b.Logf("load average at the start: %s", loadAverage())
	for _, n := range envInts("LOCKCTL_BENCH_SCALE_JOBS", []int{1000, 10000, 50000}) {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			var r costRun
			for range b.N {
				r = reconcileProcess(b, env, n, events.JobEventsNone)
			}
			perJob := float64(r.rss) / float64(n) / 1024
			b.ReportMetric(float64(r.counts.Total())/float64(n), "req/job")
			b.ReportMetric(float64(r.rss)/(1<<20), "peak-rss-MiB")
			b.ReportMetric(perJob, "peak-rss-KiB/job")
			b.ReportMetric(float64(r.heapInuse)/(1<<20), "peak-heap-inuse-MiB")
			b.ReportMetric(r.ready.Seconds(), "ready-s")
			b.ReportMetric(r.firstPass.Seconds(), "first-pass-s")
			b.ReportMetric(r.terminal.Seconds(), "terminal-s")
			b.ReportMetric(0, "ns/op")
			b.Logf("%d jobs, lockctl reconcile --job-events=none: %.2f requests per job (%s); peak RSS %.1f MiB (%.1f KiB per job), Go heap in use %.1f MiB",
				n, float64(r.counts.Total())/float64(n), verbs(r.counts), float64(r.rss)/(1<<20), perJob, float64(r.heapInuse)/(1<<20))
			b.Logf("  from start: ready (caches filled) %s, first pass done %s, all terminal %s (%.1f jobs/s); load average %s",
				r.ready.Round(time.Millisecond), r.firstPass.Round(time.Millisecond), r.terminal.Round(time.Millisecond), float64(n)/r.terminal.Seconds(), loadAverage())
			points = append(points, point{n, r})
		})
	}
	b.Logf("load average at the end: %s", loadAverage())
	if len(points) < 2 {
		return
	}
	b.Logf("%8s %9s %14s %12s %9s %12s %12s", "jobs", "req/job", "peak RSS MiB", "KiB per job", "ready", "first pass", "terminal")
	var xs, rss, perJob, ready, first, terminal []float64
	for _, p := range points {
		r := p.r
		b.Logf("%8d %9.2f %14.1f %12.1f %9s %12s %12s", p.n, float64(r.counts.Total())/float64(p.n), float64(r.rss)/(1<<20),
			float64(r.rss)/float64(p.n)/1024, r.ready.Round(time.Second), r.firstPass.Round(time.Second), r.terminal.Round(time.Second))
		xs = append(xs, float64(p.n))
		rss, perJob = append(rss, float64(r.rss)/(1<<20)), append(perJob, float64(r.rss)/float64(p.n)/1024)
		ready, first, terminal = append(ready, r.ready.Seconds()), append(first, r.firstPass.Seconds()), append(terminal, r.terminal.Seconds())
	}
	writePlot(b, "reconcile-memory", Plot{Title: "lockctl reconcile: peak RSS by number of jobs", XLabel: "job records", YLabel: "MiB / KiB per job", LogX: true,
		Series: []Series{{Name: "peak RSS (MiB)", X: xs, Y: rss}, {Name: "peak RSS per job (KiB)", X: xs, Y: perJob}}})
	writePlot(b, "reconcile-time", Plot{Title: "lockctl reconcile: time from start by number of jobs", XLabel: "job records", YLabel: "seconds", LogX: true,
		Series: []Series{{Name: "caches filled", X: xs, Y: ready}, {Name: "first pass done", X: xs, Y: first}, {Name: "all terminal", X: xs, Y: terminal}}})
}
