package bench

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// BenchmarkContention has N contenders (10, 25 and 50; set
// LOCKCTL_BENCH_CONTENDERS to one number to run only that) take one
// namespace's lock once each, in fifo order, holding it for
// LOCKCTL_BENCH_HOLD_MS milliseconds (default 20). Every contender has its
// own clientset, as separate processes would, all counted by one Counter.
//
// It reports two phases. Joining: from the start until every contender
// holds the lock or waits in its queue. Hand-over: from then until the last
// one released it, compared with the sum of the hold times; its requests per
// acquisition show whether a release costs O(1) requests or wakes a herd.
func BenchmarkContention(b *testing.B) {
	env := testenv.Get(b)
	hold := time.Duration(envInt("LOCKCTL_BENCH_HOLD_MS", 20)) * time.Millisecond
	sizes := []int{10, 25, 50}
	if n := envInt("LOCKCTL_BENCH_CONTENDERS", 0); n > 0 {
		sizes = []int{n}
	}
	for _, n := range sizes {
		b.Run(fmt.Sprintf("contenders=%d", n), func(b *testing.B) {
			var last contention
			for range b.N {
				last = contend(b, env, n, hold)
			}
			c := last
			b.ReportMetric(c.handoverPhase.Seconds(), "handover-phase-s")
			b.ReportMetric(c.sumHold.Seconds(), "sum-of-holds-s")
			b.ReportMetric(MS(c.overheadPerHandover()), "overhead-ms/handover")
			b.ReportMetric(float64(c.handover.Total())/float64(n), "req/acq")
			b.ReportMetric(float64(c.handover.Writes())/float64(n), "writes/acq")
			b.ReportMetric(float64(c.handover.Conflicts)/float64(n), "conflicts/acq")
			b.ReportMetric(float64(c.join.Total())/float64(n), "join-req/contender")
			b.ReportMetric(float64(c.join.Conflicts)/float64(n), "join-conflicts/contender")
			b.ReportMetric(0, "ns/op")
			b.Logf("%d contenders, fifo, hold %s each", n, hold)
			b.Logf("  joining:   %s until all queued; %d requests (%.1f per contender: %s), %d conflicts",
				c.joinPhase.Round(time.Millisecond), c.join.Total(), float64(c.join.Total())/float64(n), verbs(c.join), c.join.Conflicts)
			b.Logf("  hand-over: %s until all held once vs %s of holds: %s overhead per hand-over",
				c.handoverPhase.Round(time.Millisecond), c.sumHold, FormatMS(c.overheadPerHandover()))
			b.Logf("             %d requests = %.2f per acquisition (%s), %.2f writes, %.2f conflicts per acquisition",
				c.handover.Total(), float64(c.handover.Total())/float64(n), verbs(c.handover),
				float64(c.handover.Writes())/float64(n), float64(c.handover.Conflicts)/float64(n))
		})
	}
}

// contention is the outcome of one run of contend.
type contention struct {
	n                        int
	joinPhase, handoverPhase time.Duration
	sumHold                  time.Duration
	join, handover           Counts
}

// overheadPerHandover is the hand-over phase minus the hold times, per
// hand-over (n contenders hand over n-1 times; the first already holds).
func (c contention) overheadPerHandover() time.Duration {
	if c.n < 2 {
		return 0
	}
	return (c.handoverPhase - c.sumHold) / time.Duration(c.n-1)
}

func contend(b *testing.B, env *testenv.Env, n int, hold time.Duration) contention {
	ctx := within(b, 10*time.Minute)
	ns := env.Namespace(b)
	var counter Counter
	cfg := counter.Wrap(env.RESTConfig)
	clients := make([]*lock.Client, n)
	for i := range clients {
		clients[i] = newLockClient(b, cfg, ns)
	}
	const target = "staging"

	var (
		joined    atomic.Int32
		allJoined = make(chan struct{})
		joinOnce  sync.Once
		joinedAt  time.Time
		joinCount Counts
		holding   atomic.Int32
		doubled   atomic.Int32
		mu        sync.Mutex
		holds     time.Duration
		wg        sync.WaitGroup
	)
	markJoined := func() {
		if int(joined.Add(1)) == n {
			joinOnce.Do(func() {
				joinedAt, joinCount = time.Now(), counter.Counts()
				close(allJoined)
			})
		}
	}
	errs := make(chan error, n)
	begin := make(chan struct{})
	for i, l := range clients {
		wg.Add(1)
		go func() {
			defer wg.Done()
			id := clitest.Identity(fmt.Sprintf("repo-%02d", i), 1)
			var once sync.Once
			<-begin
			_, err := l.Acquire(ctx, lock.Request{
				Target: target, Identity: id, Policy: record.PolicyFIFO,
				Callbacks: lock.Callbacks{OnProgress: func(lock.Progress) { once.Do(markJoined) }},
			})
			if err != nil {
				errs <- fmt.Errorf("%s: %w", id, err)
				return
			}
			once.Do(markJoined)
			select {
			case <-allJoined:
			case <-ctx.Done():
				errs <- context.Cause(ctx)
				return
			}
			if holding.Add(1) > 1 {
				doubled.Add(1)
			}
			start := time.Now()
			time.Sleep(hold)
			mu.Lock()
			holds += time.Since(start)
			mu.Unlock()
			holding.Add(-1)
			if _, err := l.Release(ctx, target, id, lock.ReleaseOptions{}); err != nil {
				errs <- fmt.Errorf("%s: release: %w", id, err)
			}
		}()
	}
	start := time.Now()
	close(begin)
	wg.Wait()
	end := time.Now()
	close(errs)
	for err := range errs {
		b.Fatal(err)
	}
	require.Zero(b, doubled.Load(), "two contenders held the lock at once")
	return contention{
		n:             n,
		joinPhase:     joinedAt.Sub(start),
		handoverPhase: end.Sub(joinedAt),
		sumHold:       holds,
		join:          joinCount,
		handover:      counter.Counts().Sub(joinCount),
	}
}

// verbs renders counts as "get=12 update=20 ...", sorted by verb.
func verbs(c Counts) string {
	var parts []string
	for v, n := range c.ByVerb {
		parts = append(parts, fmt.Sprintf("%s=%d", v, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}

// resources renders counts by verb and resource, as "update configmaps=12
// create pods=10 ...", sorted.
func resources(c Counts) string {
	var parts []string
	for v, n := range c.ByResource {
		parts = append(parts, fmt.Sprintf("%s=%d", v, n))
	}
	sort.Strings(parts)
	return strings.Join(parts, " ")
}
