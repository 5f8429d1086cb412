package bench

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
)

// contender is a program the benchmarks of processes run under a lock: a
// lockctl build, or the peer (bench/leasepeer, client-go's leaderelection
// on a Lease, as klock runs it). name is for log lines, prefix for metrics.
type contender struct {
	name, prefix, path string
	// args returns the arguments of one process holding target in the
	// namespace ns with identity number i while it runs command.
	args func(ns, target string, i int, command ...string) []string
	// lockctl is set for lockctl builds, which have `version` and a lock
	// a ConfigMap watch can follow.
	lockctl bool
}

// lockctlContenders are lockctlBuilds as contenders.
func lockctlContenders(b *testing.B) []contender {
	var out []contender
	for _, build := range lockctlBuilds(b) {
		out = append(out, contender{
			name: build.name, prefix: build.prefix, path: build.path, lockctl: true,
			args: func(_, target string, i int, command ...string) []string { return runArgs(target, i, command...) },
		})
	}
	return out
}

// peerContender is the peer with klock's default timings (lease 15 s,
// renew 10 s, retry 2 s) or, with fast, the bench's fast setting (2 s, 1 s,
// 200 ms): bench/leasepeer built as lockctl is built.
func peerContender(b *testing.B, fast bool) contender {
	c := contender{name: "leasepeer (client-go leaderelection on a Lease, klock's timings 15s/10s/2s)", prefix: "peer-", path: peerBinary(b)}
	if fast {
		c.name, c.prefix = "leasepeer fast (2s/1s/200ms)", "peer-fast-"
	}
	c.args = func(ns, target string, i int, command ...string) []string {
		args := []string{"-n", ns, "-l", target, "-i", fmt.Sprintf("repo-%02d", i)}
		if fast {
			args = append(args, "-fast")
		}
		return append(append(args, "--"), command...)
	}
	return c
}

// peerContenders are the peer's settings LOCKCTL_BENCH_PEER_TIMINGS names,
// comma-separated: "default" (klock's) and "fast"; def when it is unset.
func peerContenders(b *testing.B, def string) []contender {
	setting := os.Getenv("LOCKCTL_BENCH_PEER_TIMINGS")
	if setting == "" {
		setting = def
	}
	var out []contender
	for _, s := range strings.Split(setting, ",") {
		switch strings.TrimSpace(s) {
		case "default":
			out = append(out, peerContender(b, false))
		case "fast":
			out = append(out, peerContender(b, true))
		case "none", "":
		default:
			b.Fatalf("LOCKCTL_BENCH_PEER_TIMINGS: %q is none of default, fast, none", s)
		}
	}
	return out
}

var (
	peerOnce sync.Once
	peerDir  string
	peerBin  string
	peerErr  error
)

// peerBinary builds bench/leasepeer the first time it is called, as
// clitest builds lockctl (CGO_ENABLED=0, -trimpath, -ldflags "-s -w"), and
// returns its path. cleanupPeer removes it.
func peerBinary(b testing.TB) string {
	b.Helper()
	peerOnce.Do(func() {
		if peerDir, peerErr = os.MkdirTemp("", "leasepeer-"); peerErr != nil {
			return
		}
		_, file, _, _ := runtime.Caller(0)
		peerBin = filepath.Join(peerDir, "leasepeer")
		cmd := exec.Command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", peerBin, "./leasepeer")
		cmd.Dir = filepath.Dir(file)
		cmd.Env = append(os.Environ(), "CGO_ENABLED=0")
		if out, err := cmd.CombinedOutput(); err != nil {
			peerErr = fmt.Errorf("build leasepeer: %v\n%s", err, out)
		}
	})
	require.NoError(b, peerErr)
	return peerBin
}

// cleanupPeer removes what peerBinary built.
func cleanupPeer() {
	if peerDir != "" {
		_ = os.RemoveAll(peerDir)
	}
}

// processRun is one whole process: its wall time and the CPU it used
// (user and system, from its rusage).
type processRun struct {
	wall, cpu time.Duration
}

// runProcess runs bin with args in environ to its end and returns its wall
// and CPU time. The CPU time is the child's own: what it ran before its
// exec (the parent's vfork) is negligible.
func runProcess(b testing.TB, environ []string, bin string, args ...string) processRun {
	b.Helper()
	cmd := exec.Command(bin, args...)
	cmd.Env = environ
	start := time.Now()
	out, err := cmd.CombinedOutput()
	r := processRun{wall: time.Since(start)}
	require.NoError(b, err, "%s %v: %s", bin, args, out)
	r.cpu = cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
	return r
}

// timeBinary is GNU time, which reports a child's peak RSS truly: it
// forks, so its child's high-water mark starts from time's small resident
// set. The rusage of a child a Go process starts counts the parent's
// resident set (the child shares it, vfork, until it execs).
const timeBinary = "/usr/bin/time"

// peakRSS runs bin with args in environ under GNU time and returns its
// peak resident set in MiB; false without GNU time.
func peakRSS(b testing.TB, environ []string, bin string, args ...string) (float64, bool) {
	b.Helper()
	if _, err := os.Stat(timeBinary); err != nil {
		return 0, false
	}
	return measure(b, environ, bin, args...).rssMiB, true
}

// rssSample is a set of peak RSS figures in MiB.
type rssSample []float64

// median returns the median; 0 for an empty sample.
func (s rssSample) median() float64 {
	if len(s) == 0 {
		return 0
	}
	sorted := slices.Clone(s)
	slices.Sort(sorted)
	return sorted[(len(sorted)-1)/2]
}

func (s rssSample) String() string {
	if len(s) == 0 {
		return "not measured (no " + timeBinary + ")"
	}
	return fmt.Sprintf("n=%d median=%.1fMiB", len(s), s.median())
}
