package bench

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// queueSizes are the queue lengths BenchmarkLongQueue measures;
// LOCKCTL_BENCH_QUEUE names others ("2,10,50").
func queueSizes() []int {
	return envInts("LOCKCTL_BENCH_QUEUE", []int{2, 10, 50, 100, 200})
}

// queueRun is the outcome of one drain of a queue of n waiters.
type queueRun struct {
	n int
	// gaps are the hand-overs' gaps: from just before a holder releases to
	// the next one holding the lock.
	gaps Sample
	// recordBytes is the record's size with everyone queued.
	recordBytes int
	// watchBytes and otherBytes are what every client read during the
	// hand-overs, from watches and from other responses; requests what
	// they asked.
	watchBytes, otherBytes int64
	requests               Counts
	// apiCPU is the API server's CPU time during the hand-overs, 0 when
	// it could not be read.
	apiCPU time.Duration
	// wall is the hand-over phase.
	wall time.Duration
	// rounds is how many queues of n were drained, handed how many
	// hand-overs in all.
	rounds, handed int
}

func (r queueRun) handovers() int { return max(r.handed, 1) }

// add adds the figures of another drain of a queue of the same length.
func (r *queueRun) add(o queueRun) {
	r.n = o.n
	r.gaps = append(r.gaps, o.gaps...)
	r.recordBytes = max(r.recordBytes, o.recordBytes)
	r.watchBytes += o.watchBytes
	r.otherBytes += o.otherBytes
	r.apiCPU += o.apiCPU
	r.wall += o.wall
	r.rounds++
	r.handed += o.handed
	if r.requests.ByVerb == nil {
		r.requests = Counts{ByVerb: map[string]int{}, ByResource: map[string]int{}}
	}
	for v, k := range o.requests.ByVerb {
		r.requests.ByVerb[v] += k
	}
	for v, k := range o.requests.ByResource {
		r.requests.ByResource[v] += k
	}
	r.requests.Conflicts += o.requests.Conflicts
}

// BenchmarkLongQueue drains a queue of N waiters on one lock (N = 2, 10, 50,
// 100 and 200; LOCKCTL_BENCH_QUEUE picks others; a short queue again until 50
// hand-overs, LOCKCTL_BENCH_QUEUE_HANDOVERS), each a lock client with a
// clientset of its own, as separate processes would be, holding the lock
// LOCKCTL_BENCH_HOLD_MS (default 20) ms in fifo order. Per hand-over it
// reports the gap (p50, p99), the bytes every client read from its watch
// and from other responses, the requests, and the API server's CPU time
// (from /proc), with the record's size when everyone is queued. It draws
// the curves (WritePlot): queue-gap and queue-bytes.
func BenchmarkLongQueue(b *testing.B) {
	env := testenv.Get(b)
	hold := time.Duration(envInt("LOCKCTL_BENCH_HOLD_MS", 20)) * time.Millisecond
	var runs []queueRun
	b.Logf("load average at the start: %s", loadAverage())
	for _, n := range queueSizes() {
		b.Run(fmt.Sprintf("waiters=%d", n), func(b *testing.B) {
			var r queueRun
			for range b.N {
				// Short queues are drained again until they have handed
				// the lock over LOCKCTL_BENCH_QUEUE_HANDOVERS times
				// (default 50), so each length has a sample of its gaps.
				r = queueRun{}
				for r.handed < envInt("LOCKCTL_BENCH_QUEUE_HANDOVERS", 50) || r.rounds == 0 {
					r.add(drainQueue(b, env, n, hold))
				}
			}
			h := float64(r.handovers())
			report(b, "gap-", r.gaps)
			b.ReportMetric(float64(r.recordBytes)/1024, "record-KiB")
			b.ReportMetric(float64(r.watchBytes)/h/1024, "watch-KiB/handover")
			b.ReportMetric(float64(r.otherBytes)/h/1024, "other-KiB/handover")
			b.ReportMetric(float64(r.requests.Total())/h, "req/handover")
			b.ReportMetric(MS(r.apiCPU)/h, "apiserver-cpu-ms/handover")
			b.ReportMetric(0, "ns/op")
			b.Logf("%d waiters, hold %s, %d queues drained: gap %s; record %.1f KiB with all queued", n, hold, r.rounds, r.gaps, float64(r.recordBytes)/1024)
			b.Logf("  per hand-over: watch %.1f KiB, other %.1f KiB, %.1f requests (%s), API server CPU %.2f ms; phase %s",
				float64(r.watchBytes)/h/1024, float64(r.otherBytes)/h/1024, float64(r.requests.Total())/h, verbs(r.requests),
				MS(r.apiCPU)/h, r.wall.Round(time.Millisecond))
			runs = append(runs, r)
		})
	}
	b.Logf("load average at the end: %s", loadAverage())
	if len(runs) < 2 {
		return
	}
	var xs, p50, p99, watchKiB, recKiB []float64
	for _, r := range runs {
		xs = append(xs, float64(r.n))
		p50, p99 = append(p50, MS(r.gaps.Percentile(50))), append(p99, MS(r.gaps.Percentile(99)))
		watchKiB = append(watchKiB, float64(r.watchBytes)/float64(r.handovers())/1024)
		recKiB = append(recKiB, float64(r.recordBytes)/1024)
	}
	writePlot(b, "queue-gap", Plot{Title: "Hand-over gap by queue length", XLabel: "waiters", YLabel: "ms", LogX: true,
		Series: []Series{{Name: "p50", X: xs, Y: p50}, {Name: "p99", X: xs, Y: p99}}})
	writePlot(b, "queue-bytes", Plot{Title: "Bytes per hand-over by queue length", XLabel: "waiters", YLabel: "KiB", LogX: true,
		Series: []Series{{Name: "watch KiB per hand-over (all waiters)", X: xs, Y: watchKiB}, {Name: "record KiB, all queued", X: xs, Y: recKiB}}})
}

// writePlot writes p (WritePlot) and logs where.
func writePlot(b *testing.B, name string, p Plot) {
	b.Helper()
	path, err := WritePlot(name, p)
	require.NoError(b, err)
	if path != "" {
		b.Logf("plot: %s", path)
	}
}

func drainQueue(b *testing.B, env *testenv.Env, n int, hold time.Duration) queueRun {
	ctx := within(b, 20*time.Minute)
	ns := env.Namespace(b)
	const target = "production"
	var (
		bytes   ByteCounter
		counter Counter
	)
	cfg := counter.Wrap(bytes.Wrap(env.RESTConfig))
	clients := make([]*lock.Client, n)
	for i := range clients {
		cs := newKube(b, cfg)
		clients[i] = lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{})
	}
	ids := make([]record.Identity, n)
	for i := range ids {
		ids[i] = clitest.Identity(fmt.Sprintf("service-%03d", i), 1000+i)
	}

	// The first takes the lock; the others join its queue one after the
	// other (a joining burst is BenchmarkContention's), each once the one
	// before it is queued.
	first, err := clients[0].Acquire(ctx, lock.Request{Target: target, Identity: ids[0], Policy: record.PolicyFIFO})
	require.NoError(b, err)
	type acquired struct {
		i  int
		at time.Time
		h  *lock.Held
	}
	got := make(chan acquired, n)
	errs := make(chan error, n)
	var joined sync.WaitGroup
	for i := 1; i < n; i++ {
		joined.Add(1)
		go func() {
			var once sync.Once
			h, err := clients[i].Acquire(ctx, lock.Request{
				Target: target, Identity: ids[i], Policy: record.PolicyFIFO,
				Callbacks: lock.Callbacks{OnProgress: func(lock.Progress) { once.Do(joined.Done) }},
			})
			once.Do(joined.Done)
			if err != nil {
				errs <- fmt.Errorf("%s: %w", ids[i], err)
				return
			}
			got <- acquired{i: i, at: time.Now(), h: h}
		}()
		joined.Wait()
		if i%50 == 0 {
			b.Logf("  %s: %d queued", time.Now().Format(time.TimeOnly), i)
		}
	}
	cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, record.Name(target), metav1.GetOptions{})
	require.NoError(b, err)
	run := queueRun{n: n, recordBytes: len(cm.Annotations[record.RecordAnnotation]), handed: n - 1}

	apiPID := env.PID("kube-apiserver")
	cpu0 := processCPU(apiPID)
	w0, o0, c0 := bytes.Watch(), bytes.Other(), counter.Counts()
	start := time.Now()
	holder, holderID := first, ids[0]
	holderClient := clients[0]
	for k := 1; k < n; k++ {
		time.Sleep(hold)
		released := time.Now()
		_, err := holderClient.ReleaseHeld(ctx, holder, lock.ReleaseOptions{})
		require.NoError(b, err, "release by %s", holderID)
		var a acquired
		select {
		case a = <-got:
		case err := <-errs:
			b.Fatal(err)
		case <-ctx.Done():
			b.Fatal(context.Cause(ctx))
		}
		run.gaps = append(run.gaps, a.at.Sub(released))
		holder, holderID, holderClient = a.h, ids[a.i], clients[a.i]
	}
	time.Sleep(hold)
	_, err = holderClient.ReleaseHeld(ctx, holder, lock.ReleaseOptions{})
	require.NoError(b, err)
	run.wall = time.Since(start)
	run.watchBytes, run.otherBytes = bytes.Watch()-w0, bytes.Other()-o0
	run.requests = counter.Counts().Sub(c0)
	if cpu1 := processCPU(apiPID); cpu0 >= 0 && cpu1 >= 0 {
		run.apiCPU = cpu1 - cpu0
	}
	select {
	case err := <-errs:
		b.Fatal(err)
	default:
	}
	return run
}

// processCPU returns the user and system CPU time of process pid so far,
// from /proc/PID/stat; -1 when it cannot be read.
func processCPU(pid int) time.Duration {
	if pid <= 0 {
		return -1
	}
	raw, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return -1
	}
	d, err := parseStatCPU(string(raw))
	if err != nil {
		return -1
	}
	return d
}

// clockTicks is USER_HZ, the unit of /proc/PID/stat's times: 100 on every
// Linux architecture Go builds for.
const clockTicks = 100

// parseStatCPU reads utime and stime (fields 14 and 15) from a
// /proc/PID/stat line; the command name, field 2, may hold spaces and
// parentheses, so the fields are counted after its last ')'.
func parseStatCPU(stat string) (time.Duration, error) {
	i := strings.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, errors.New("no command name")
	}
	f := strings.Fields(stat[i+1:])
	// f[0] is field 3 (state): utime is field 14, f[11].
	if len(f) < 13 {
		return 0, fmt.Errorf("%d fields after the command name", len(f))
	}
	var ticks int64
	for _, s := range f[11:13] {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			return 0, err
		}
		ticks += n
	}
	return time.Duration(ticks) * time.Second / clockTicks, nil
}
