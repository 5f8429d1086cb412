package bench

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock/record"
)

// stampedCommand is the command each `lockctl run` holds the lock for: it
// writes the time it starts (ns since the epoch) to DIR/ID.start, works
// for holdMS milliseconds and writes the time it ends to DIR/ID.end.
func stampedCommand(dir, id string, holdMS int) []string {
	start, end := filepath.Join(dir, id+".start"), filepath.Join(dir, id+".end")
	script := fmt.Sprintf("date +%%s%%N > %s; sleep %s; date +%%s%%N > %s", start, strconv.FormatFloat(float64(holdMS)/1000, 'f', 3, 64), end)
	return []string{"sh", "-c", script}
}

// runEnviron is the environment of a lockctl process in the benchmarks:
// the kubeconfig, the lock namespace and an empty HOME.
func runEnviron(b testing.TB, kubeconfig, lockNS string) []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "KUBECONFIG=" + kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + lockNS}
}

// runArgs are the arguments of one `lockctl run` with identity number i.
func runArgs(target string, i int, command ...string) []string {
	return append([]string{"run", "--lock", target, "--owner", "bench", "--repo", fmt.Sprintf("repo-%02d", i),
		"--branch", "main", "--build", "1", "--policy", "fifo", "-q", "--"}, command...)
}

// BenchmarkRunContention starts LOCKCTL_BENCH_RUN_PROCS (default 20)
// `lockctl run --lock X -- sh -c '…'` processes at once, each with its own
// identity, each command working LOCKCTL_BENCH_RUN_HOLD_MS (default 50) ms,
// LOCKCTL_BENCH_RUN_ROUNDS times (default 5). The commands stamp their
// start and end; the gap between one command's end and the next one's start
// is what the lock costs per hand-over, process exit and start included. A
// last round runs through a counting proxy to count requests per process
// (not timed: the proxy spares the processes their TLS handshake). The
// peer (bench/leasepeer, client-go's leaderelection on a Lease, one process
// per contender, as klock runs) runs the same rounds, alternating, with the
// timings LOCKCTL_BENCH_PEER_TIMINGS names (default fast: 2 s, 1 s,
// 200 ms). With LOCKCTL_BENCH_BASELINE_BIN naming another build (say,
// main's), its rounds alternate too, each on a lock of its own, so a change
// is measured side by side under the same load.
func BenchmarkRunContention(b *testing.B) {
	env := testenv.Get(b)
	type side struct {
		contender
		gaps, walls  Sample
		first, later Sample // the first gap of each round, and the others
		cpus         Sample // user and system time of each process, its command's included
		parts        gapParts
		counts       Counts
	}
	var sides []*side
	for _, c := range append(lockctlContenders(b), peerContenders(b, "fast")...) {
		sides = append(sides, &side{contender: c})
	}
	procs := envInt("LOCKCTL_BENCH_RUN_PROCS", 20)
	hold := envInt("LOCKCTL_BENCH_RUN_HOLD_MS", 50)
	rounds := envInt("LOCKCTL_BENCH_RUN_ROUNDS", 5)
	b.Logf("load average at the start: %s", loadAverage())
	for range b.N {
		ns := env.Namespace(b)
		for r := range rounds {
			for i, s := range sides {
				var parts *gapParts
				if s.lockctl {
					parts = &s.parts
				}
				g, w, cpu := runRound(b, env, ns, s.contender, runEnviron(b, env.Kubeconfig, ns), fmt.Sprintf("round-%d-%d", r, i), procs, hold, parts)
				s.gaps, s.walls, s.cpus = append(s.gaps, g...), append(s.walls, w), append(s.cpus, cpu...)
				if len(g) > 0 {
					s.first, s.later = append(s.first, g[0]), append(s.later, g[1:]...)
				}
			}
		}
		for i, s := range sides {
			proxy := startCountingProxy(b, env)
			_, _, _ = runRound(b, env, ns, s.contender, runEnviron(b, proxy.Kubeconfig, ns), fmt.Sprintf("counted-%d", i), procs, hold, nil)
			s.counts = proxy.Counts()
		}
	}
	b.Logf("load average at the end: %s", loadAverage())
	for _, s := range sides {
		report(b, s.prefix+"gap-", s.gaps)
		report(b, s.prefix+"first-gap-", s.first)
		report(b, s.prefix+"later-gap-", s.later)
		report(b, s.prefix+"cpu-", s.cpus)
		if s.lockctl {
			report(b, s.prefix+"release-", s.parts.release)
			report(b, s.prefix+"first-release-", s.parts.firstRelease)
			report(b, s.prefix+"taken-", s.parts.taken)
			report(b, s.prefix+"confirm-", s.parts.confirm)
			report(b, s.prefix+"start-", s.parts.start)
		}
		b.ReportMetric(float64(s.counts.Total())/float64(procs), s.prefix+"req/process")
		b.ReportMetric(float64(s.counts.Conflicts)/float64(procs), s.prefix+"conflicts/process")
	}
	for _, s := range sides[1:] {
		b.ReportMetric(MS(s.gaps.Percentile(50))/MS(sides[0].gaps.Percentile(50)), strings.TrimSuffix(s.prefix, "-")+"-gap-p50/this")
	}
	b.ReportMetric(0, "ns/op")
	b.Logf("%d processes at once on one lock, %d ms commands, %d rounds", procs, hold, rounds)
	for _, s := range sides {
		b.Logf("%s:", s.name)
		b.Logf("  gap, one command's end -> the next one's start: %s", s.gaps)
		b.Logf("    the first of each round (the others still starting and joining): %s", s.first)
		b.Logf("    the others: %s", s.later)
		if s.lockctl {
			b.Logf("  of which (%d gaps seen whole by a watch of the lock in this process):", len(s.parts.release))
			b.Logf("    end -> the hand-over write seen (holder's exit, release): %s", s.parts.release)
			b.Logf("      in the first gap of each round: %s", s.parts.firstRelease)
			b.Logf("    hand-over seen -> the next command's start (watch fan-out, confirmation unless in the background, sweep, start): %s", s.parts.taken)
			if len(s.parts.confirm) == 0 {
				// NOTE: since ADR 0079 a hold shorter than its confirmation
				// delay (1 s) is never confirmed.
				b.Logf("    no confirmation seen: every hold ended before its confirmation was due (docs/adr/0079-confirm-after-a-second.md)")
			} else {
				b.Logf("    hand-over seen -> confirmation seen (watch fan-out, the next one's write): %s", s.parts.confirm)
				b.Logf("    confirmation seen -> the next command's start (negative: started before its confirmation was seen): %s", s.parts.start)
			}
		}
		b.Logf("  whole round (all %d held once): %s", procs, s.walls)
		b.Logf("  CPU of one process (user and system, its command's included): %s", s.cpus)
		b.Logf("  requests per process (counted round): %.1f (%s), %d conflicts", float64(s.counts.Total())/float64(procs), resources(s.counts), s.counts.Conflicts)
	}
}

// gapParts splits the gaps between commands at the moments a watch of the
// lock in the benchmark process sees the hand-over write (the holder handed
// the lock to the next one) and the next one's confirming write. The watch's
// own delivery delay is in both, so it cancels out of the middle part.
type gapParts struct {
	release, confirm, start Sample
	// firstRelease is release for the first gap of each round, taken while
	// the other processes still start and join.
	firstRelease Sample
	// taken is from the hand-over seen to the next command's start: the
	// next holder's share whether it confirms first (before ADR 0074) or
	// in the background.
	taken Sample
}

// lockChange is a version of a lock seen by the benchmark's watch: its
// holder's repo (the process's number), whether it is handed over and not
// yet confirmed, and when it was seen (the wall clock, as date stamps).
type lockChange struct {
	repo   string
	handed bool
	seen   int64
}

// watchLock records every change of target's lock until the returned stop
// is called.
func watchLock(b *testing.B, env *testenv.Env, ns, target string) (stop func() []lockChange) {
	w, err := env.Client.CoreV1().ConfigMaps(ns).Watch(context.Background(), metav1.ListOptions{
		FieldSelector: fields.OneTermEqualSelector("metadata.name", record.Name(target)).String(),
	})
	require.NoError(b, err)
	var changes []lockChange
	done := make(chan struct{})
	go func() {
		defer close(done)
		for ev := range w.ResultChan() {
			seen := time.Now().UnixNano()
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				continue
			}
			rec, err := record.Decode(cm)
			if err != nil || rec.IsFree() {
				continue
			}
			changes = append(changes, lockChange{repo: rec.Holder.Repo, handed: rec.Holder.HandedOver, seen: seen})
		}
	}()
	return func() []lockChange {
		w.Stop()
		<-done
		return changes
	}
}

// runRound starts procs processes of c at once on one new lock
// and returns the gaps between the commands they ran, the round's wall
// time, and the CPU time (user and system) of each process. parts, when set, gets the gaps split as the lock's watch saw them.
func runRound(b *testing.B, env *testenv.Env, ns string, c contender, environ []string, target string, procs, hold int, parts *gapParts) (Sample, time.Duration, Sample) {
	dir := b.TempDir()
	stopWatch := func() []lockChange { return nil }
	if parts != nil {
		stopWatch = watchLock(b, env, ns, target)
	}
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range cmds {
		cmds[i] = exec.Command(c.path, c.args(ns, target, i, stampedCommand(dir, strconv.Itoa(i), hold)...)...)
		cmds[i].Env = environ
		outs[i] = &bytes.Buffer{}
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
	}
	start := time.Now()
	for _, cmd := range cmds {
		require.NoError(b, cmd.Start())
	}
	for i, cmd := range cmds {
		require.NoError(b, cmd.Wait(), "%s %d: %s", c.name, i, outs[i])
	}
	wall := time.Since(start)
	var cpus Sample
	for _, cmd := range cmds {
		cpus = append(cpus, cmd.ProcessState.UserTime()+cmd.ProcessState.SystemTime())
	}
	changes := stopWatch()
	type span struct {
		repo       string
		start, end int64
	}
	spans := make([]span, procs)
	for i := range spans {
		spans[i] = span{fmt.Sprintf("repo-%02d", i), readStamp(b, filepath.Join(dir, strconv.Itoa(i)+".start")), readStamp(b, filepath.Join(dir, strconv.Itoa(i)+".end"))}
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.start - b.start) })
	// first returns when the watch first saw repo's hold, handed over or
	// confirmed, after t; 0 if it did not.
	first := func(repo string, handed bool, after int64) int64 {
		for _, c := range changes {
			if c.repo == repo && c.handed == handed && c.seen >= after {
				return c.seen
			}
		}
		return 0
	}
	var gaps Sample
	for i := 1; i < len(spans); i++ {
		gap := time.Duration(spans[i].start - spans[i-1].end)
		require.Positive(b, gap, "two commands ran at once under one lock")
		gaps = append(gaps, gap)
		if parts == nil {
			continue
		}
		handed := first(spans[i].repo, true, spans[i-1].end)
		if handed == 0 {
			continue // taken without a hand-over, or not seen in time
		}
		parts.release = append(parts.release, time.Duration(handed-spans[i-1].end))
		if i == 1 {
			parts.firstRelease = append(parts.firstRelease, time.Duration(handed-spans[i-1].end))
		}
		parts.taken = append(parts.taken, time.Duration(spans[i].start-handed))
		if confirmed := first(spans[i].repo, false, handed); confirmed != 0 {
			parts.confirm = append(parts.confirm, time.Duration(confirmed-handed))
			parts.start = append(parts.start, time.Duration(spans[i].start-confirmed))
		}
	}
	return gaps, wall, cpus
}

func readStamp(b *testing.B, path string) int64 {
	raw, err := os.ReadFile(path)
	require.NoError(b, err)
	ns, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	require.NoError(b, err, "%s", path)
	return ns
}

// BenchmarkRunUncontended times a whole `lockctl run --lock X -- true`
// process on a free lock, LOCKCTL_BENCH_COLD_RUNS times (default 30), its
// wall and CPU time (user and system), side by side with the peer
// (bench/leasepeer: client-go's leaderelection running `true` under a
// Lease, as klock does, with the timings LOCKCTL_BENCH_PEER_TIMINGS names,
// default klock's), run by run. It measures the peak RSS of
// LOCKCTL_BENCH_RSS_RUNS more runs each (default 5) under GNU time, and
// counts the requests of such runs through a counting proxy: on a lock
// that does not exist yet (a new target each run) and on one that exists,
// free, as a lock does after its first release (kept for its history).
// With LOCKCTL_BENCH_BASELINE_BIN naming another build, it alternates too
// (each on locks of its own); its figures carry the prefix baseline-.
func BenchmarkRunUncontended(b *testing.B) {
	env := testenv.Get(b)
	sides := append(lockctlContenders(b), peerContenders(b, "default")...)
	runs := envInt("LOCKCTL_BENCH_COLD_RUNS", 30)
	rssRuns := envInt("LOCKCTL_BENCH_RSS_RUNS", 5)
	type figures struct {
		walls, cpus  Sample
		rss          rssSample
		versions     startSample
		fresh, again Counts
	}
	got := make([]figures, len(sides))
	counted := 5
	b.Logf("load average at the start: %s", loadAverage())
	for range b.N {
		ns := env.Namespace(b)
		environ := runEnviron(b, env.Kubeconfig, ns)
		for i := range runs {
			for k, s := range sides {
				r := runProcess(b, environ, s.path, s.args(ns, fmt.Sprintf("%sfree-%03d", s.prefix, i), i, "true")...)
				got[k].walls, got[k].cpus = append(got[k].walls, r.wall), append(got[k].cpus, r.cpu)
				if s.lockctl {
					// The floor of any lockctl process, alternating with the
					// runs: the same binary started, initialised and exited,
					// no request.
					got[k].versions.add(startOnce(b, s.path, environ))
				}
			}
		}
		for i := range rssRuns {
			for k, s := range sides {
				if mib, ok := peakRSS(b, environ, s.path, s.args(ns, fmt.Sprintf("%srss-%03d", s.prefix, i), i, "true")...); ok {
					got[k].rss = append(got[k].rss, mib)
				}
			}
		}
		for k, s := range sides {
			count := func(target func(i int) string) Counts {
				proxy := startCountingProxy(b, env)
				environ := runEnviron(b, proxy.Kubeconfig, ns)
				for i := range counted {
					runProcess(b, environ, s.path, s.args(ns, target(i), i, "true")...)
				}
				return proxy.Counts()
			}
			got[k].fresh = count(func(i int) string { return fmt.Sprintf("%scounted-%03d", s.prefix, i) })
			got[k].again = count(func(int) string { return s.prefix + "free-000" })
		}
	}
	b.Logf("load average at the end: %s", loadAverage())
	per := func(c Counts) float64 { return float64(c.Total()) / float64(counted) }
	events := func(c Counts) float64 { return float64(c.ByResource["create events"]) / float64(counted) }
	for k, s := range sides {
		g := &got[k]
		report(b, s.prefix, g.walls)
		report(b, s.prefix+"cpu-", g.cpus)
		if len(g.rss) > 0 {
			b.ReportMetric(g.rss.median(), s.prefix+"peak-rss-MiB")
		}
		if s.lockctl {
			g.versions.report(b, s.prefix+"version-")
		}
		b.ReportMetric(per(g.fresh), s.prefix+"req/run")
		b.ReportMetric(per(g.fresh)-events(g.fresh), s.prefix+"req/run-without-events")
		b.ReportMetric(per(g.again), s.prefix+"req/run-existing-lock")
		b.ReportMetric(per(g.again)-events(g.again), s.prefix+"req/run-existing-lock-without-events")
		b.Logf("%s (%s): a free lock, `true` run under it, whole process: wall %s", s.name, s.path, g.walls)
		b.Logf("  CPU (user+sys): %s; peak RSS: %s", g.cpus, g.rss)
		if s.lockctl {
			b.Logf("  lockctl version (process start and exit, no request), alternating: %s", &g.versions)
		}
		b.Logf("  requests per run, new lock: %.1f, of which %.1f best-effort Events (%s)", per(g.fresh), events(g.fresh), resources(g.fresh))
		b.Logf("  requests per run, existing free lock: %.1f, of which %.1f best-effort Events (%s)", per(g.again), events(g.again), resources(g.again))
	}
	for k := 1; k < len(sides); k++ {
		s := sides[k]
		ratio := func(a, b Sample) float64 { return MS(a.Percentile(50)) / MS(b.Percentile(50)) }
		b.ReportMetric(ratio(got[0].walls, got[k].walls), "wall-p50/"+strings.TrimSuffix(s.prefix, "-"))
		b.ReportMetric(ratio(got[0].cpus, got[k].cpus), "cpu-p50/"+strings.TrimSuffix(s.prefix, "-"))
		if got[k].rss.median() > 0 {
			b.ReportMetric(got[0].rss.median()/got[k].rss.median(), "peak-rss/"+strings.TrimSuffix(s.prefix, "-"))
		}
		b.Logf("this build / %s: wall p50 %.2fx, CPU p50 %.2fx, peak RSS %.2fx", s.name,
			ratio(got[0].walls, got[k].walls), ratio(got[0].cpus, got[k].cpus), got[0].rss.median()/max(got[k].rss.median(), 1e-9))
	}
	b.ReportMetric(0, "ns/op")
}

// loadAverage returns the 1-, 5- and 15-minute load averages, or why not.
func loadAverage() string {
	data, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "unknown (" + err.Error() + ")"
	}
	f := strings.Fields(string(data))
	if len(f) < 3 {
		return "unknown"
	}
	return strings.Join(f[:3], " ")
}
