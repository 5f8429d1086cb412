package cmd

import (
	"context"
	"io"
	"net"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
)

func TestNewDashboardCmd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    dashboardOptions
		wantErr string
	}{
		{name: "defaults", want: dashboardOptions{Address: DefaultDashboardAddress}},
		{name: "every namespace on a port", args: []string{"-A", "--address", "127.0.0.1:8080"}, want: dashboardOptions{AllNamespaces: true, Address: "127.0.0.1:8080"}},
		{name: "lock namespace", args: []string{"--lock-namespace", "locks"}, want: dashboardOptions{Address: DefaultDashboardAddress, LockFlags: cli.LockFlags{LockNamespace: "locks"}}},
		{name: "bad address", args: []string{"--address", "8080"}, wantErr: `invalid --address "8080": give a loopback host:port, such as 127.0.0.1:8080`},
		{name: "localhost", args: []string{"--address", "localhost:8080"}, want: dashboardOptions{Address: "localhost:8080"}},
		{name: "IPv6 loopback", args: []string{"--address", "[::1]:8080"}, want: dashboardOptions{Address: "[::1]:8080"}},
		{name: "every IPv4 interface", args: []string{"--address", "0.0.0.0:8080"}, wantErr: `--address "0.0.0.0:8080" is not a loopback address: the page shows the locks, the jobs and the job pods' logs this user may read, with no authentication, to anyone who reaches it; use 127.0.0.1:PORT, or add --allow-remote to serve it there`},
		{name: "every interface, no host", args: []string{"--address", ":8080"}, wantErr: `--address ":8080" is not a loopback address`},
		{name: "every IPv6 interface", args: []string{"--address", "[::]:8080"}, wantErr: `--address "[::]:8080" is not a loopback address`},
		{name: "another IP", args: []string{"--address", "10.0.0.7:8080"}, wantErr: `--address "10.0.0.7:8080" is not a loopback address`},
		{name: "a host name", args: []string{"--address", "build-box.example:8080"}, wantErr: `--address "build-box.example:8080" is not a loopback address`},
		{name: "every interface, allowed", args: []string{"--address", "0.0.0.0:8080", "--allow-remote"}, want: dashboardOptions{Address: "0.0.0.0:8080", AllowRemote: true}},
		{name: "positional", args: []string{"x"}, wantErr: `unknown command "x" for "lockctl dashboard"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseArgs(t, []string{"dashboard"}, tt.args, newDashboardCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *dashboardOptions) { o.f = nil })
		})
	}
}

// serveUntil runs serve until the page is served, and returns its URL; the
// serving ends with the test.
func serveUntil(t *testing.T, serve func(ctx context.Context, listening func(string)) error) string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	urls := make(chan string, 1)
	done := make(chan error, 1)
	go func() { done <- serve(ctx, func(u string) { urls <- u }) }()
	t.Cleanup(func() {
		cancel()
		assert.NoError(t, <-done, "the page stops cleanly")
	})
	select {
	case u := <-urls:
		return u
	case err := <-done:
		t.Fatalf("the page was never served: %v", err)
	case <-time.After(30 * time.Second):
		t.Fatal("the page was never served")
	}
	return ""
}

// fetch returns the body of url once it answers 200.
func fetch(t *testing.T, url string) string {
	t.Helper()
	var body string
	require.Eventually(t, func() bool {
		resp, err := http.Get(url)
		if err != nil {
			return false
		}
		defer resp.Body.Close()
		b, _ := io.ReadAll(resp.Body)
		body = string(b)
		return resp.StatusCode == http.StatusOK
	}, 10*time.Second, 20*time.Millisecond, "GET %s", url)
	return body
}

func TestRunDashboard(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t, heldLock(t, "41"))
	o := &dashboardOptions{f: te.f, Address: DefaultDashboardAddress}
	url := serveUntil(t, func(ctx context.Context, listening func(string)) error {
		o.listening = listening
		return runDashboard(ctx, o)
	})
	assert.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), "on loopback, a free port: %s", url)
	body := fetch(t, url+"api/snapshot")
	assert.Contains(t, body, `"build":"41"`, "the holder")
	assert.Contains(t, body, `"lockNamespace":"default"`)
	assert.Equal(t, url+"\n", te.out.String(), "the URL on stdout")
	assert.NotContains(t, te.errOut.String(), "warning", "loopback exposes nothing")
}

func TestRunDashboardAllowRemote(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name, address string
	}{
		{name: "every IPv4 interface", address: "0.0.0.0:0"},
		{name: "every interface", address: ":0"},
		{name: "every IPv6 interface", address: "[::]:0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t, heldLock(t, "41"))
			o := &dashboardOptions{f: te.f, Address: tt.address, AllowRemote: true}
			require.NoError(t, o.validate())
			url := serveUntil(t, func(ctx context.Context, listening func(string)) error {
				o.listening = listening
				return runDashboard(ctx, o)
			})
			_, port, err := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/"))
			require.NoError(t, err, url)
			assert.NotEqual(t, "0", port, "the port really listened on, not the 0 asked for")
			assert.Equal(t, "http://127.0.0.1:"+port+"/\n", te.out.String(), "the URL on this machine on stdout")
			assert.Contains(t, fetch(t, url+"api/snapshot"), `"build":"41"`)
			assert.Contains(t, te.errOut.String(), "warning: serving the dashboard on every interface of this machine, port "+port+","+
				" with no authentication (--allow-remote): anyone who reaches it reads the locks, the jobs and the job pods' logs "+
				"that this user's credentials may read\n", "what it exposes")
		})
	}
}

// otherAddress returns an address of this machine that is not loopback, or
// "" when it has none.
func otherAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	require.NoError(t, err)
	for _, a := range addrs {
		if n, ok := a.(*net.IPNet); ok && !n.IP.IsLoopback() && n.IP.To4() != nil {
			return n.IP.String()
		}
	}
	return ""
}

func TestReconcileDashboardOnlyOnLoopback(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t, heldLock(t, "41"))
	o := &reconcileOptions{f: te.f, DashboardAddress: "127.0.0.1:0"}
	url := serveUntil(t, func(ctx context.Context, listening func(string)) error {
		stop, err := cli.StartLoopDashboard(ctx, te.f, &o.LockFlags, cli.LoopDashboard{
			Address: o.DashboardAddress, Jobs: kubetest.Clients(te.cs), JobNamespace: "default", Listening: listening,
		})
		if err != nil {
			return err
		}
		<-ctx.Done()
		stop()
		return nil
	})
	assert.Contains(t, fetch(t, url+"api/snapshot"), `"build":"41"`, "served on loopback")
	_, port, err := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/"))
	require.NoError(t, err)
	other := otherAddress(t)
	if other == "" {
		t.Log("this machine has no address but loopback: the listener's address is the check")
		assert.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), url)
		return
	}
	conn, err := net.DialTimeout("tcp", net.JoinHostPort(other, port), 2*time.Second)
	if err == nil {
		_ = conn.Close()
	}
	assert.Error(t, err, "the dashboard must not be reachable on %s, this machine's (and a pod's) other address", other)
}
