package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/stats"
)

// arrival is one contender of a trace: when it comes and how long it
// holds the lock, in the trace's time.
type arrival struct {
	at, hold time.Duration
}

// weekTrace is a simulated week of deploys to one lock, from a seeded
// generator: on weekdays from 09:00 to 18:00 UTC about three arrivals an
// hour, each hold log-normal around 12 minutes (one in ten a slow deploy
// of 30 to 40), and twice a day a burst of six to ten arrivals within ten
// minutes (a release train); at night and at weekends one arrival every
// few hours.
func weekTrace(seed uint64) []arrival {
	r := rand.New(rand.NewPCG(seed, seed))
	hold := func() time.Duration {
		if r.Float64() < 0.1 {
			return time.Duration(30+r.IntN(11)) * time.Minute
		}
		return time.Duration(math.Exp(math.Log(12)+0.35*r.NormFloat64()) * float64(time.Minute))
	}
	var out []arrival
	for day := range 7 {
		start := time.Duration(day) * 24 * time.Hour
		work := day < 5
		for h := range 24 {
			rate := 0.25 // an hour, off hours
			if work && h >= 9 && h < 18 {
				rate = 3
			}
			for t := 0.0; ; {
				t += r.ExpFloat64() / rate
				if t >= 1 {
					break
				}
				out = append(out, arrival{at: start + time.Duration((float64(h)+t)*float64(time.Hour)), hold: hold()})
			}
		}
		if work {
			for _, burst := range []int{11, 15} {
				at := start + time.Duration(burst)*time.Hour + time.Duration(r.IntN(30))*time.Minute
				for range 6 + r.IntN(5) {
					out = append(out, arrival{at: at + time.Duration(r.IntN(600))*time.Second, hold: hold()})
				}
			}
		}
	}
	slices.SortFunc(out, func(a, b arrival) int { return int(a.at - b.at) })
	return out
}

// replayed is what became of one contender of the replay: its wait in
// real time, the rest in the trace's.
type replayed struct {
	waited   time.Duration
	estimate time.Duration // midpoint of lockctl's estimate; -1 for none
	naive    time.Duration // position × the median hold; -1 without holds
	budget   time.Duration // --timeout auto's
	position int
}

// BenchmarkEstimateReplay replays a simulated week of arrivals and hold
// times (weekTrace) against the real API server, LOCKCTL_BENCH_SPEEDUP
// (default 2400) times faster: every arrival is a contender that waits
// for the lock (lock.Client.Acquire, fifo), holds it for its hold and
// releases it. When it joins the queue it records the wait estimate that
// status and the waiting line show (lock.Progress.Estimate), a naive one
// (its position times the median hold: what a rule of thumb gives) and
// the --timeout auto budget (stats.BudgetOf, floor and ceiling scaled by
// the speed-up). It reports the estimates' median absolute error over the
// waits of at least a (simulated) minute, and the share of waiters whose
// budget was shorter than their wait though that wait was within the
// ceiling (a waiter --timeout auto would have timed out for nothing),
// beside a fixed --timeout of 30 minutes.
func BenchmarkEstimateReplay(b *testing.B) {
	env := testenv.Get(b)
	speedup := float64(envInt("LOCKCTL_BENCH_SPEEDUP", 2400))
	scale := func(d time.Duration) time.Duration { return time.Duration(float64(d) / speedup) }
	unscale := func(d time.Duration) time.Duration { return time.Duration(float64(d) * speedup) }
	trace := weekTrace(42)
	b.Logf("load average at the start: %s; %d arrivals in a week, replayed %.0fx faster (%s)", loadAverage(), len(trace), speedup, scale(7*24*time.Hour).Round(time.Second))
	for range b.N {
		ns := env.Namespace(b)
		l := lock.New(env.Kube.CoreV1(), env.Kube.CoreV1(), ns, clock.RealClock{}, lock.Options{})
		got := replay(b, l, trace, speedup)
		var est, naive []float64
		var covered, timedOut, fixedOut, served int
		for _, r := range got {
			waited := unscale(r.waited)
			if r.position == 0 || waited > stats.BudgetCeiling {
				// Took the lock without queueing (no timeout applies), or
				// waited past the ceiling (a timeout is right).
				continue
			}
			served++
			if waited > r.budget {
				timedOut++
			}
			if waited > 30*time.Minute {
				fixedOut++
			}
			if waited < time.Minute {
				continue
			}
			if r.estimate >= 0 {
				covered++
				est = append(est, math.Abs(float64(r.estimate-waited))/float64(waited))
			}
			if r.naive >= 0 {
				naive = append(naive, math.Abs(float64(r.naive-waited))/float64(waited))
			}
		}
		waits := make([]time.Duration, 0, len(got))
		for _, r := range got {
			waits = append(waits, unscale(r.waited))
		}
		slices.Sort(waits)
		var ratios []float64
		for _, r := range got {
			if r.budget > 0 {
				ratios = append(ratios, float64(unscale(r.waited))/float64(r.budget))
			}
		}
		slices.Sort(ratios)
		b.Logf("wait / --timeout auto budget: p50 %.2f, p90 %.2f, max %.2f", median(ratios), ratios[len(ratios)*9/10], ratios[len(ratios)-1])
		b.ReportMetric(100*median(est), "estimate-mdape-%")
		b.ReportMetric(100*median(naive), "naive-mdape-%")
		b.ReportMetric(100*float64(timedOut)/float64(served), "auto-false-timeouts-%")
		b.ReportMetric(100*float64(fixedOut)/float64(served), "fixed30m-timeouts-%")
		b.ReportMetric(0, "ns/op")
		b.Logf("waits (simulated): p50 %s, p90 %s, max %s over %d contenders", stats.Quantile(waits, 0.5).Round(time.Second),
			stats.Quantile(waits, 0.9).Round(time.Second), waits[len(waits)-1].Round(time.Second), len(waits))
		b.Logf("wait estimate, median absolute error over %d waits of a minute or more: lockctl %.1f%% (%d estimated) | naive position x median hold %.1f%%",
			len(naive), 100*median(est), covered, 100*median(naive))
		b.Logf("waiters timed out though served within the ceiling: --timeout auto %d of %d (%.1f%%) | fixed --timeout 30m %d (%.1f%%)",
			timedOut, served, 100*float64(timedOut)/float64(served), fixedOut, 100*float64(fixedOut)/float64(served))
	}
}

func median(xs []float64) float64 {
	if len(xs) == 0 {
		return math.NaN()
	}
	slices.Sort(xs)
	if n := len(xs); n%2 == 1 {
		return xs[n/2]
	}
	return (xs[len(xs)/2-1] + xs[len(xs)/2]) / 2
}

// replay runs trace against the lock "staging" of ns with l, scaled to
// real time, and returns what became of each contender.
func replay(b *testing.B, l *lock.Client, trace []arrival, speedup float64) []replayed {
	b.Helper()
	ctx, cancel := context.WithCancel(b.Context())
	defer cancel()
	out := make([]replayed, len(trace))
	var wg sync.WaitGroup
	start := time.Now()
	st := stretch{origin: start, speedup: speedup}
	errs := make(chan error, len(trace))
	for i, a := range trace {
		time.Sleep(time.Until(start.Add(time.Duration(float64(a.at) / speedup))))
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := &out[i]
			r.estimate, r.naive = -1, -1
			joined := time.Now()
			var once sync.Once
			req := lock.Request{Target: "staging", Policy: record.PolicyFIFO, ClaimID: fmt.Sprintf("c%d", i),
				Identity: record.Identity{Owner: "acme", Repo: fmt.Sprintf("app%d", i), Branch: "main", Build: "1"}, TTL: metav1.Duration{Duration: time.Hour}.Duration,
				Callbacks: lock.Callbacks{OnProgress: func(p lock.Progress) {
					if p.Position == 0 {
						return
					}
					once.Do(func() { r.estimate, r.naive, r.budget, r.position = judge(p, joined, st) })
				}}}
			held, err := l.Acquire(ctx, req)
			if err != nil {
				errs <- fmt.Errorf("contender %d: %w", i, err)
				return
			}
			r.waited = time.Since(joined)
			time.Sleep(time.Duration(float64(a.hold) / speedup))
			if _, err := l.ReleaseHeld(ctx, held, lock.ReleaseOptions{}); err != nil {
				errs <- fmt.Errorf("contender %d: release: %w", i, err)
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(b, err)
	}
	return out
}

// stretch maps a real time of the replay, which began at origin, to the
// trace's time: the estimate and the budget round and bound durations as
// people see them, so they are made on the week's times, not on the
// replay's.
type stretch struct {
	origin  time.Time
	speedup float64
}

func (s stretch) at(t time.Time) time.Time {
	return s.origin.Add(time.Duration(float64(t.Sub(s.origin)) * s.speedup))
}

func (s stretch) micro(t metav1.MicroTime) metav1.MicroTime { return metav1.NewMicroTime(s.at(t.Time)) }

// judge is what a contender that joined the queue at now learns from p,
// in the trace's time: lockctl's estimate (the midpoint of its range),
// the naive one and the --timeout auto budget.
func judge(p lock.Progress, now time.Time, s stretch) (estimate, naive, budget time.Duration, position int) {
	estimate, naive = -1, -1
	in := *p.Wait
	in.History = make([]record.HistoryEntry, len(p.Wait.History))
	for i, h := range p.Wait.History {
		h.Since, h.Until = s.micro(h.Since), s.micro(h.Until)
		if h.Queued != nil {
			q := s.micro(*h.Queued)
			h.Queued = &q
		}
		in.History[i] = h
	}
	if in.HolderSince != nil {
		hs := s.at(*in.HolderSince)
		in.HolderSince = &hs
	}
	sim := s.at(now)
	if e := (&lock.Progress{Wait: &in}).Estimate(sim); e != nil {
		estimate = (e.Low + e.High) / 2
	}
	var holds []time.Duration
	for _, h := range in.History {
		holds = append(holds, h.Held())
	}
	if len(holds) > 0 {
		slices.Sort(holds)
		naive = time.Duration(p.Position) * stats.Quantile(holds, 0.5)
	}
	rec := &record.Record{Target: p.Target, History: in.History, Waiters: p.Ahead}
	if in.HolderSince != nil {
		rec.Holder = record.Claim{Identity: p.Holder.Identity, ClaimID: p.Holder.ClaimID, Since: metav1.NewMicroTime(*in.HolderSince)}
	}
	return estimate, naive, stats.BudgetOf(rec, sim).Timeout, p.Position
}
