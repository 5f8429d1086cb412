package bench

import (
	"bufio"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// startRun is one `lockctl version` process: its wall time and, from a second run under GODEBUG=inittrace=1, the packages it
// initialised, their summed init clock and when main was reached (the end
// of the last init, from the runtime's start).
type startRun struct {
	wall, initClock, mainAt time.Duration
	inits                   int
}

// startSample collects startRuns.
type startSample struct {
	walls, initClocks, mainAts Sample
	inits                      int
}

func (s *startSample) add(r startRun) {
	s.walls = append(s.walls, r.wall)
	s.initClocks = append(s.initClocks, r.initClock)
	s.mainAts = append(s.mainAts, r.mainAt)
	s.inits = r.inits
}

// report reports the sample's metrics under prefix.
func (s *startSample) report(b *testing.B, prefix string) {
	b.Helper()
	report(b, prefix, s.walls)
	b.ReportMetric(MS(s.initClocks.Percentile(50)), prefix+"init-clock-p50-ms")
	b.ReportMetric(MS(s.mainAts.Percentile(50)), prefix+"main-at-p50-ms")
	b.ReportMetric(float64(s.inits), prefix+"inits")
}

func (s *startSample) String() string {
	return fmt.Sprintf("wall %s; %d package inits, init clock summed p50 %s, main reached p50 %s",
		s.walls, s.inits, FormatMS(s.initClocks.Percentile(50)), FormatMS(s.mainAts.Percentile(50)))
}

// startOnce runs `bin version` twice with environ: plainly (wall time),
// then under GODEBUG=inittrace=1 (inits). It reports no peak RSS: the
// rusage of a child started from Go counts the parent's resident set, which
// the child shares (vfork) until it execs.
func startOnce(b testing.TB, bin string, environ []string) startRun {
	b.Helper()
	cmd := exec.Command(bin, "version")
	cmd.Env = environ
	start := time.Now()
	out, err := cmd.CombinedOutput()
	r := startRun{wall: time.Since(start)}
	require.NoError(b, err, "%s", out)
	cmd = exec.Command(bin, "version")
	cmd.Env = append(append([]string(nil), environ...), "GODEBUG=inittrace=1")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(b, cmd.Run(), "%s", stderr.String())
	r.inits, r.initClock, r.mainAt = parseInitTrace(stderr.String())
	return r
}

// parseInitTrace reads the runtime's init trace, lines such as
//
//	init k8s.io/client-go/kubernetes/scheme @74 ms, 12 ms clock, 647632 bytes, 5660 allocs
//
// and returns how many packages it initialised, their summed clock and the
// end of the last one (@ plus its clock).
func parseInitTrace(trace string) (n int, clock, mainAt time.Duration) {
	sc := bufio.NewScanner(strings.NewReader(trace))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) < 7 || f[0] != "init" || !strings.HasPrefix(f[2], "@") || f[6] != "clock," {
			continue
		}
		at, err1 := strconv.ParseFloat(strings.TrimPrefix(f[2], "@"), 64)
		c, err2 := strconv.ParseFloat(f[4], 64)
		if err1 != nil || err2 != nil {
			continue
		}
		n++
		clock += msDuration(c)
		mainAt = max(mainAt, msDuration(at+c))
	}
	return n, clock, mainAt
}

func msDuration(ms float64) time.Duration { return time.Duration(ms * float64(time.Millisecond)) }

// BenchmarkProcessStart times the floor of every lockctl process, `lockctl
// version` (start, init, exit; no request), LOCKCTL_BENCH_START_RUNS times
// (default 50), with its package inits (GODEBUG=inittrace=1) and the
// binary's size, alternating with the baseline build, if any
// (lockctlBuilds), and with the floor of any Go program on this machine: a
// hello world built the same way. It needs no control plane.
func BenchmarkProcessStart(b *testing.B) {
	bins := append(lockctlBuilds(b), lockctlBuild{name: "Go hello world", prefix: "hello-", path: buildHello(b)})
	runs := envInt("LOCKCTL_BENCH_START_RUNS", 50)
	environ := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + b.TempDir()}
	samples := make([]startSample, len(bins))
	for range b.N {
		for range runs {
			for i, bin := range bins {
				samples[i].add(startOnce(b, bin.path, environ))
			}
		}
	}
	for i, bin := range bins {
		samples[i].report(b, bin.prefix+"version-")
		st, err := os.Stat(bin.path)
		require.NoError(b, err)
		b.ReportMetric(float64(st.Size())/1e6, bin.prefix+"binary-MB")
		b.Logf("%s (%s, %.1f MB): %s", bin.name, bin.path, float64(st.Size())/1e6, &samples[i])
	}
	b.ReportMetric(0, "ns/op")
}

func TestParseInitTrace(t *testing.T) {
	trace := "init runtime @1.5 ms, 0.37 ms clock, 0 bytes, 0 allocs\n" +
		"lockctl v1\n" +
		"init k8s.io/client-go/kubernetes/scheme @74 ms, 12 ms clock, 647632 bytes, 5660 allocs\n" +
		"init errors @0.2 ms, 0.001 ms clock, 0 bytes, 0 allocs\n"
	n, clock, mainAt := parseInitTrace(trace)
	require.Equal(t, 3, n)
	require.InDelta(t, 12.371, MS(clock), 1e-6)
	require.InDelta(t, 86, MS(mainAt), 1e-6)
}

// buildHello builds a Go hello world (fmt.Println) as the CLI is built
// (-trimpath, stripped, CGO off): the floor of any Go process here.
func buildHello(b *testing.B) string {
	b.Helper()
	dir := b.TempDir()
	src := "package main\n\nimport \"fmt\"\n\nfunc main() { fmt.Println(\"hello\") }\n"
	require.NoError(b, os.WriteFile(filepath.Join(dir, "main.go"), []byte(src), 0o600))
	require.NoError(b, os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n"), 0o600))
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "CGO_ENABLED=0", "GOFLAGS=-mod=mod")
	out, err := cmd.CombinedOutput()
	require.NoError(b, err, "%s", out)
	return bin
}
