package bench

import (
	"context"
	"flag"
	"fmt"
	"k8s.io/utils/clock"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/go-logr/logr"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
)

// TestMain starts the shared control plane only when benchmarks run, so
// `go test ./...` spends nothing on this package beyond its unit tests.
func TestMain(m *testing.M) {
	flag.Parse()
	// client-go's leader election logs every attempt through klog.
	klog.SetLogger(logr.Discard())
	if f := flag.Lookup("test.bench"); f == nil || f.Value.String() == "" {
		m.Run()
		return
	}
	testenv.Main(m)
	clitest.Cleanup()
	cleanupPeer()
}

// envInt reads a positive integer knob of the benchmarks, such as
// LOCKCTL_BENCH_HANDOVERS, falling back to def.
func envInt(name string, def int) int {
	if n, err := strconv.Atoi(os.Getenv(name)); err == nil && n > 0 {
		return n
	}
	return def
}

// lockctlBuild is a lockctl binary a benchmark starts: name for its log
// lines, prefix for its metrics.
type lockctlBuild struct{ name, prefix, path string }

// lockctlBuilds returns the lockctl builds a benchmark of processes
// compares: this one, and the build LOCKCTL_BENCH_BASELINE_BIN names, if
// any (say, main's, built as `make build` builds it), whose metrics carry
// the prefix baseline-; the benchmark alternates them, so a change is
// measured side by side under the same load.
func lockctlBuilds(b *testing.B) []lockctlBuild {
	b.Helper()
	builds := []lockctlBuild{{name: "this build", path: clitest.Binary(b)}}
	if base := os.Getenv("LOCKCTL_BENCH_BASELINE_BIN"); base != "" {
		builds = append(builds, lockctlBuild{name: "baseline " + base, prefix: "baseline-", path: base})
	}
	return builds
}

// newClientset builds a clientset of its own (own rate limiter and
// connections) from cfg, as a separate lockctl process would have.
func newClientset(b testing.TB, cfg *rest.Config) kubernetes.Interface {
	b.Helper()
	cs, err := kubernetes.NewForConfig(rest.CopyConfig(cfg))
	require.NoError(b, err)
	return cs
}

// newKube builds lockctl's own clients (own rate limiter and connections)
// from cfg, as a separate lockctl process would have.
func newKube(b testing.TB, cfg *rest.Config) kube.Interface {
	b.Helper()
	cs, err := kube.NewForConfig(rest.CopyConfig(cfg))
	require.NoError(b, err)
	return cs
}

// newLockClient returns a lock client with clients of its own.
func newLockClient(b testing.TB, cfg *rest.Config, ns string) *lock.Client {
	b.Helper()
	cs := newKube(b, cfg)
	return lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{})
}

// within returns a context that ends after d, for one experiment.
func within(b testing.TB, d time.Duration) context.Context {
	ctx, cancel := context.WithTimeoutCause(context.Background(), d, fmt.Errorf("%s: experiment took longer than %s", b.Name(), d))
	b.Cleanup(cancel)
	return ctx
}

// report prints a latency sample and reports it as <prefix>p50-ms,
// <prefix>p99-ms and <prefix>max-ms.
func report(b *testing.B, prefix string, s Sample) {
	b.Helper()
	b.ReportMetric(MS(s.Percentile(50)), prefix+"p50-ms")
	b.ReportMetric(MS(s.Percentile(99)), prefix+"p99-ms")
	b.ReportMetric(MS(s.Max()), prefix+"max-ms")
}

// serverVersion names the API server the figures come from.
func serverVersion(cs kubernetes.Interface) string {
	v, err := cs.Discovery().ServerVersion()
	if err != nil {
		return "unknown"
	}
	return v.GitVersion
}
