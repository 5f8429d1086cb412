package bench

import (
	"bytes"
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

	"github.com/lockctl/lockctl/internal/testenv"
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
// (not timed: the proxy spares the processes their TLS handshake).
func BenchmarkRunContention(b *testing.B) {
	env := testenv.Get(b)
	bin := lockctlBinary(b)
	procs := envInt("LOCKCTL_BENCH_RUN_PROCS", 20)
	hold := envInt("LOCKCTL_BENCH_RUN_HOLD_MS", 50)
	rounds := envInt("LOCKCTL_BENCH_RUN_ROUNDS", 5)
	var gaps, walls Sample
	var counts Counts
	for range b.N {
		ns := env.Namespace(b)
		for r := range rounds {
			g, w := runRound(b, bin, runEnviron(b, env.Kubeconfig, ns), fmt.Sprintf("round-%d", r), procs, hold)
			gaps, walls = append(gaps, g...), append(walls, w)
		}
		proxy := startCountingProxy(b, env)
		runRound(b, bin, runEnviron(b, proxy.Kubeconfig, ns), "counted", procs, hold)
		counts = proxy.Counts()
	}
	report(b, "gap-", gaps)
	b.ReportMetric(float64(counts.Total())/float64(procs), "req/process")
	b.ReportMetric(float64(counts.Conflicts)/float64(procs), "conflicts/process")
	b.ReportMetric(0, "ns/op")
	b.Logf("%d lockctl run processes at once on one lock, %d ms commands, %d rounds", procs, hold, rounds)
	b.Logf("  gap, one command's end -> the next one's start: %s", gaps)
	b.Logf("  whole round (all %d held once): %s", procs, walls)
	b.Logf("  requests per process (counted round): %.1f (%s), %d conflicts", float64(counts.Total())/float64(procs), resources(counts), counts.Conflicts)
}

// runRound starts procs `lockctl run` processes at once on one new lock
// and returns the gaps between the commands they ran, and the round's wall
// time.
func runRound(b *testing.B, bin string, environ []string, target string, procs, hold int) (Sample, time.Duration) {
	dir := b.TempDir()
	cmds := make([]*exec.Cmd, procs)
	outs := make([]*bytes.Buffer, procs)
	for i := range cmds {
		cmds[i] = exec.Command(bin, runArgs(target, i, stampedCommand(dir, strconv.Itoa(i), hold)...)...)
		cmds[i].Env = environ
		outs[i] = &bytes.Buffer{}
		cmds[i].Stdout, cmds[i].Stderr = outs[i], outs[i]
	}
	start := time.Now()
	for _, c := range cmds {
		require.NoError(b, c.Start())
	}
	for i, c := range cmds {
		require.NoError(b, c.Wait(), "lockctl run %d: %s", i, outs[i])
	}
	wall := time.Since(start)
	type span struct{ start, end int64 }
	spans := make([]span, procs)
	for i := range spans {
		spans[i] = span{readStamp(b, filepath.Join(dir, strconv.Itoa(i)+".start")), readStamp(b, filepath.Join(dir, strconv.Itoa(i)+".end"))}
	}
	slices.SortFunc(spans, func(a, b span) int { return int(a.start - b.start) })
	var gaps Sample
	for i := 1; i < len(spans); i++ {
		gap := time.Duration(spans[i].start - spans[i-1].end)
		require.Positive(b, gap, "two commands ran at once under one lock")
		gaps = append(gaps, gap)
	}
	return gaps, wall
}

func readStamp(b *testing.B, path string) int64 {
	raw, err := os.ReadFile(path)
	require.NoError(b, err)
	ns, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	require.NoError(b, err, "%s", path)
	return ns
}

// BenchmarkRunUncontended times a whole `lockctl run --lock X -- true`
// process on a free lock, LOCKCTL_BENCH_COLD_RUNS times (default 30), and
// counts the requests of one such run through a counting proxy.
func BenchmarkRunUncontended(b *testing.B) {
	env := testenv.Get(b)
	bin := lockctlBinary(b)
	runs := envInt("LOCKCTL_BENCH_COLD_RUNS", 30)
	var walls Sample
	var counts Counts
	counted := 5
	for range b.N {
		ns := env.Namespace(b)
		environ := runEnviron(b, env.Kubeconfig, ns)
		for i := range runs {
			cmd := exec.Command(bin, runArgs(fmt.Sprintf("free-%03d", i), i, "true")...)
			cmd.Env = environ
			start := time.Now()
			out, err := cmd.CombinedOutput()
			walls = append(walls, time.Since(start))
			require.NoError(b, err, "%s", out)
		}
		proxy := startCountingProxy(b, env)
		environ = runEnviron(b, proxy.Kubeconfig, ns)
		for i := range counted {
			cmd := exec.Command(bin, runArgs(fmt.Sprintf("counted-%03d", i), i, "true")...)
			cmd.Env = environ
			out, err := cmd.CombinedOutput()
			require.NoError(b, err, "%s", out)
		}
		counts = proxy.Counts()
	}
	report(b, "", walls)
	b.ReportMetric(float64(counts.Total())/float64(counted), "req/run")
	b.ReportMetric(0, "ns/op")
	b.Logf("lockctl run --lock X -- true on a free lock, whole process: %s", walls)
	b.Logf("  requests per run: %.1f (%s)", float64(counts.Total())/float64(counted), resources(counts))
}
