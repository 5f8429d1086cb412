package bench

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/events"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/scheduler"
)

// lockctlQPS and lockctlBurst are the client settings of `lockctl
// reconcile` by default (--kube-api-qps, --kube-api-burst).
const (
	lockctlQPS   = cmd.DefaultKubeAPIQPS
	lockctlBurst = cmd.DefaultKubeAPIBurst
)

// unthrottled is the QPS of a client without a client-side rate limiter.
const unthrottled = -1

// envInts reads a comma-separated list of sizes, such as
// LOCKCTL_BENCH_JOBS=1000,5000, falling back to def.
func envInts(name string, def []int) []int {
	var out []int
	for _, f := range strings.Split(os.Getenv(name), ",") {
		if n, err := strconv.Atoi(strings.TrimSpace(f)); err == nil && n > 0 {
			out = append(out, n)
		}
	}
	if len(out) == 0 {
		return def
	}
	return out
}

// withClientSettings returns a copy of cfg with the given rate limits.
func withClientSettings(cfg *rest.Config, qps float32, burst int) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.QPS, out.Burst = qps, burst
	return out
}

// BenchmarkReconcile measures the reconcile loop on N triggered jobs
// without limits (LOCKCTL_BENCH_JOBS, default 1000,5000): the time until
// every job is pending and until every job is terminal, with kwok finishing
// each pod as soon as it runs. lockctl runs as `lockctl reconcile` does: its
// client settings (--kube-api-qps, --kube-api-burst defaults),
// DefaultWorkers workers, and its job Events written in the background
// through a client of their own, once per --job-events setting in
// LOCKCTL_BENCH_JOB_EVENTS (default all,none; all is the default of
// lockctl reconcile).
//
// In the same run it measures the server-bound ceiling for that work: with
// clients that have no client-side rate limit and as many workers, create
// the same pods bare and write each record twice (pending, then terminal
// once its pod succeeded), the two writes of a job one after the other.
// Every pod names the fake node (spec.nodeName), so kube-scheduler's own
// client rate limit does not bind either side. It reports lockctl/ceiling
// as a throughput ratio (1 = as fast as the ceiling), jobs per second, and
// the API requests per job (Events included). Metrics of a setting other
// than all are prefixed with it ("none-terminal-ratio").
func BenchmarkReconcile(b *testing.B) {
	env := testenv.Get(b)
	settings := envJobEvents(b)
	for _, n := range envInts("LOCKCTL_BENCH_JOBS", []int{1000, 5000}) {
		b.Run(fmt.Sprintf("jobs=%d", n), func(b *testing.B) {
			lk := make([]reconcileRun, len(settings))
			var ceil reconcileRun
			for range b.N {
				for i, e := range settings {
					lk[i] = runReconciler(b, env, n, e)
				}
				ceil = runCeiling(b, env, n)
			}
			b.ReportMetric(ceil.pending.Seconds(), "ceiling-pending-s")
			b.ReportMetric(ceil.terminal.Seconds(), "ceiling-terminal-s")
			b.ReportMetric(float64(ceil.counts.Total())/float64(n), "ceiling-req/job")
			b.ReportMetric(float64(n)/ceil.terminal.Seconds(), "ceiling-jobs/s")
			b.ReportMetric(0, "ns/op")
			b.Logf("%d triggered jobs, no limits; lockctl: client QPS %v burst %d (Events: a client of their own, the same settings), %d workers; server-bound ceiling: no client rate limit, %d workers",
				n, lockctlQPS, lockctlBurst, scheduler.DefaultWorkers, scheduler.DefaultWorkers)
			b.Logf("%-22s %12s %12s %10s %10s  %s", "", "all pending", "all terminal", "jobs/s", "req/job", "requests")
			for i, e := range settings {
				r := lk[i]
				prefix := ""
				if e != events.JobEventsAll {
					prefix = string(e) + "-"
				}
				pendingRatio := ceil.pending.Seconds() / r.pending.Seconds()
				terminalRatio := ceil.terminal.Seconds() / r.terminal.Seconds()
				b.ReportMetric(r.pending.Seconds(), prefix+"pending-s")
				b.ReportMetric(r.terminal.Seconds(), prefix+"terminal-s")
				b.ReportMetric(pendingRatio, prefix+"pending-ratio")
				b.ReportMetric(terminalRatio, prefix+"terminal-ratio")
				b.ReportMetric(float64(r.counts.Total())/float64(n), prefix+"req/job")
				b.ReportMetric(float64(r.counts.Writes())/float64(n), prefix+"writes/job")
				b.ReportMetric(float64(n)/r.terminal.Seconds(), prefix+"jobs/s")
				b.Logf("%-22s %12s %12s %10.1f %10.2f  %s", "lockctl job-events="+string(e), r.pending.Round(time.Millisecond), r.terminal.Round(time.Millisecond),
					float64(n)/r.terminal.Seconds(), float64(r.counts.Total())/float64(n), verbs(r.counts))
			}
			b.Logf("%-22s %12s %12s %10.1f %10.2f  %s", "ceiling", ceil.pending.Round(time.Millisecond), ceil.terminal.Round(time.Millisecond),
				float64(n)/ceil.terminal.Seconds(), float64(ceil.counts.Total())/float64(n), verbs(ceil.counts))
			for i, e := range settings {
				r := lk[i]
				b.Logf("job-events=%s: lockctl/server-bound ceiling throughput %.2f to pending, %.2f to terminal; Events dropped %d",
					e, ceil.pending.Seconds()/r.pending.Seconds(), ceil.terminal.Seconds()/r.terminal.Seconds(), r.dropped)
				b.Logf("  by resource: %s", resources(r.counts))
				b.Logf("  pod seen Succeeded → record seen terminal: %s", r.lag)
			}
		})
	}
}

// envJobEvents reads the --job-events settings to measure from
// LOCKCTL_BENCH_JOB_EVENTS (comma-separated), default all,none.
func envJobEvents(b *testing.B) []events.JobEvents {
	var out []events.JobEvents
	for _, f := range strings.Split(os.Getenv("LOCKCTL_BENCH_JOB_EVENTS"), ",") {
		if f = strings.TrimSpace(f); f == "" {
			continue
		}
		e, err := events.ParseJobEvents(f)
		require.NoError(b, err, "LOCKCTL_BENCH_JOB_EVENTS")
		out = append(out, e)
	}
	if len(out) == 0 {
		return []events.JobEvents{events.JobEventsAll, events.JobEventsNone}
	}
	return out
}

// reconcileRun is the outcome of one reconcile experiment.
type reconcileRun struct {
	pending, terminal time.Duration
	counts            Counts
	// lag is, per job, from its pod seen Succeeded to its record seen
	// terminal (lockctl only).
	lag Sample
	// dropped counts the Events the background queue dropped (lockctl only).
	dropped int64
}

// setupClient is a fast client for preparing experiments and playing
// kwok's user; its requests are not counted.
func setupClient(b testing.TB, env *testenv.Env) kubernetes.Interface {
	return newClientset(b, withClientSettings(env.RESTConfig, 1000, 2000))
}

// submitJobs stores n triggered jobs in ns, eight at a time, and returns
// their records. Their pods name the fake node, so that kube-scheduler (and
// its client's rate limit) is not in the way.
func submitJobs(ctx context.Context, b testing.TB, cs kubernetes.Interface, ns string, n int) []*job.Job {
	b.Helper()
	store := job.NewStore(kubetest.CoreV1(cs.CoreV1()), ns, job.StoreOptions{})
	jobs := make([]*job.Job, n)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				j, err := store.Create(ctx, &job.Job{
					TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
					ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("job-%05d", i)},
					Spec: job.JobSpec{
						Job:     fmt.Sprintf("bench-%d", i%10),
						Type:    job.Periodic,
						PodSpec: &corev1.PodSpec{NodeName: testenv.NodeName, Containers: []corev1.Container{{Name: "main", Image: "alpine"}}},
					},
				})
				if err != nil {
					errs <- err
					return
				}
				jobs[i] = j
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	return jobs
}

// finishPods plays the pods' workload: each pod seen Running in ns is
// annotated to succeed at once. onDone, when set, is called once per pod
// seen Succeeded. It runs until ctx ends.
func finishPods(ctx context.Context, cs kubernetes.Interface, ns string, onDone func(*corev1.Pod)) {
	f := informers.NewSharedInformerFactoryWithOptions(cs, 30*time.Second, informers.WithNamespace(ns))
	inf := f.Core().V1().Pods().Informer()
	todo := make(chan string, 1<<16)
	var annotated, done sync.Map
	handle := func(obj any) {
		pod, ok := obj.(*corev1.Pod)
		if !ok {
			return
		}
		switch pod.Status.Phase {
		case corev1.PodRunning:
			if _, seen := annotated.LoadOrStore(pod.Name, true); !seen {
				todo <- pod.Name
			}
		case corev1.PodSucceeded:
			if _, seen := done.LoadOrStore(pod.Name, true); !seen && onDone != nil {
				onDone(pod)
			}
		}
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handle,
		UpdateFunc: func(_, obj any) { handle(obj) },
	})
	patch := []byte(fmt.Sprintf(`{"metadata":{"annotations":{%q:"0"}}}`, testenv.AnnotationExitCode))
	for range 4 {
		go func() {
			for {
				select {
				case <-ctx.Done():
					return
				case name := <-todo:
					if _, err := cs.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil && ctx.Err() == nil {
						annotated.Delete(name) // try again on the pod's next update or resync
					}
				}
			}
		}()
	}
	f.Start(ctx.Done())
}

// runReconciler submits n jobs and runs a scheduler.Controller on them
// with lockctl's client settings and job Events as --job-events=jobEvents
// until every job is terminal.
func runReconciler(b *testing.B, env *testenv.Env, n int, jobEvents events.JobEvents) reconcileRun {
	ctx := within(b, 45*time.Minute)
	ns := env.Namespace(b)
	setup := setupClient(b, env)
	submitJobs(ctx, b, setup, ns, n)

	var (
		pendingN, terminalN atomic.Int32
		states              sync.Map // name → job.State
		succeededAt         sync.Map // pod name → when it was seen Succeeded
		lagMu               sync.Mutex
		lag                 Sample // pod seen Succeeded → record seen terminal
		allPending          = make(chan time.Time, 1)
		allTerminal         = make(chan time.Time, 1)
	)
	f := informers.NewSharedInformerFactoryWithOptions(setup, 0, informers.WithNamespace(ns),
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.LabelSelector = job.Selector }))
	observe := func(obj any) {
		cm, ok := obj.(*corev1.ConfigMap)
		if !ok {
			return
		}
		j, err := job.FromConfigMap(cm)
		if err != nil {
			return
		}
		prev, _ := states.Swap(j.Name, j.Status.State)
		was, _ := prev.(job.State)
		if (was == "" || was == job.Triggered) && j.Status.State != job.Triggered && j.Status.State != "" {
			if int(pendingN.Add(1)) == n {
				allPending <- time.Now()
			}
		}
		if !(&job.JobStatus{State: was}).IsTerminal() && j.IsTerminal() {
			now := time.Now()
			if at, ok := succeededAt.Load(job.PodName(j)); ok {
				lagMu.Lock()
				lag = append(lag, now.Sub(at.(time.Time)))
				lagMu.Unlock()
			}
			switch int(terminalN.Add(1)) {
			case n / 2:
				profileGoroutines(b, fmt.Sprintf("goroutines-half-terminal-%d-%s.txt", n, jobEvents))
			case n:
				allTerminal <- now
			}
		}
	}
	_, _ = f.Core().V1().ConfigMaps().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    observe,
		UpdateFunc: func(_, obj any) { observe(obj) },
	})
	f.Start(ctx.Done())
	f.WaitForCacheSync(ctx.Done())
	finishPods(ctx, setup, ns, func(p *corev1.Pod) { succeededAt.Store(p.Name, time.Now()) })

	var counter Counter
	cfg := counter.Wrap(withClientSettings(env.RESTConfig, lockctlQPS, lockctlBurst))
	cs := newKube(b, cfg)
	// NOTE: as lockctl reconcile: the Events' clientset is a copy with a
	// token bucket of its own, written in the background.
	rec := events.NewRecorder(newKube(b, cfg).EventsV1(), events.Options{Jobs: jobEvents})
	stopEvents := rec.Background(events.DefaultQueueCapacity, scheduler.DefaultWorkers)
	c, err := scheduler.NewController(cs, ns, map[string]scheduler.Clientset{job.DefaultCluster: cs},
		scheduler.Options{PodNamespace: ns, OnJobChange: rec.JobChanged})
	require.NoError(b, err)
	runCtx, stop := context.WithCancel(ctx)
	stopped := make(chan error, 1)
	defer profileCPU(b, fmt.Sprintf("cpu-lockctl-%d-%s.pprof", n, jobEvents))()
	start := time.Now()
	go func() { stopped <- c.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-stopped; err != nil {
			b.Logf("reconcile loop stopped: %v", err)
		}
	}()

	var out reconcileRun
	for _, w := range []struct {
		ch  <-chan time.Time
		dst *time.Duration
		cnt *atomic.Int32
	}{{allPending, &out.pending, &pendingN}, {allTerminal, &out.terminal, &terminalN}} {
		select {
		case at := <-w.ch:
			*w.dst = at.Sub(start)
		case <-ctx.Done():
			b.Fatalf("%d of %d jobs reached the state: %v", w.cnt.Load(), n, context.Cause(ctx))
		}
	}
	stopEvents(ctx) // the Events still queued are written, and counted
	out.counts = counter.Counts()
	out.lag = lag
	out.dropped = rec.Dropped()
	return out
}

// profileDir is where LOCKCTL_BENCH_PROFILE asks BenchmarkReconcile to
// write profiles of the benchmark process while lockctl's loop runs; ""
// writes none.
func profileDir() string { return os.Getenv("LOCKCTL_BENCH_PROFILE") }

// profileCPU starts a CPU profile into name in profileDir and returns what
// stops it.
func profileCPU(b *testing.B, name string) (stop func()) {
	if profileDir() == "" {
		return func() {}
	}
	f, err := os.Create(filepath.Join(profileDir(), name))
	require.NoError(b, err)
	if err := pprof.StartCPUProfile(f); err != nil {
		b.Logf("no CPU profile: %v", err)
		f.Close()
		return func() {}
	}
	return func() {
		pprof.StopCPUProfile()
		f.Close()
	}
}

// profileGoroutines writes every goroutine's stack into name in profileDir.
func profileGoroutines(b *testing.B, name string) {
	if profileDir() == "" {
		return
	}
	f, err := os.Create(filepath.Join(profileDir(), name))
	if err != nil {
		b.Logf("no goroutine profile: %v", err)
		return
	}
	defer f.Close()
	_ = pprof.Lookup("goroutine").WriteTo(f, 2)
}

// runCeiling does what the reconciler does for n jobs as directly as the
// API allows, with a client without rate limit and as many workers as the
// reconciler: create each job's pod bare and write its record pending, then
// write the record terminal once the pod succeeded (after the pending write
// returned, so a job's two writes never race each other).
func runCeiling(b *testing.B, env *testenv.Env, n int) reconcileRun {
	ctx := within(b, 45*time.Minute)
	ns := env.Namespace(b)
	setup := setupClient(b, env)
	jobs := submitJobs(ctx, b, setup, ns, n)
	records := make(map[string]*corev1.ConfigMap, n)
	for _, j := range jobs {
		cm, err := job.ToConfigMap(j)
		require.NoError(b, err)
		records[j.Name] = cm
	}
	var mu sync.Mutex
	pendingWritten := make(map[string]chan struct{}, n)
	for _, j := range jobs {
		pendingWritten[j.Name] = make(chan struct{})
	}
	finished := make(chan string, n)
	finishPods(ctx, setup, ns, func(p *corev1.Pod) { finished <- p.Name })

	var counter Counter
	cs := newClientset(b, counter.Wrap(withClientSettings(env.RESTConfig, unthrottled, 0)))
	write := func(name, state string) error {
		mu.Lock()
		cm := records[name].DeepCopy()
		mu.Unlock()
		if cm.Annotations == nil {
			cm.Annotations = map[string]string{}
		}
		cm.Annotations["bench.lockctl.dev/state"] = state
		out, err := cs.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
		if err != nil {
			return fmt.Errorf("write record %s %s: %w", name, state, err)
		}
		mu.Lock()
		records[name] = out
		mu.Unlock()
		return nil
	}
	todo := make(chan *job.Job)
	var pendingN, terminalN atomic.Int32
	allPending := make(chan time.Time, 1)
	allTerminal := make(chan time.Time, 1)
	errs := make(chan error, 2*scheduler.DefaultWorkers)
	start := time.Now()
	var wg sync.WaitGroup
	for range scheduler.DefaultWorkers {
		wg.Go(func() {
			for {
				select {
				case <-ctx.Done():
					return
				case j := <-todo:
					pod := job.NewPod(j, ns, "1")
					pod.Finalizers = nil
					if _, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{}); err != nil {
						errs <- err
						return
					}
					if err := write(j.Name, "pending"); err != nil {
						errs <- err
						return
					}
					close(pendingWritten[j.Name])
					if int(pendingN.Add(1)) == n {
						allPending <- time.Now()
					}
				case name := <-finished:
					select {
					case <-pendingWritten[name]:
					case <-ctx.Done():
						return
					}
					if err := write(name, "success"); err != nil {
						errs <- err
						return
					}
					if int(terminalN.Add(1)) == n {
						allTerminal <- time.Now()
						return
					}
				}
			}
		})
	}
	go func() {
		for _, j := range jobs {
			select {
			case todo <- j:
			case <-ctx.Done():
				return
			}
		}
	}()
	var out reconcileRun
	for _, w := range []struct {
		ch  <-chan time.Time
		dst *time.Duration
		cnt *atomic.Int32
	}{{allPending, &out.pending, &pendingN}, {allTerminal, &out.terminal, &terminalN}} {
		select {
		case at := <-w.ch:
			*w.dst = at.Sub(start)
		case err := <-errs:
			b.Fatal(err)
		case <-ctx.Done():
			b.Fatalf("ceiling: %d of %d: %v", w.cnt.Load(), n, context.Cause(ctx))
		}
	}
	out.counts = counter.Counts()
	return out
}
