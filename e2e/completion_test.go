package e2e

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// complete runs `lockctl __complete args...` as the shell completion
// scripts do, and returns the candidates and the directive line.
func (c *cli) complete(t *testing.T, args ...string) (candidates []string, directive string) {
	t.Helper()
	o := c.run(t, append([]string{"__complete"}, args...)...)
	require.Equal(t, 0, o.code, "completion never fails: %s", o.stderr)
	lines := strings.Split(strings.TrimSuffix(o.stdout, "\n"), "\n")
	return lines[:len(lines)-1], lines[len(lines)-1]
}

// TestIntegrationCLICompletion completes names from the real control plane
// and the kubeconfig, as bash, zsh and fish ask for them.
func TestIntegrationCLICompletion(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	require.Equal(t, 0, c.run(t, append([]string{"acquire", "staging"}, id("web", 1)...)...).code)
	o := c.run(t, "submit", "-f", testenv.WriteJob(t, "complete-me", ""))
	require.Equal(t, 0, o.code, o.stderr)

	got, directive := c.complete(t, "release", "")
	assert.Equal(t, []string{"staging\theld by acme/web@main#1"}, got, "release offers the held locks")
	assert.Equal(t, ":4", directive, "and no file names")

	got, _ = c.complete(t, "acquire", "")
	assert.Contains(t, got, "staging\theld by acme/web@main#1", "acquire offers the locks")
	assert.Contains(t, got, c.namespace, "and the namespaces")
	assert.Contains(t, got, "kube-system")

	got, _ = c.complete(t, "logs", "complete")
	assert.Equal(t, []string{"complete-me\ttriggered"}, got, "logs offers the job records")
	got, _ = c.complete(t, "abort", "")
	assert.Contains(t, got, "complete-me\ttriggered", "abort offers the unfinished jobs")

	got, _ = c.complete(t, "status", "-n", "kube-")
	assert.Contains(t, got, "kube-system", "-n offers namespaces")
	got, _ = c.complete(t, "acquire", "--lock-namespace", "")
	assert.Contains(t, got, c.namespace)

	cfg, err := clientcmd.LoadFromFile(c.kubeconfig)
	require.NoError(t, err)
	got, _ = c.complete(t, "status", "--context", "")
	require.NotEmpty(t, got)
	for _, cand := range got {
		name, _, _ := strings.Cut(cand, "\t")
		assert.Contains(t, cfg.Contexts, name, "--context offers the kubeconfig's contexts")
	}

	got, _ = c.complete(t, "acquire", "--policy", "")
	assert.Equal(t, []string{"newest", "fifo"}, got)
	got, _ = c.complete(t, "status", "-o", "")
	assert.Equal(t, []string{"wide", "name", "json", "yaml"}, got, "status -o offers its output forms")
}

// TestIntegrationCLICompletionNeverHangs completes against an API server
// that accepts connections and never answers: the completion gives up
// after its short timeout, offers nothing and prints no error.
func TestIntegrationCLICompletionNeverHangs(t *testing.T) {
	t.Parallel()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = l.Close() })
	go func() {
		for {
			conn, err := l.Accept()
			if err != nil {
				return
			}
			t.Cleanup(func() { _ = conn.Close() }) // held open, never answered
		}
	}()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: c, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: x}}]
contexts: [{name: silent, context: {cluster: c, user: u, namespace: default}}]
current-context: silent
`, l.Addr())), 0o600))
	c := &cli{kubeconfig: kubeconfig, namespace: "default"}

	for _, args := range [][]string{{"acquire", ""}, {"logs", ""}, {"status", "-n", ""}} {
		// NOTE: a generous bound to catch a hang, not a speed check: the
		// completion's own timeout is 3s.
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		o := c.runCmd(t, c.command(ctx, append([]string{"__complete"}, args...)...))
		require.NoError(t, ctx.Err(), "%q returned before the test's bound", args)
		cancel()
		assert.Equal(t, 0, o.code, "%q: %s", args, o.stderr)
		assert.Equal(t, ":4\n", o.stdout, "%q offers nothing", args)
		assert.NotContains(t, o.stdout+o.stderr, "error:", "%q prints no error", args)
	}

	got, _ := c.complete(t, "status", "--context", "")
	assert.Equal(t, []string{"silent\tcluster c, namespace default"}, got, "contexts come from the kubeconfig, without the API server")
}
