package bench

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// fleetClients are one process's lock clients of the fleet's clusters,
// each with clients of its own counted by one Counter.
type fleetClients struct {
	locks   []*lock.Client
	counter *Counter
}

// newFleetClients returns lock clients of contexts' clusters in ns, as
// lockctl --contexts builds them (Options.Context), each with clientsets
// of its own.
func newFleetClients(b testing.TB, fl *testenv.Fleet, ns string, contexts ...string) fleetClients {
	b.Helper()
	fc := fleetClients{counter: &Counter{}}
	for _, name := range contexts {
		cs := newKube(b, fc.counter.Wrap(fl.Env(name).RESTConfig))
		fc.locks = append(fc.locks, lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{Context: name}))
	}
	return fc
}

// releaseAll gives up held as lockctl run does: each cluster's lock at
// once.
func releaseAll(ctx context.Context, b testing.TB, locks []*lock.Client, held []*lock.Held) {
	var wg sync.WaitGroup
	for _, h := range held {
		i := slices.IndexFunc(locks, func(c *lock.Client) bool { return c.Context() == h.Context })
		wg.Go(func() {
			_, err := locks[i].ReleaseHeld(ctx, h, lock.ReleaseOptions{})
			assert.NoError(b, err, "release %s", h.Where())
		})
	}
	wg.Wait()
}

// acquireQueued starts AcquireAcross of target in every cluster of fc for
// id and returns once it waits in a queue (or holds), with the channel of
// its result.
func acquireQueued(ctx context.Context, b testing.TB, fc fleetClients, target string, id record.Identity) <-chan clitest.Acquisition {
	b.Helper()
	queued := make(chan struct{})
	var once sync.Once
	parts := lock.PartsFor(fc.locks, lock.Request{Identity: id, Callbacks: lock.Callbacks{OnProgress: func(lock.Progress) { once.Do(func() { close(queued) }) }}}, []string{target})
	done := make(chan clitest.Acquisition, 1)
	go func() {
		held, err := lock.AcquireAcross(ctx, parts)
		var h *lock.Held
		if len(held) > 0 {
			h = held[0]
		}
		done <- clitest.Acquisition{At: time.Now(), Held: h, Err: err, All: held}
	}()
	select {
	case <-queued:
	case r := <-done:
		require.NoError(b, r.Err, "%s not queued", id)
		again := make(chan clitest.Acquisition, 1)
		again <- r
		return again
	case <-ctx.Done():
		b.Fatalf("%s not queued: %v", id, context.Cause(ctx))
	}
	return done
}

// BenchmarkClusters measures a hold across three clusters (the fleet:
// three control planes, each its own etcd and kube-apiserver) beside a
// hold in one, in one run, the two interleaved so that both meet the same
// load:
//
//   - handover: from just before the holder releases (each cluster's lock
//     at once, as lockctl run does) until the next waiter holds every
//     lock; goal p50 at most 1.5x and p99 at most 2x one cluster's. One
//     cluster's is measured alone, and beside the same hand-over in the
//     other two clusters at once: the three control planes share this
//     machine's cores, so a hold across them does three times the API
//     work on the same CPUs;
//   - acquire: free locks taken by one AcquireAcross of three clusters
//     (their requests overlapping) against three Acquires one after the
//     other, with warm clients; and the API requests of each;
//   - acquire-cli: the same with the lockctl binary, as pipelines run it:
//     three `acquire --context X` processes against one `acquire
//     --contexts`.
//
// LOCKCTL_BENCH_CLUSTER_ROUNDS sets the number of each (default 100),
// LOCKCTL_BENCH_CLUSTER_CLI_ROUNDS that of acquire-cli (default 20).
func BenchmarkClusters(b *testing.B) {
	fl := testenv.GetFleet(b)
	n := envInt("LOCKCTL_BENCH_CLUSTER_ROUNDS", 100)
	b.Run("handover", func(b *testing.B) {
		var one, three, beside Sample
		for range b.N {
			o, t, s := clusterHandovers(b, fl, n)
			one, three, beside = append(one, o...), append(three, t...), append(beside, s...)
		}
		report(b, "one-", one)
		report(b, "three-", three)
		report(b, "beside-", beside)
		b.ReportMetric(ratio(three.Percentile(50), one.Percentile(50)), "p50-ratio")
		b.ReportMetric(ratio(three.Percentile(99), one.Percentile(99)), "p99-ratio")
		b.ReportMetric(ratio(three.Percentile(50), beside.Percentile(50)), "p50-ratio-beside")
		b.ReportMetric(ratio(three.Percentile(99), beside.Percentile(99)), "p99-ratio-beside")
		b.ReportMetric(0, "ns/op")
		b.Logf("hand-over, release -> next waiter holds: one cluster alone %s; three clusters %s (p50 %.2fx, p99 %.2fx)",
			one, three, ratio(three.Percentile(50), one.Percentile(50)), ratio(three.Percentile(99), one.Percentile(99)))
		b.Logf("  one cluster with the other two handing over at once (the same API work) %s: three clusters p50 %.2fx, p99 %.2fx of it",
			beside, ratio(three.Percentile(50), beside.Percentile(50)), ratio(three.Percentile(99), beside.Percentile(99)))
	})
	b.Run("acquire", func(b *testing.B) {
		var seq, across Sample
		var seqReqs, acrossReqs Counts
		for range b.N {
			s, a, sr, ar := clusterAcquires(b, fl, n)
			seq, across = append(seq, s...), append(across, a...)
			seqReqs, acrossReqs = sr, ar
		}
		report(b, "sequential-", seq)
		report(b, "across-", across)
		b.ReportMetric(ratio(across.Percentile(50), seq.Percentile(50)), "p50-ratio")
		b.ReportMetric(float64(seqReqs.Total())/float64(n), "sequential-requests/acquire")
		b.ReportMetric(float64(acrossReqs.Total())/float64(n), "across-requests/acquire")
		b.ReportMetric(0, "ns/op")
		b.Logf("three free locks, three Acquires one after the other %s; one AcquireAcross %s; p50 %.2fx", seq, across, ratio(across.Percentile(50), seq.Percentile(50)))
		b.Logf("  requests per acquire of the three: one after the other %.2f %v; across %.2f %v",
			float64(seqReqs.Total())/float64(n), seqReqs.ByResource, float64(acrossReqs.Total())/float64(n), acrossReqs.ByResource)
	})
	b.Run("acquire-cli", func(b *testing.B) {
		rounds := envInt("LOCKCTL_BENCH_CLUSTER_CLI_ROUNDS", 20)
		var seq, across Sample
		for range b.N {
			s, a := clusterCLIAcquires(b, fl, rounds)
			seq, across = append(seq, s...), append(across, a...)
		}
		report(b, "sequential-", seq)
		report(b, "across-", across)
		b.ReportMetric(ratio(across.Percentile(50), seq.Percentile(50)), "p50-ratio")
		b.ReportMetric(0, "ns/op")
		b.Logf("the binary, a free lock in three clusters: three `acquire --context X` one after the other %s; one `acquire --contexts` %s; p50 %.2fx",
			seq, across, ratio(across.Percentile(50), seq.Percentile(50)))
	})
}

// clusterCLIAcquires takes a free lock in the three clusters n times in
// two ways in turn, with the lockctl binary as a pipeline does: three
// `lockctl acquire --context X` processes one after the other, and one
// `lockctl acquire --contexts us,eu,ap`; each hold is released (untimed)
// before the next. It returns the wall time of each way.
func clusterCLIAcquires(b *testing.B, fl *testenv.Fleet, n int) (seq, across Sample) {
	ns := fl.Namespace(b)
	home := b.TempDir()
	clitest.Binary(b) // built before the clock starts
	env := []string{"KUBECONFIG=" + fl.Kubeconfig}
	id := []string{"--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1", "--lock-namespace", ns}
	run := func(args ...string) {
		b.Helper()
		o := clitest.Run(b, 2*time.Minute, home, env, append(args, id...)...)
		require.Equal(b, 0, o.Code, "lockctl %v: %s", args, o.Stderr)
	}
	contexts := strings.Join(fl.Contexts, ",")
	for r := range n {
		target := fmt.Sprintf("cli%d", r)
		start := time.Now()
		for _, name := range fl.Contexts {
			run("acquire", target, "--context", name)
		}
		seq = append(seq, time.Since(start))
		run("release", target, "--contexts", contexts)

		start = time.Now()
		run("acquire", target+"x", "--contexts", contexts)
		across = append(across, time.Since(start))
		run("release", target+"x", "--contexts", contexts)
	}
	return seq, across
}

func ratio(a, b time.Duration) float64 {
	if b == 0 {
		return 0
	}
	return float64(a) / float64(b)
}

// clusterHandovers hands holds between two contenders with clients of
// their own, n times each way, the ways in turn: a lock in one cluster
// (us) alone; a hold of a lock in three clusters; and three holds of a
// lock in one cluster each (us, eu, ap) handed over at once, which puts
// on the three control planes (and the machine's cores they share) the
// API work of a hold across them. It returns the latencies from just
// before the release until the waiter holds: one, three and, for the
// last, each of the three holds.
func clusterHandovers(b *testing.B, fl *testenv.Fleet, n int) (one, three, beside Sample) {
	ctx := within(b, 20*time.Minute)
	ns := fl.Namespace(b)
	type hold struct {
		target string
		fc     [2]fleetClients
		held   []*lock.Held
	}
	solo := func(name, target string) *hold {
		h := &hold{target: target}
		for k := range 2 {
			// NOTE: one cluster names no context, as lockctl without
			// --contexts.
			cs := newKube(b, fl.Env(name).RESTConfig)
			h.fc[k] = fleetClients{locks: []*lock.Client{lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{})}}
		}
		return h
	}
	across := &hold{target: "three"}
	for k := range 2 {
		across.fc[k] = newFleetClients(b, fl, ns, fl.Contexts...)
	}
	ways := [][]*hold{{solo("us", "one")}, {across}}
	var each []*hold
	for _, name := range fl.Contexts {
		each = append(each, solo(name, "beside"))
	}
	ways = append(ways, each)
	for _, way := range ways {
		for _, h := range way {
			held, err := lock.AcquireAcross(ctx, lock.PartsFor(h.fc[0].locks, lock.Request{Identity: clitest.Identity("web", 1)}, []string{h.target}))
			require.NoError(b, err)
			h.held = held
		}
	}
	for r := range n {
		next := clitest.Identity([]string{"web", "api"}[(r+1)%2], r+2)
		for w, way := range ways {
			done := make([]<-chan clitest.Acquisition, len(way))
			for k, h := range way {
				done[k] = acquireQueued(ctx, b, h.fc[(r+1)%2], h.target, next)
			}
			// NOTE: a run's waiters queue long before its holder releases.
			time.Sleep(20*time.Millisecond + rand.N(10*time.Millisecond))
			start := time.Now()
			var wg sync.WaitGroup
			for _, h := range way {
				wg.Go(func() { releaseAll(ctx, b, h.fc[r%2].locks, h.held) })
			}
			for k, h := range way {
				res := <-done[k]
				require.NoError(b, res.Err, "acquire %s", next)
				switch w {
				case 0:
					one = append(one, res.At.Sub(start))
				case 1:
					three = append(three, res.At.Sub(start))
				default:
					beside = append(beside, res.At.Sub(start))
				}
				h.held = res.All
			}
			wg.Wait()
		}
	}
	for _, way := range ways {
		for _, h := range way {
			releaseAll(ctx, b, h.fc[n%2].locks, h.held)
		}
	}
	return one, three, beside
}

// clusterAcquires takes three free locks, one per cluster, n times in two
// ways in turn: three Acquires one after the other, and one AcquireAcross;
// each hold is released (untimed) before the next. It returns the
// latencies and the requests of each way.
func clusterAcquires(b *testing.B, fl *testenv.Fleet, n int) (seq, across Sample, seqReqs, acrossReqs Counts) {
	ctx := within(b, 20*time.Minute)
	ns := fl.Namespace(b)
	seqC, acrossC := newFleetClients(b, fl, ns, fl.Contexts...), newFleetClients(b, fl, ns, fl.Contexts...)
	id := clitest.Identity("web", 1)
	// NOTE: warm: every client has connected and read once.
	for _, fc := range []fleetClients{seqC, acrossC} {
		held, err := lock.AcquireAcross(ctx, lock.PartsFor(fc.locks, lock.Request{Identity: id}, []string{"warm"}))
		require.NoError(b, err)
		releaseAll(ctx, b, fc.locks, held)
	}
	var seqSpent, acrossSpent Counts
	for r := range n {
		target := fmt.Sprintf("t%d", r)
		before := seqC.counter.Counts()
		start := time.Now()
		var held []*lock.Held
		for _, c := range seqC.locks {
			h, err := c.Acquire(ctx, lock.Request{Target: target, Identity: id})
			require.NoError(b, err)
			held = append(held, h)
		}
		seq = append(seq, time.Since(start))
		seqSpent = add(seqSpent, seqC.counter.Counts().Sub(before))
		releaseAll(ctx, b, seqC.locks, held)

		before = acrossC.counter.Counts()
		start = time.Now()
		held, err := lock.AcquireAcross(ctx, lock.PartsFor(acrossC.locks, lock.Request{Identity: id}, []string{target + "x"}))
		require.NoError(b, err)
		across = append(across, time.Since(start))
		acrossSpent = add(acrossSpent, acrossC.counter.Counts().Sub(before))
		releaseAll(ctx, b, acrossC.locks, held)
	}
	return seq, across, seqSpent, acrossSpent
}

// add returns a + b.
func add(a, b Counts) Counts {
	out := Counts{ByVerb: map[string]int{}, ByResource: map[string]int{}, Conflicts: a.Conflicts + b.Conflicts}
	for _, c := range []Counts{a, b} {
		for k, v := range c.ByVerb {
			out.ByVerb[k] += v
		}
		for k, v := range c.ByResource {
			out.ByResource[k] += v
		}
	}
	return out
}
