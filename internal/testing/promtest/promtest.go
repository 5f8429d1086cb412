// Package promtest runs the real Prometheus for tests: promtool on an
// exposition or rules (Promtool), and a Prometheus server that scrapes
// given targets and answers PromQL (Start). Both are built from their Go
// module by hack/integration-tools.sh (tool prometheus); like the control
// plane, a missing build fails the test with what to run, and -short
// skips it.
package promtest

import (
	"context"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/url"
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

// repoRoot is the repository's root directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..")
}

// Tools returns the paths of prometheus and promtool.
func Tools(t testing.TB) (prometheus, promtool string) {
	t.Helper()
	if testing.Short() {
		if os.Getenv(testenv.RequireIntegrationEnv) != "" {
			t.Fatalf("Prometheus test skipped under -short while %s is set: run it without -short", testenv.RequireIntegrationEnv)
		}
		t.Skip("runs Prometheus: skipped under -short")
	}
	out, err := exec.Command(filepath.Join(repoRoot(), "hack", "integration-tools.sh"), "--path", "prometheus").Output()
	require.NoError(t, err, "hack/integration-tools.sh --path prometheus")
	prometheus = strings.TrimSpace(string(out))
	promtool = filepath.Join(filepath.Dir(prometheus), "promtool")
	for _, p := range []string{prometheus, promtool} {
		if _, err := os.Stat(p); err != nil {
			t.Fatalf("%s is not built: run hack/integration-tools.sh prometheus (make test does)", p)
		}
	}
	return prometheus, promtool
}

// Promtool runs promtool with args and stdin, and returns its combined
// output and exit code.
func Promtool(t testing.TB, promtool, stdin string, args ...string) (string, int) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), promtool, args...)
	cmd.Stdin = strings.NewReader(stdin)
	out, err := cmd.CombinedOutput()
	if ee, ok := err.(*exec.ExitError); ok {
		return string(out), ee.ExitCode()
	}
	require.NoError(t, err, "run promtool %v", args)
	return string(out), 0
}

// Server is a running Prometheus server.
type Server struct {
	// URL is its base URL: URL + "api/v1/query".
	URL string
}

// Start runs a Prometheus server that scrapes targets (host:port, path
// /metrics) every interval, until the test ends, and waits until it is
// ready. rules, when not empty, are rule files it evaluates every interval.
func Start(t testing.TB, prometheus string, interval time.Duration, targets []string, rules ...string) *Server {
	t.Helper()
	dir := t.TempDir()
	quoted := make([]string, len(targets))
	for i, tg := range targets {
		quoted[i] = strconv.Quote(tg)
	}
	files := make([]string, len(rules))
	for i, r := range rules {
		files[i] = strconv.Quote(r)
	}
	config := fmt.Sprintf(`global:
  scrape_interval: %[1]s
  evaluation_interval: %[1]s
rule_files: [%[3]s]
scrape_configs:
  - job_name: lockctl
    honor_labels: true
    static_configs:
      - targets: [%[2]s]
`, interval, strings.Join(quoted, ", "), strings.Join(files, ", "))
	cfg := filepath.Join(dir, "prometheus.yml")
	require.NoError(t, os.WriteFile(cfg, []byte(config), 0o600))
	addr := freeAddr(t)
	logs, err := os.Create(filepath.Join(dir, "prometheus.log"))
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
	cmd := exec.CommandContext(ctx, prometheus, "--config.file="+cfg, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address="+addr, "--log.level=warn")
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		_ = logs.Close()
		if t.Failed() {
			b, _ := os.ReadFile(logs.Name())
			t.Logf("prometheus log:\n%s", b)
		}
	})
	s := &Server{URL: "http://" + addr + "/"}
	require.Eventually(t, func() bool {
		resp, err := http.Get(s.URL + "-/ready")
		if err != nil {
			return false
		}
		_ = resp.Body.Close()
		return resp.StatusCode == http.StatusOK
	}, 2*time.Minute, 50*time.Millisecond, "prometheus becomes ready on %s", addr)
	return s
}

// freeAddr is a loopback address with a port free now.
func freeAddr(t testing.TB) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	return addr
}

// FreeAddr is a loopback address with a port free now, for a server the
// test starts and Prometheus scrapes.
func FreeAddr(t testing.TB) string { return freeAddr(t) }

// Sample is one series of a query's answer.
type Sample struct {
	Labels map[string]string
	Value  float64
}

// Query evaluates expr now through the HTTP API (/api/v1/query) and
// returns its samples; an expression Prometheus refuses is an error.
func (s *Server) Query(ctx context.Context, expr string) ([]Sample, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.URL+"api/v1/query?query="+url.QueryEscape(expr), nil)
	if err != nil {
		return nil, err
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	var body struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			ResultType string `json:"resultType"`
			Result     []struct {
				Metric map[string]string `json:"metric"`
				Value  [2]any            `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&body); err != nil {
		return nil, fmt.Errorf("query %q: %w", expr, err)
	}
	if body.Status != "success" {
		return nil, fmt.Errorf("query %q: %s", expr, body.Error)
	}
	var out []Sample
	for _, r := range body.Data.Result {
		str, _ := r.Value[1].(string)
		v, err := strconv.ParseFloat(str, 64)
		if err != nil {
			return nil, fmt.Errorf("query %q: value %v: %w", expr, r.Value[1], err)
		}
		out = append(out, Sample{Labels: r.Metric, Value: v})
	}
	return out, nil
}
