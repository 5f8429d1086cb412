package bench

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// startCost is what one process cost, as GNU time and the clock saw it.
type startCost struct {
	wall, cpu     time.Duration
	rssMiB        float64
	minor, major  float64
	voluntaryCtxs float64
}

// startCosts collects startCosts of one program.
type startCosts struct {
	wall, cpu                Sample
	rss, minor, major, volun rssSample
}

func (s *startCosts) add(c startCost) {
	s.wall, s.cpu = append(s.wall, c.wall), append(s.cpu, c.cpu)
	s.rss, s.minor, s.major = append(s.rss, c.rssMiB), append(s.minor, c.minor), append(s.major, c.major)
	s.volun = append(s.volun, c.voluntaryCtxs)
}

func (s *startCosts) String() string {
	return fmt.Sprintf("wall %s; cpu p50 %s; peak RSS median %.1f MiB; minor faults median %.0f, major %.0f; voluntary switches %.0f",
		s.wall, FormatMS(s.cpu.Percentile(50)), s.rss.median(), s.minor.median(), s.major.median(), s.volun.median())
}

// timeStart runs bin with args under GNU time, which forks it itself, so
// the peak RSS is the child's own (see startOnce).
func timeStart(b testing.TB, environ []string, bin string, args ...string) startCost {
	b.Helper()
	report := filepath.Join(b.TempDir(), "rusage")
	cmd := exec.Command(timeBinary, append([]string{"-f", "%M %R %F %w", "-o", report, "--", bin}, args...)...)
	cmd.Env = environ
	start := time.Now()
	out, err := cmd.CombinedOutput()
	wall := time.Since(start)
	require.NoError(b, err, "%s %v: %s", bin, args, out)
	raw, err := os.ReadFile(report)
	require.NoError(b, err)
	f := strings.Fields(string(raw))
	require.Len(b, f, 4, "GNU time: %q", raw)
	n := make([]float64, len(f))
	for i := range f {
		n[i], err = strconv.ParseFloat(f[i], 64)
		require.NoError(b, err, "GNU time: %q", raw)
	}
	// NOTE: GNU time prints CPU times in hundredths of a second; the wait
	// for it reports its own and its child's, to the microsecond, and it
	// spends next to nothing itself.
	return startCost{
		wall:   wall,
		cpu:    cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime(),
		rssMiB: n[0] / 1024, minor: n[1], major: n[2], voluntaryCtxs: n[3],
	}
}

// BenchmarkStartFloor measures lockctl's `status TARGET` against the floor
// of any Kubernetes command-line tool, bench/startfloor (load the
// kubeconfig, build client-go's transport, GET one ConfigMap), side by side:
// LOCKCTL_BENCH_START_RUNS rounds (default 30), each running the floor and
// then lockctl against the same held lock, under GNU time: wall, CPU, peak
// RSS, page faults and binary size, and lockctl's ratio to the floor. With
// LOCKCTL_BENCH_BASELINE_BIN naming other lockctl builds, comma-separated
// (say, main's, or this tree with a start-up tuning taken out, built as
// `make build` builds it), each round runs them too, after this build, and
// their ratios are logged: a change is measured side by side. Every
// program is run from a copy made as cp makes it (copied).
func BenchmarkStartFloor(b *testing.B) {
	if _, err := os.Stat(timeBinary); err != nil {
		b.Skipf("needs GNU time at %s to measure a child's peak RSS", timeBinary)
	}
	env := testenv.Get(b)
	ns := env.Namespace(b)
	ctx := within(b, 10*time.Minute)
	const target = "staging"
	l := newLockClient(b, env.RESTConfig, ns)
	_, err := l.Acquire(ctx, lock.Request{Target: target, Identity: clitest.Identity("floor", 1)})
	require.NoError(b, err)

	floor := buildStartFloor(b)
	type startBin struct {
		name, prefix, path string
		args               []string
	}
	status := []string{"status", target, "--lock-namespace", ns}
	bins := []startBin{
		{"floor (startfloor: kubeconfig, transport, GET)", "floor-", floor, []string{ns, record.Name(target)}},
		{"lockctl status TARGET", "status-", clitest.Binary(b), status},
	}
	for i, base := range strings.Split(os.Getenv("LOCKCTL_BENCH_BASELINE_BIN"), ",") {
		if base != "" {
			prefix := "baseline-status-"
			if i > 0 {
				prefix = fmt.Sprintf("baseline%d-status-", i+1)
			}
			bins = append(bins, startBin{"baseline " + base + " status TARGET", prefix, base, status})
		}
	}
	for i := range bins {
		bins[i].path = copied(b, bins[i].path)
	}
	environ := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir(), "KUBECONFIG=" + env.Kubeconfig}
	runs := envInt("LOCKCTL_BENCH_START_RUNS", 30)
	costs := make([]startCosts, len(bins))
	b.Logf("load average at the start: %s", loadAverage())
	for range b.N {
		for range runs {
			for i, bin := range bins {
				costs[i].add(timeStart(b, environ, bin.path, bin.args...))
			}
		}
	}
	b.Logf("load average at the end: %s", loadAverage())
	for i, bin := range bins {
		c := &costs[i]
		st, err := os.Stat(bin.path)
		require.NoError(b, err)
		report(b, bin.prefix+"wall-", c.wall)
		b.ReportMetric(MS(c.cpu.Percentile(50)), bin.prefix+"cpu-p50-ms")
		b.ReportMetric(c.rss.median(), bin.prefix+"rss-MiB")
		b.ReportMetric(c.minor.median(), bin.prefix+"minor-faults")
		b.ReportMetric(float64(st.Size())/1e6, bin.prefix+"binary-MB")
		b.Logf("%-48s %5.1f MB: %s", bin.name, float64(st.Size())/1e6, c)
	}
	f, s := &costs[0], &costs[1]
	ratio := func(a, b float64) float64 { return a / b }
	b.ReportMetric(ratio(MS(s.wall.Percentile(50)), MS(f.wall.Percentile(50))), "wall-x-floor")
	b.ReportMetric(ratio(MS(s.cpu.Percentile(50)), MS(f.cpu.Percentile(50))), "cpu-x-floor")
	b.ReportMetric(ratio(s.rss.median(), f.rss.median()), "rss-x-floor")
	for i, bin := range bins[1:] {
		s := &costs[i+1]
		b.Logf("%s / floor: wall p50 %.2fx, cpu p50 %.2fx, peak RSS %.2fx, minor faults %.2fx", bin.name,
			ratio(MS(s.wall.Percentile(50)), MS(f.wall.Percentile(50))), ratio(MS(s.cpu.Percentile(50)), MS(f.cpu.Percentile(50))),
			ratio(s.rss.median(), f.rss.median()), ratio(s.minor.median(), f.minor.median()))
	}
	b.ReportMetric(0, "ns/op")
}

// copied returns a copy of the program at path in a temporary directory,
// made as cp makes it (io.Copy between files: the kernel's
// copy_file_range). How the file was written shows in what a process
// started from it costs: on this machine (ext4, Linux 6.18) the same
// lockctl binary started with a fifth more CPU from the file the Go linker
// wrote than from a cp of it, and peaked 6 MiB higher from a copy written
// in one write(2). Programs compared side by side are copied alike.
func copied(b *testing.B, path string) string {
	b.Helper()
	src, err := os.Open(path)
	require.NoError(b, err)
	defer src.Close()
	dst := filepath.Join(b.TempDir(), filepath.Base(path))
	out, err := os.OpenFile(dst, os.O_CREATE|os.O_WRONLY|os.O_EXCL, 0o755)
	require.NoError(b, err)
	_, err = io.Copy(out, src)
	require.NoError(b, err)
	require.NoError(b, out.Close())
	return dst
}

// buildStartFloor builds bench/startfloor as the CLI is built (-trimpath,
// stripped, CGO off).
func buildStartFloor(b *testing.B) string {
	b.Helper()
	bin := filepath.Join(b.TempDir(), "startfloor")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, "./startfloor")
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
	out, err := cmd.CombinedOutput()
	require.NoError(b, err, "%s", out)
	return bin
}
