package bench

import (
	"context"
	"crypto/sha1" //nolint:gosec // commit IDs of the sample records, not security
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/lockctl/lockctl/events"
	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
)

// BenchmarkCapacity measures what job records and locks cost as they are
// stored, and what a reconciler costs as records pile up, for the capacity
// page (docs/capacity.md):
//
//   - bytes per finished job record, per lock and per finished job pod:
//     their protobuf encoding as the API server stores them in etcd (Size of
//     the object read back, managedFields included) and, for job records,
//     the growth of etcd's database in use (etcd_mvcc_db_total_size_in_use_in_bytes)
//     over N records written once each;
//   - a full relist of the N records (paginated by 500, as informers list),
//     timed;
//   - the `lockctl reconcile` binary's resident set (now and peak) and Go
//     heap once its caches hold no record and N records, and the time from
//     its start to ready (/readyz: its caches filled);
//   - the watches and lists one reconciler opens, one `lockctl run -- true`
//     and one `lockctl acquire` that waits, counted by a proxy: the fan-out.
//
// N is LOCKCTL_BENCH_CAPACITY_RECORDS (default 10000; 50000 fits on a
// machine of 2 cores, in a few minutes). The records are finished jobs, as
// retention keeps them: written once, with a pod template, refs and a
// status as the reconciler leaves them.
func BenchmarkCapacity(b *testing.B) {
	env := testenv.Get(b)
	n := envInt("LOCKCTL_BENCH_CAPACITY_RECORDS", 10000)
	var r capacityRun
	for range b.N {
		r = measureCapacity(b, env, n)
	}
	const mib = 1 << 20
	b.ReportMetric(r.recordProto, "record-proto-B")
	b.ReportMetric(r.recordEtcd, "record-etcd-B")
	b.ReportMetric(r.lockProto, "lock-proto-B")
	b.ReportMetric(r.podProto, "pod-proto-B")
	b.ReportMetric(r.eventProto, "event-proto-B")
	b.ReportMetric(r.relist.Seconds(), "relist-s")
	b.ReportMetric(float64(r.empty.rss)/mib, "rss-0-MiB")
	b.ReportMetric(float64(r.full.rss)/mib, "rss-N-MiB")
	b.ReportMetric(float64(r.full.hwm)/mib, "peak-rss-N-MiB")
	b.ReportMetric(float64(r.full.rss-r.empty.rss)/float64(n), "rss-B/record")
	b.ReportMetric(r.full.ready.Seconds(), "ready-N-s")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d finished job records in one namespace (control plane %s, etcd %s)", n, serverVersion(env.Client), testenv.EtcdVersion)
	b.Logf("  job record: %.0f B protobuf as stored (%.0f B JSON, %.0f B of it data); etcd in use grew %.1f MiB, %.0f B per record",
		r.recordProto, r.recordJSON, r.recordData, float64(r.etcdGrowth)/mib, r.recordEtcd)
	b.Logf("  etcd database: %.1f MiB allocated, %.1f MiB in use after the records", float64(r.etcdAfter.size)/mib, float64(r.etcdAfter.inUse)/mib)
	b.Logf("  lock (one holder): %.0f B protobuf, its record annotation %.0f B, of which the holder's claim %.0f B (a waiter adds about one claim)",
		r.lockProto, r.lockAnnotation, r.lockClaim)
	b.Logf("  finished job pod: %.0f B protobuf; job Event (pending → success): %.0f B protobuf", r.podProto, r.eventProto)
	b.Logf("  full relist of %d records, 500 a page: %s (%d pages)", n, r.relist.Round(time.Millisecond), r.pages)
	for _, p := range []struct {
		name string
		s    reconcilerSample
	}{{"no record", r.empty}, {fmt.Sprintf("%d records", n), r.full}} {
		b.Logf("  lockctl reconcile over %s: ready after %s; RSS %.1f MiB (peak %.1f); Go heap in use %.1f MiB",
			p.name, p.s.ready.Round(time.Millisecond), float64(p.s.rss)/mib, float64(p.s.hwm)/mib, float64(p.s.heapInuse)/mib)
	}
	b.Logf("  RSS per record: %.0f B", float64(r.full.rss-r.empty.rss)/float64(n))
	b.Logf("  watches opened: reconcile %d (lists %d), run -- true %d, acquire waiting %d",
		r.full.watches, r.full.lists, r.runWatches, r.waitWatches)
}

// capacityRun is what BenchmarkCapacity measured.
type capacityRun struct {
	recordProto, recordJSON, recordData  float64
	etcdBefore, etcdAfter                etcdSize
	etcdGrowth                           int64
	recordEtcd                           float64
	lockProto, lockAnnotation, lockClaim float64
	podProto, eventProto                 float64
	relist                               time.Duration
	pages                                int
	empty, full                          reconcilerSample
	runWatches, waitWatches              int
}

func measureCapacity(b *testing.B, env *testenv.Env, n int) capacityRun {
	ctx := within(b, 60*time.Minute)
	setup := setupClient(b, env)
	var r capacityRun

	r.empty = sampleReconciler(ctx, b, env, env.Namespace(b))

	ns := env.Namespace(b)
	r.etcdBefore = readEtcdSize(ctx, b, env)
	storeFinishedJobs(ctx, b, setup, ns, n)
	// NOTE: etcd commits its backend every 100 ms; the size in use is
	// read once the last batch is surely in.
	time.Sleep(time.Second)
	r.etcdAfter = readEtcdSize(ctx, b, env)
	r.etcdGrowth = r.etcdAfter.inUse - r.etcdBefore.inUse
	r.recordEtcd = float64(r.etcdGrowth) / float64(n)

	start := time.Now()
	var items []corev1.ConfigMap
	opts := metav1.ListOptions{LabelSelector: job.Selector, Limit: 500}
	for {
		list, err := setup.CoreV1().ConfigMaps(ns).List(ctx, opts)
		require.NoError(b, err)
		items = append(items, list.Items...)
		r.pages++
		if list.Continue == "" {
			break
		}
		opts.Continue = list.Continue
	}
	r.relist = time.Since(start)
	require.Len(b, items, n, "every record listed")
	var proto, js, data int
	for i := range items {
		proto += items[i].Size()
		raw, err := json.Marshal(&items[i])
		require.NoError(b, err)
		js += len(raw)
		for _, v := range items[i].Data {
			data += len(v)
		}
	}
	r.recordProto, r.recordJSON, r.recordData = float64(proto)/float64(n), float64(js)/float64(n), float64(data)/float64(n)

	r.lockProto, r.lockAnnotation, r.lockClaim = measureLocks(ctx, b, env, ns, 20)
	r.podProto = measurePods(ctx, b, setup, ns, 20)
	r.eventProto = measureEvents(ctx, b, setup, ns, items[:20])

	proxy := startCountingProxy(b, env)
	r.full = sampleReconcilerVia(ctx, b, proxy, ns)
	r.runWatches, r.waitWatches = countProcessWatches(ctx, b, env, proxy, ns)
	return r
}

// finishedJob is a presubmit as retention keeps it: run, succeeded, its
// pod gone or going.
func finishedJob(i int, at time.Time) *job.Job {
	sha := func(seed int) string { return fmt.Sprintf("%x", sha1.Sum([]byte(strconv.Itoa(seed)))) }
	start := metav1.NewMicroTime(at.Add(-10 * time.Minute))
	pending := metav1.NewTime(at.Add(-9 * time.Minute))
	done := metav1.NewTime(at)
	name := fmt.Sprintf("pull-web-unit-%06d", i)
	j := &job.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: job.JobSpec{
			Job:  fmt.Sprintf("pull-web-%d", i%20),
			Type: job.Presubmit,
			Refs: &job.Refs{Org: "acme", Repo: "web", BaseRef: "main", BaseSHA: sha(i),
				Pulls: []job.Pull{{Number: 1000 + i%500, SHA: sha(i + 1)}}},
			PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{
				Name:    "main",
				Image:   "golang:1.26",
				Command: []string{"sh", "-c", "make lint test"},
				Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{
					corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi"),
				}},
			}}},
		},
		Status: job.JobStatus{
			State: job.Success, Description: "job succeeded",
			StartTime: &start, PendingTime: &pending, CompletionTime: &done,
			PodName: name, BuildID: strconv.Itoa(100000 + i),
			URL: "https://ci.acme.test/view/pull-web-unit/" + strconv.Itoa(100000+i),
		},
	}
	job.Default(j)
	return j
}

// storeFinishedJobs writes n finished job records into ns, eight at a time,
// each with one create (one revision in etcd, as a record settles once
// compaction has dropped its earlier versions).
func storeFinishedJobs(ctx context.Context, b *testing.B, cs kubernetes.Interface, ns string, n int) {
	b.Helper()
	now := time.Now()
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	for w := range 8 {
		wg.Go(func() {
			for i := w; i < n; i += 8 {
				cm, err := job.ToConfigMap(finishedJob(i, now))
				if err == nil {
					cm.Namespace = ns
					_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
				}
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
}

// etcdSize is etcd's database size, allocated and in use.
type etcdSize struct{ size, inUse int64 }

func readEtcdSize(ctx context.Context, b *testing.B, env *testenv.Env) etcdSize {
	b.Helper()
	v, err := scrapeValues(ctx, http.DefaultClient, env.EtcdURL+"/metrics", "etcd_mvcc_db_total_size_in_bytes", "etcd_mvcc_db_total_size_in_use_in_bytes")
	require.NoError(b, err)
	out := etcdSize{size: int64(v["etcd_mvcc_db_total_size_in_bytes"]), inUse: int64(v["etcd_mvcc_db_total_size_in_use_in_bytes"])}
	require.Positive(b, out.inUse, "etcd reports its database size in use")
	return out
}

// measureLocks takes k locks, one holder each, and returns the mean
// protobuf size of their ConfigMaps, of their record annotation, and of
// the holder's claim in it.
func measureLocks(ctx context.Context, b *testing.B, env *testenv.Env, ns string, k int) (proto, annotation, claim float64) {
	b.Helper()
	l := newLockClient(b, env.RESTConfig, ns)
	for i := range k {
		target := fmt.Sprintf("team-%02d-prod", i)
		_, err := l.Acquire(ctx, lock.Request{Target: target, Identity: clitest.Identity(fmt.Sprintf("service-%02d", i), 1000+i), TTL: time.Hour})
		require.NoError(b, err)
		cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, record.Name(target), metav1.GetOptions{})
		require.NoError(b, err)
		proto += float64(cm.Size())
		raw := cm.Annotations[record.RecordAnnotation]
		annotation += float64(len(raw))
		var rec struct {
			Holder json.RawMessage `json:"holder"`
		}
		require.NoError(b, json.Unmarshal([]byte(raw), &rec))
		claim += float64(len(rec.Holder))
	}
	return proto / float64(k), annotation / float64(k), claim / float64(k)
}

// measurePods creates k job pods that kwok runs to Succeeded and returns
// their mean protobuf size once finished.
func measurePods(ctx context.Context, b *testing.B, cs kubernetes.Interface, ns string, k int) float64 {
	b.Helper()
	now := time.Now()
	for i := range k {
		pod := job.NewPod(finishedJob(i, now), ns, strconv.Itoa(i+1))
		pod.Spec.NodeName = testenv.NodeName
		if pod.Annotations == nil {
			pod.Annotations = map[string]string{}
		}
		pod.Annotations[testenv.AnnotationExitCode] = "0"
		_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(b, err)
	}
	var total int
	require.Eventually(b, func() bool {
		list, err := cs.CoreV1().Pods(ns).List(ctx, metav1.ListOptions{})
		if err != nil || len(list.Items) < k {
			return false
		}
		total = 0
		for i := range list.Items {
			if list.Items[i].Status.Phase != corev1.PodSucceeded {
				return false
			}
			total += list.Items[i].Size()
		}
		return true
	}, 2*time.Minute, 200*time.Millisecond, "kwok finishes the pods")
	return float64(total) / float64(k)
}

// reconcilerSample is one lockctl reconcile process over a namespace, once
// ready.
type reconcilerSample struct {
	ready          time.Duration
	rss, hwm       int64
	heapInuse      int64
	watches, lists int
}

// sampleReconciler runs `lockctl reconcile` over ns straight to the API
// server.
func sampleReconciler(ctx context.Context, b *testing.B, env *testenv.Env, ns string) reconcilerSample {
	return runAndSample(ctx, b, env.Kubeconfig, ns, nil)
}

// sampleReconcilerVia runs `lockctl reconcile` over ns through the counting
// proxy and counts the watches and lists it opens.
func sampleReconcilerVia(ctx context.Context, b *testing.B, proxy *countingProxy, ns string) reconcilerSample {
	before := proxy.Counts()
	s := runAndSample(ctx, b, proxy.Kubeconfig, ns, nil)
	d := proxy.Counts().Sub(before)
	s.watches = d.ByVerb[VerbWatch]
	s.lists = d.ByResource["get configmaps"] + d.ByResource["get pods"] + d.ByResource["get nodes"]
	return s
}

// runAndSample starts `lockctl reconcile` (the foreground loop, defaults
// otherwise) over ns, waits until /readyz answers 200 (its caches filled),
// lets it settle for two seconds, samples its memory, and stops it.
func runAndSample(ctx context.Context, b *testing.B, kubeconfig, ns string, extra []string) reconcilerSample {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(b, err)
	addr := ln.Addr().String()
	require.NoError(b, ln.Close())
	args := append([]string{"reconcile", "-n", ns, "--metrics-addr", addr}, extra...)
	cmd := exec.CommandContext(ctx, clitest.Binary(b), args...)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "KUBECONFIG=" + kubeconfig}
	var stderr clitest.SyncBuffer
	cmd.Stderr = &stderr
	require.NoError(b, cmd.Start())
	start := time.Now()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	client := &http.Client{Timeout: 2 * time.Second}
	var s reconcilerSample
	for s.ready == 0 {
		select {
		case err := <-exited:
			b.Fatalf("lockctl reconcile exited early: %v: %s", err, clitest.LastLines(stderr.String(), 5))
		case <-ctx.Done():
			_ = cmd.Process.Kill()
			b.Fatalf("lockctl reconcile never ready: %v", context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
		if resp, err := client.Get("http://" + addr + "/readyz"); err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				s.ready = time.Since(start)
			}
		}
	}
	time.Sleep(2 * time.Second)
	s.rss, err = procStatus(cmd.Process.Pid, "VmRSS:")
	require.NoError(b, err)
	s.hwm, err = procStatus(cmd.Process.Pid, "VmHWM:")
	require.NoError(b, err)
	if _, inuse, err := goHeap(ctx, client, "http://"+addr+"/metrics"); err == nil {
		s.heapInuse = inuse
	}
	_ = cmd.Process.Signal(os.Interrupt)
	if err := <-exited; err != nil {
		b.Logf("lockctl reconcile stopped: %v", err)
	}
	return s
}

// procStatus reads a size in kB from /proc/PID/status (VmRSS:, VmHWM:).
func procStatus(pid int, key string) (int64, error) {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, key); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), 10, 64)
			return kb << 10, err
		}
	}
	return 0, fmt.Errorf("no %s in /proc/%d/status", key, pid)
}

// countProcessWatches counts the watches opened by one uncontended
// `lockctl run -- true` and by one `lockctl acquire` that waits two seconds
// for a lock held by another, both through the proxy.
func countProcessWatches(ctx context.Context, b *testing.B, env *testenv.Env, proxy *countingProxy, ns string) (run, wait int) {
	b.Helper()
	environ := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "KUBECONFIG=" + proxy.Kubeconfig,
		"LOCKCTL_LOCK_NAMESPACE=" + ns, "LOCKCTL_NAMESPACE=" + ns}
	watches := func(args ...string) int {
		before := proxy.Counts()
		cmd := exec.CommandContext(ctx, clitest.Binary(b), args...)
		cmd.Env = environ
		_ = cmd.Run()
		return proxy.Counts().Sub(before).ByVerb[VerbWatch]
	}
	run = watches("run", "--lock", "capacity-run", "-q", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1", "--", "true")
	l := newLockClient(b, env.RESTConfig, ns)
	held, err := l.Acquire(ctx, lock.Request{Target: "capacity-wait", Identity: clitest.Identity("holder", 1), TTL: time.Hour})
	require.NoError(b, err)
	wait = watches("acquire", "capacity-wait", "--timeout", "2s", "-q", "--owner", "acme", "--repo", "api", "--branch", "main", "--build", "1")
	_, err = l.ReleaseHeld(ctx, held, lock.ReleaseOptions{})
	require.NoError(b, err)
	return run, wait
}

// measureEvents records the Event of each record's last move (pending →
// success), as lockctl reconcile does, and returns their mean protobuf
// size.
func measureEvents(ctx context.Context, b *testing.B, cs kubernetes.Interface, ns string, records []corev1.ConfigMap) float64 {
	b.Helper()
	rec := events.NewRecorder(kubetest.EventsV1(cs.EventsV1()), events.Options{})
	for i := range records {
		after, err := job.FromConfigMap(&records[i])
		require.NoError(b, err)
		before := after.DeepCopy()
		before.Status.State, before.Status.CompletionTime = job.Pending, nil
		rec.JobChanged(ctx, before, after)
	}
	list, err := cs.EventsV1().Events(ns).List(ctx, metav1.ListOptions{})
	require.NoError(b, err)
	require.Len(b, list.Items, len(records), "one Event per record")
	total := 0
	for i := range list.Items {
		total += list.Items[i].Size()
	}
	return float64(total) / float64(len(list.Items))
}
