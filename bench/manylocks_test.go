package bench

import (
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
)

// lockCounts are the numbers of locks BenchmarkManyLocks measures;
// LOCKCTL_BENCH_LOCKS names one instead.
func lockCounts() []int {
	if n := envInt("LOCKCTL_BENCH_LOCKS", 0); n > 0 {
		return []int{n}
	}
	return []int{10, 1000, 5000}
}

// manyLocksRun is the outcome of one namespace of l locks.
type manyLocksRun struct {
	l int
	// acqReq and relReq are the requests of one acquire and one release of
	// a lock of its own, through the library; acquire and release their
	// time.
	acqReq, relReq   float64
	acquire, release Sample
	// cliAcquire and cliRelease are the wall times of the lockctl
	// processes doing the same.
	cliAcquire, cliRelease Sample
	// status is `lockctl status` of every lock.
	status startCosts
}

// BenchmarkManyLocks fills one lock namespace with L held locks (L = 10,
// 1,000 and 5,000; LOCKCTL_BENCH_LOCKS picks one) and measures, at each L:
// the requests and time of one acquire and one release of another lock,
// through the library (LOCKCTL_BENCH_MANY_OPS pairs, default 20) and as
// lockctl processes (5 pairs), and `lockctl status` of every lock under GNU
// time (wall, CPU, peak RSS; 5 runs). It draws the curves (WritePlot):
// locks-status and locks-acquire.
func BenchmarkManyLocks(b *testing.B) {
	if _, err := os.Stat(timeBinary); err != nil {
		b.Skipf("needs GNU time at %s to measure a child's peak RSS", timeBinary)
	}
	env := testenv.Get(b)
	var runs []manyLocksRun
	b.Logf("load average at the start: %s", loadAverage())
	for _, l := range lockCounts() {
		b.Run(fmt.Sprintf("locks=%d", l), func(b *testing.B) {
			var r manyLocksRun
			for range b.N {
				r = manyLocks(b, env, l)
			}
			report(b, "acquire-", r.acquire)
			report(b, "release-", r.release)
			b.ReportMetric(r.acqReq, "req/acquire")
			b.ReportMetric(r.relReq, "req/release")
			b.ReportMetric(MS(r.cliAcquire.Percentile(50)), "cli-acquire-p50-ms")
			b.ReportMetric(MS(r.cliRelease.Percentile(50)), "cli-release-p50-ms")
			b.ReportMetric(MS(r.status.wall.Percentile(50)), "status-p50-ms")
			b.ReportMetric(r.status.rss.median(), "status-rss-MiB")
			b.ReportMetric(0, "ns/op")
			b.Logf("%d locks: acquire %s (%.1f requests), release %s (%.1f requests)", l, r.acquire, r.acqReq, r.release, r.relReq)
			b.Logf("  lockctl acquire %s, release %s", r.cliAcquire, r.cliRelease)
			b.Logf("  lockctl status: %s", &r.status)
			runs = append(runs, r)
		})
	}
	b.Logf("load average at the end: %s", loadAverage())
	if len(runs) < 2 {
		return
	}
	var xs, status, rss, acq, rel, cliAcq []float64
	for _, r := range runs {
		xs = append(xs, float64(r.l))
		status, rss = append(status, MS(r.status.wall.Percentile(50))), append(rss, r.status.rss.median())
		acq, rel = append(acq, MS(r.acquire.Percentile(50))), append(rel, MS(r.release.Percentile(50)))
		cliAcq = append(cliAcq, MS(r.cliAcquire.Percentile(50)))
	}
	writePlot(b, "locks-status", Plot{Title: "lockctl status by number of locks", XLabel: "locks in the namespace", YLabel: "ms / MiB", LogX: true,
		Series: []Series{{Name: "wall p50 (ms)", X: xs, Y: status}, {Name: "peak RSS (MiB)", X: xs, Y: rss}}})
	writePlot(b, "locks-acquire", Plot{Title: "One acquire and release by number of locks", XLabel: "locks in the namespace", YLabel: "ms (p50)", LogX: true,
		Series: []Series{{Name: "library acquire", X: xs, Y: acq}, {Name: "library release", X: xs, Y: rel}, {Name: "lockctl acquire process", X: xs, Y: cliAcq}}})
}

func manyLocks(b *testing.B, env *testenv.Env, l int) manyLocksRun {
	ctx := within(b, 30*time.Minute)
	ns := env.Namespace(b)
	fillLocks(b, env, ns, l)

	var counter Counter
	c := newLockClient(b, counter.Wrap(env.RESTConfig), ns)
	r := manyLocksRun{l: l}
	ops := envInt("LOCKCTL_BENCH_MANY_OPS", 20)
	var acqReq, relReq int
	for i := range ops {
		target, id := fmt.Sprintf("probe-%03d", i), clitest.Identity("probe", i+1)
		c0 := counter.Counts()
		start := time.Now()
		h, err := c.Acquire(ctx, lock.Request{Target: target, Identity: id})
		require.NoError(b, err)
		r.acquire = append(r.acquire, time.Since(start))
		c1 := counter.Counts()
		start = time.Now()
		_, err = c.ReleaseHeld(ctx, h, lock.ReleaseOptions{})
		require.NoError(b, err)
		r.release = append(r.release, time.Since(start))
		acqReq += c1.Sub(c0).Total()
		relReq += counter.Counts().Sub(c1).Total()
	}
	r.acqReq, r.relReq = float64(acqReq)/float64(ops), float64(relReq)/float64(ops)

	environ := runEnviron(b, env.Kubeconfig, ns)
	bin := clitest.Binary(b)
	for i := range 5 {
		target := fmt.Sprintf("cli-%d", i)
		idArgs := []string{"--owner", "bench", "--repo", "many", "--branch", "main", "--build", "1", "-q"}
		r.cliAcquire = append(r.cliAcquire, timeStart(b, environ, bin, append([]string{"acquire", target}, idArgs...)...).wall)
		r.cliRelease = append(r.cliRelease, timeStart(b, environ, bin, append([]string{"release", target}, idArgs...)...).wall)
	}
	for range 5 {
		r.status.add(timeStart(b, environ, bin, "status"))
	}
	out := clitest.Run(b, time.Minute, b.TempDir(), environ[2:], "status", "-o", "name")
	require.Zero(b, out.Code, out.Stderr)
	require.Equal(b, l, strings.Count(out.Stdout, "\n"), "status lists every held lock")
	return r
}

// fillLocks makes l held locks in ns, eight writers at a time.
func fillLocks(b *testing.B, env *testenv.Env, ns string, l int) {
	b.Helper()
	ctx := within(b, 30*time.Minute)
	start := time.Now()
	const writers = 8
	next := make(chan int)
	errs := make(chan error, writers)
	var wg sync.WaitGroup
	for range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			c := newLockClient(b, env.RESTConfig, ns)
			for i := range next {
				_, err := c.Acquire(ctx, lock.Request{Target: fmt.Sprintf("svc-%05d", i), Identity: clitest.Identity(fmt.Sprintf("svc-%05d", i), 1), TTL: 24 * time.Hour})
				if err != nil {
					errs <- err
					return
				}
			}
		}()
	}
	for i := range l {
		select {
		case next <- i:
		case err := <-errs:
			b.Fatal(err)
		}
	}
	close(next)
	wg.Wait()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	b.Logf("made %d locks in %s", l, time.Since(start).Round(time.Millisecond))
}

// BenchmarkStatusAllNamespaces measures `lockctl status -A` over
// LOCKCTL_BENCH_NAMESPACES namespaces (default 500) with one held lock
// each: wall, CPU and peak RSS of 5 runs under GNU time, and how many
// locks it listed (every lock of the control plane, those of other
// benchmarks included).
func BenchmarkStatusAllNamespaces(b *testing.B) {
	if _, err := os.Stat(timeBinary); err != nil {
		b.Skipf("needs GNU time at %s to measure a child's peak RSS", timeBinary)
	}
	env := testenv.Get(b)
	n := envInt("LOCKCTL_BENCH_NAMESPACES", 500)
	ctx := within(b, 30*time.Minute)
	var costs startCosts
	listed := 0
	for range b.N {
		start := time.Now()
		c := newKube(b, env.RESTConfig)
		for i := range n {
			ns := env.Namespace(b)
			l := lock.New(c.CoreV1(), c.CoreV1(), ns, clock.RealClock{}, lock.Options{})
			_, err := l.Acquire(ctx, lock.Request{Target: "production", Identity: clitest.Identity(fmt.Sprintf("ns-%03d", i), 1), TTL: 24 * time.Hour})
			require.NoError(b, err)
		}
		b.Logf("made %d namespaces with a lock each in %s", n, time.Since(start).Round(time.Millisecond))
		environ := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "KUBECONFIG=" + env.Kubeconfig}
		b.Logf("load average: %s", loadAverage())
		for range 5 {
			costs.add(timeStart(b, environ, clitest.Binary(b), "status", "-A"))
		}
		out := clitest.Run(b, time.Minute, b.TempDir(), environ[2:], "status", "-A", "-o", "name")
		require.Zero(b, out.Code, out.Stderr)
		listed = strings.Count(out.Stdout, "\n")
	}
	b.ReportMetric(MS(costs.wall.Percentile(50)), "status-A-p50-ms")
	b.ReportMetric(costs.rss.median(), "status-A-rss-MiB")
	b.ReportMetric(float64(listed), "locks-listed")
	b.ReportMetric(0, "ns/op")
	b.Logf("lockctl status -A over %d namespaces (%d locks listed): %s", n, listed, &costs)
}
