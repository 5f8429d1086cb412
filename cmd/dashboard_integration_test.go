package cmd

import (
	"context"
	"net"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

var pageURL = regexp.MustCompile(`http://127\.0\.0\.1:[0-9]+/`)

// serveCommand runs lockctl with args against the control plane until the
// test ends, and returns the URL it printed: on stderr when onStderr, else
// on stdout.
func serveCommand(t *testing.T, env *testenv.Env, ns string, onStderr bool, args ...string) string {
	t.Helper()
	var out, errOut clitest.SyncBuffer
	f := NewFactory(IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- Run(ctx, f, append(args, "--kubeconfig", env.Kubeconfig, "-n", ns)) }()
	t.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			assert.NoError(t, err, "%v ends cleanly when interrupted", args)
		case <-time.After(30 * time.Second):
			t.Errorf("%v did not end within 30s of its interruption", args)
		}
	})
	where := &out
	if onStderr {
		where = &errOut
	}
	var url string
	require.Eventually(t, func() bool {
		url = pageURL.FindString(where.String())
		return url != ""
	}, 60*time.Second, 20*time.Millisecond, "%v prints the page's URL; stderr: %s", args, errOut.String())
	return url
}

func TestIntegrationDashboardCommands(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	_, errOut, code := lockctlIn(t, env, ns, "acquire", "staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "41")
	require.Zero(t, code, errOut)

	t.Run("lockctl dashboard", func(t *testing.T) {
		url := serveCommand(t, env, ns, false, "dashboard")
		assert.Contains(t, fetch(t, url+"api/snapshot"), `"build":"41"`, "the holder, from the cluster")
		assert.Contains(t, fetch(t, url), "staging", "the page")
	})

	t.Run("lockctl dashboard refuses every interface unless --allow-remote", func(t *testing.T) {
		for _, addr := range []string{"0.0.0.0:0", ":0", "[::]:0"} {
			_, errOut, code := lockctlIn(t, env, ns, "dashboard", "--address", addr)
			assert.Equal(t, 2, code, "%s: %s", addr, errOut)
			assert.Contains(t, errOut, "is not a loopback address", addr)
			assert.Contains(t, errOut, "--allow-remote", addr)
		}
		var out, errOut clitest.SyncBuffer
		f := NewFactory(IOStreams{In: strings.NewReader(""), Out: &out, ErrOut: &errOut})
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			done <- Run(ctx, f, []string{"dashboard", "--address", "0.0.0.0:0", "--allow-remote", "--kubeconfig", env.Kubeconfig, "-n", ns})
		}()
		defer func() { cancel(); assert.NoError(t, <-done) }()
		var url string
		require.Eventually(t, func() bool { url = pageURL.FindString(out.String()); return url != "" }, 60*time.Second, 20*time.Millisecond, "the URL; stderr: %s", errOut.String())
		_, port, err := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/"))
		require.NoError(t, err)
		assert.NotEqual(t, "0", port, "the port really listened on")
		assert.Contains(t, errOut.String(), "warning: serving the dashboard on every interface of this machine, port "+port+
			", with no authentication (--allow-remote): anyone who reaches it reads the locks, the jobs and the job pods' logs")
		assert.Contains(t, fetch(t, url+"api/snapshot"), `"build":"41"`)
		if other := otherAddress(t); other != "" {
			assert.Contains(t, fetch(t, "http://"+net.JoinHostPort(other, port)+"/api/snapshot"), `"build":"41"`, "served on %s too, as the warning says", other)
		}
	})

	t.Run("lockctl reconcile --dashboard-address, on loopback only", func(t *testing.T) {
		url := serveCommand(t, env, ns, true, "reconcile", "--dashboard-address", "127.0.0.1:0")
		assert.Contains(t, fetch(t, url+"api/snapshot"), `"build":"41"`, "the holder, from the cluster")
		_, port, err := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/"))
		require.NoError(t, err)
		other := otherAddress(t)
		if other == "" {
			t.Log("this machine has no address but loopback: the printed address is the check")
			return
		}
		conn, err := net.DialTimeout("tcp", net.JoinHostPort(other, port), 2*time.Second)
		if err == nil {
			_ = conn.Close()
		}
		assert.Error(t, err, "the reconciler's dashboard must not be reachable on %s, the address a pod IP would be", other)
	})

	t.Run("a non-loopback address is a usage error", func(t *testing.T) {
		_, errOut, code := lockctlIn(t, env, ns, "reconcile", "--dashboard-address", "0.0.0.0:8081")
		assert.Equal(t, 2, code, errOut)
		assert.Contains(t, errOut, "kubectl port-forward")
	})
}
