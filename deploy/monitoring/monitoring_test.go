package monitoring_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd"
	"github.com/lockctl/lockctl/internal/testing/promtest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/stats"
)

// TestRulesPassPromtool: the shipped rules are valid (promtool check
// rules) and alert as their unit tests say (promtool test rules).
func TestRulesPassPromtool(t *testing.T) {
	t.Parallel()
	_, promtool := promtest.Tools(t)
	out, code := promtest.Promtool(t, promtool, "", "check", "rules", "rules.yaml")
	assert.Equal(t, 0, code, "promtool check rules:\n%s", out)
	out, code = promtest.Promtool(t, promtool, "", "test", "rules", "rules_test.yaml")
	assert.Equal(t, 0, code, "promtool test rules:\n%s", out)
}

// dashboardExprs are the queries of the shipped Grafana dashboard, with
// its variables as Prometheus reads them (every namespace and target, a
// rate interval of 5m).
func dashboardExprs(t *testing.T) []string {
	t.Helper()
	raw, err := os.ReadFile("grafana-dashboard.json")
	require.NoError(t, err)
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	require.NoError(t, json.Unmarshal(raw, &d), "the dashboard is JSON")
	var out []string
	r := strings.NewReplacer("$__rate_interval", "5m", "$namespace", ".*", "$target", ".*")
	for _, p := range d.Panels {
		require.NotEmpty(t, p.Targets, "panel %q has queries", p.Title)
		for _, tg := range p.Targets {
			assert.Contains(t, tg.Expr, "lockctl_lock_", "panel %q", p.Title)
			out = append(out, r.Replace(tg.Expr))
		}
	}
	return out
}

// run runs lockctl with args against env in namespace ns, failing the
// test on an error.
func run(t *testing.T, env *testenv.Env, ns string, args ...string) {
	t.Helper()
	var errOut bytes.Buffer
	f := cmd.NewFactory(cmd.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: &errOut})
	require.NoError(t, cmd.Run(t.Context(), f, append(args, "--kubeconfig", env.Kubeconfig, "-n", ns)), "lockctl %v: %s", args, errOut.String())
}

// serve runs lockctl with args (a long-running command) until the test
// ends.
func serve(t *testing.T, env *testenv.Env, ns string, args ...string) {
	t.Helper()
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		f := cmd.NewFactory(cmd.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
		_ = cmd.Run(ctx, f, append(args, "--kubeconfig", env.Kubeconfig, "-n", ns))
	}()
	t.Cleanup(func() { cancel(); wg.Wait() })
}

// scrape returns the text of url once it answers 200.
func scrape(t *testing.T, url string) string {
	t.Helper()
	var body string
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		body = string(b)
		return err == nil && resp.StatusCode == http.StatusOK && strings.Contains(body, "lockctl_")
	}, time.Minute, 50*time.Millisecond, "%s serves metrics", url)
	return body
}

// TestIntegrationPrometheusScrapesLockMetrics: a real Prometheus scrapes
// lockctl dashboard's /metrics while contenders wait for a lock and hold
// it; through its HTTP API, the 90th percentile of the waits that
// histogram_quantile reads from lockctl_lock_wait_seconds lies in the
// bucket of the waits the record says were made. Prometheus loads the
// shipped rules, and answers every query of the Grafana dashboard;
// promtool check metrics passes on lockctl dashboard's and lockctl
// reconcile's expositions.
func TestIntegrationPrometheusScrapesLockMetrics(t *testing.T) {
	t.Parallel()
	prometheus, promtool := promtest.Tools(t)
	env := testenv.Get(t)
	ns := env.Namespace(t)
	id := func(build string) []string {
		return []string{"--owner", "acme", "--repo", "web", "--branch", "main", "--build", build}
	}
	acquire := func(build string) []string { return append([]string{"acquire", "staging"}, id(build)...) }
	release := func(build string) []string { return append([]string{"release", "staging"}, id(build)...) }
	// The lock exists before the dashboard starts: its past is not counted.
	run(t, env, ns, acquire("1")...)
	run(t, env, ns, release("1")...)

	dash := promtest.FreeAddr(t)
	serve(t, env, ns, "dashboard", "--address", dash)
	metricsAddr := promtest.FreeAddr(t)
	serve(t, env, ns, "reconcile", "--metrics-addr", metricsAddr)
	for _, url := range []string{"http://" + dash + "/metrics", "http://" + metricsAddr + "/metrics"} {
		out, code := promtest.Promtool(t, promtool, scrape(t, url), "check", "metrics")
		assert.Equal(t, 0, code, "promtool check metrics on %s:\n%s", url, out)
	}
	// NOTE: Prometheus refuses to start with rules it cannot load.
	prom := promtest.Start(t, prometheus, time.Second, []string{dash, metricsAddr}, mustAbs(t, "rules.yaml"))

	// Three rounds: a build takes the free lock (a wait of 0), another
	// waits for it a few seconds and takes it, and releases.
	const rounds = 3
	for i := range rounds {
		a, b := fmt.Sprint(10+2*i), fmt.Sprint(11+2*i)
		run(t, env, ns, acquire(a)...)
		done := make(chan error, 1)
		go func() {
			f := cmd.NewFactory(cmd.IOStreams{In: strings.NewReader(""), Out: io.Discard, ErrOut: io.Discard})
			done <- cmd.Run(t.Context(), f, append(acquire(b), "--kubeconfig", env.Kubeconfig, "-n", ns))
		}()
		waiting(t, env, ns, b)
		// NOTE: the waits are made, not measured: the record says how
		// long each was (below), on the API server's clock.
		time.Sleep(3 * time.Second)
		run(t, env, ns, release(a)...)
		require.NoError(t, <-done)
		run(t, env, ns, release(b)...)
	}

	// The waits as the record has them, and the bucket of their p90.
	cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	rec, err := record.Decode(cm)
	require.NoError(t, err)
	var waits []time.Duration
	for _, h := range rec.History[len(rec.History)-2*rounds:] {
		w, ok := h.Wait()
		require.True(t, ok)
		waits = append(waits, w)
	}
	slices.Sort(waits)
	p90 := stats.Quantile(waits, 0.9).Seconds()
	lo, hi := bucketOf(p90)
	t.Logf("waits %v: p90 %.2fs, in the bucket (%g, %g]", waits, p90, lo, hi)

	sel := fmt.Sprintf(`{namespace=%q,target="staging"}`, ns)
	require.Eventually(t, func() bool {
		s, err := prom.Query(t.Context(), `max(lockctl_lock_wait_seconds_count`+sel+`)`)
		return err == nil && len(s) == 1 && s[0].Value == 2*rounds
	}, 2*time.Minute, 200*time.Millisecond, "Prometheus has scraped the %d waits", 2*rounds)
	q := `histogram_quantile(0.9, max by (le) (rate(lockctl_lock_wait_seconds_bucket` + sel + `[5m])))`
	s, err := prom.Query(t.Context(), q)
	require.NoError(t, err)
	require.Len(t, s, 1, q)
	t.Logf("%s = %.2f", q, s[0].Value)
	assert.GreaterOrEqual(t, s[0].Value, lo, "within the bucket resolution of the waits made")
	assert.LessOrEqual(t, s[0].Value, hi, "within the bucket resolution of the waits made")

	for _, expr := range dashboardExprs(t) {
		_, err := prom.Query(t.Context(), expr)
		assert.NoError(t, err, "the dashboard's query %s", expr)
	}
	assert.Equal(t, 6.0, histogramCount(t, prom, `lockctl_lock_hold_seconds_count`+sel), "six holds ended since the dashboard started")
}

// histogramCount is the highest value of expr's series.
func histogramCount(t *testing.T, prom *promtest.Server, expr string) float64 {
	t.Helper()
	var v float64
	require.Eventually(t, func() bool {
		s, err := prom.Query(t.Context(), "max("+expr+")")
		if err != nil || len(s) != 1 {
			return false
		}
		v = s[0].Value
		return true
	}, time.Minute, 200*time.Millisecond, expr)
	return v
}

// bucketOf is the bucket of stats.Buckets that holds v: its lower and
// upper bound.
func bucketOf(v float64) (lo, hi float64) {
	for _, b := range stats.Buckets() {
		if v <= b {
			return lo, b
		}
		lo = b
	}
	return lo, math.Inf(1)
}

// waiting waits until build waits in the queue of staging.
func waiting(t *testing.T, env *testenv.Env, ns, build string) {
	t.Helper()
	require.Eventually(t, func() bool {
		cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
		if err != nil {
			return false
		}
		rec, err := record.Decode(cm)
		return err == nil && len(rec.Waiters) == 1 && rec.Waiters[0].Build == build
	}, time.Minute, 10*time.Millisecond, "build %s waits", build)
}

func mustAbs(t *testing.T, file string) string {
	t.Helper()
	abs, err := filepath.Abs(file)
	require.NoError(t, err)
	return abs
}

func TestMain(m *testing.M) { testenv.Main(m) }
