package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// measured is one process run under GNU time: its peak RSS and its CPU.
type measured struct {
	rssMiB float64
	cpu    time.Duration
}

// measure runs bin with args in environ under GNU time and returns its
// peak RSS (GNU time's, which forks) and CPU (user and system of GNU time
// and its child, from the rusage Go reads: GNU time's own share is a
// fraction of a millisecond, the same for every program measured).
func measure(b testing.TB, environ []string, bin string, args ...string) measured {
	b.Helper()
	report := filepath.Join(b.TempDir(), "rusage")
	cmd := exec.Command(timeBinary, append([]string{"-f", "%M", "-o", report, "--", bin}, args...)...)
	cmd.Env = environ
	out, err := cmd.CombinedOutput()
	require.NoError(b, err, "%s %v: %s", bin, args, out)
	raw, err := os.ReadFile(report)
	require.NoError(b, err)
	fields := strings.Fields(string(raw))
	require.NotEmpty(b, fields, "GNU time wrote nothing")
	kib, err := strconv.ParseFloat(fields[len(fields)-1], 64)
	require.NoError(b, err, "GNU time: %q", raw)
	return measured{rssMiB: kib / 1024, cpu: cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()}
}

// memoryFigures are the peak RSS and CPU of one command over the runs.
type memoryFigures struct {
	rss rssSample
	cpu Sample
}

func (f *memoryFigures) add(m measured) {
	f.rss, f.cpu = append(f.rss, m.rssMiB), append(f.cpu, m.cpu)
}

// BenchmarkCommandMemory measures the peak RSS and the CPU of the CLI's
// short commands, whole processes under GNU time (a Go parent's rusage of
// its child counts the parent's own resident set): `lockctl acquire`,
// `status`, `release` and `run -- true` on a free lock, each with lockctl's
// runtime settings (one P for every command but reconcile and dashboard)
// and with GOMAXPROCS at the CPUs, alternating, beside the peer (bench/leasepeer with klock's timings)
// running `true` under a Lease. LOCKCTL_BENCH_MEMORY_RUNS (default 10)
// sets the runs of each. It needs GNU time (/usr/bin/time) and skips
// without it.
func BenchmarkCommandMemory(b *testing.B) {
	if _, err := os.Stat(timeBinary); err != nil {
		b.Skipf("needs GNU time at %s to measure a child's peak RSS", timeBinary)
	}
	env := testenv.Get(b)
	bin := lockctlBuilds(b)[0].path
	peer := peerContender(b, false)
	runs := envInt("LOCKCTL_BENCH_MEMORY_RUNS", 10)
	// The runtime setting the CLI changes from Go's (cmd/main.go), and
	// Go's own: one P against one per CPU.
	settings := []string{"default"}
	if n := runtime.NumCPU(); n > 1 {
		settings = append(settings, fmt.Sprintf("GOMAXPROCS=%d", n))
	}
	commands := []string{"acquire", "status", "release", "run -- true"}
	got := map[string]*memoryFigures{}
	fig := func(key string) *memoryFigures {
		if got[key] == nil {
			got[key] = &memoryFigures{}
		}
		return got[key]
	}
	b.Logf("load average at the start: %s", loadAverage())
	for range b.N {
		ns := env.Namespace(b)
		base := runEnviron(b, env.Kubeconfig, ns)
		for i := range runs {
			for j, s := range settings {
				environ := base
				if s != "default" {
					environ = append(append([]string(nil), base...), s)
				}
				target := fmt.Sprintf("mem-%d-%03d", j, i)
				id := []string{"--owner", "bench", "--repo", "memory", "--branch", "main", "--build", "1", "-q"}
				fig(s + " acquire").add(measure(b, environ, bin, append([]string{"acquire", target}, id...)...))
				fig(s + " status").add(measure(b, environ, bin, "status", target))
				fig(s + " release").add(measure(b, environ, bin, append([]string{"release", target}, id...)...))
				fig(s + " run -- true").add(measure(b, environ, bin, runArgs(target+"-run", i, "true")...))
			}
			fig("peer").add(measure(b, base, peer.path, peer.args(ns, fmt.Sprintf("mem-peer-%03d", i), i, "true")...))
		}
	}
	b.Logf("load average at the end: %s", loadAverage())
	peerRSS := got["peer"].rss.median()
	b.Logf("%s, `true` under a Lease: peak RSS %s, CPU %s", peer.name, got["peer"].rss, got["peer"].cpu)
	b.ReportMetric(peerRSS, "peer-peak-rss-MiB")
	b.ReportMetric(MS(got["peer"].cpu.Percentile(50)), "peer-cpu-p50-ms")
	for _, s := range settings {
		for _, c := range commands {
			f := got[s+" "+c]
			metric := strings.ReplaceAll(strings.ReplaceAll(s+"-"+c, " -- true", ""), "=", "")
			b.ReportMetric(f.rss.median(), metric+"-peak-rss-MiB")
			b.ReportMetric(MS(f.cpu.Percentile(50)), metric+"-cpu-p50-ms")
			b.Logf("lockctl %s, %s: peak RSS %s (%.2fx the peer's), CPU %s", c, s, f.rss, f.rss.median()/peerRSS, f.cpu)
		}
	}
	b.ReportMetric(0, "ns/op")
}
