package kube

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/rest"
)

// testTimeout bounds the waits for goroutines to get somewhere; it never
// times anything.
const (
	testTimeout = 30 * time.Second
	testTick    = time.Millisecond
)

// gateTransport is the transport under a connGate in the tests: each
// request waits for its turn, and the first one reports its connection
// when the test says so.
type gateTransport struct {
	mu      sync.Mutex
	started []string
	gotConn chan struct{}
	finish  chan struct{}
}

func (t *gateTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	t.mu.Lock()
	t.started = append(t.started, req.URL.Path)
	first := len(t.started) == 1
	t.mu.Unlock()
	if first {
		<-t.gotConn
		if trace := httptrace.ContextClientTrace(req.Context()); trace != nil && trace.GotConn != nil {
			trace.GotConn(httptrace.GotConnInfo{})
		}
		<-t.finish
	}
	return &http.Response{StatusCode: http.StatusOK, Body: http.NoBody, Request: req}, nil
}

func (t *gateTransport) startedPaths() []string {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append([]string(nil), t.started...)
}

func (g *connGate) waiters() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}

func TestOneConnAtStartWaitsForTheFirstConnection(t *testing.T) {
	under := &gateTransport{gotConn: make(chan struct{}), finish: make(chan struct{})}
	g := OneConnAtStart(under).(*connGate)
	get := func(path string, done chan<- error) {
		req, err := http.NewRequest(http.MethodGet, "https://example.invalid"+path, nil)
		if err != nil {
			done <- err
			return
		}
		resp, err := g.RoundTrip(req)
		if err == nil {
			_ = resp.Body.Close()
		}
		done <- err
	}
	first, second := make(chan error, 1), make(chan error, 1)
	go get("/first", first)
	require.Eventually(t, func() bool { return len(under.startedPaths()) == 1 }, testTimeout, testTick)
	go get("/second", second)
	require.Eventually(t, func() bool { return g.waiters() == 1 }, testTimeout, testTick)
	assert.Equal(t, []string{"/first"}, under.startedPaths(), "the second request waits while the first has no connection")

	close(under.gotConn)
	require.NoError(t, <-second, "the second request goes once the first has its connection, before the first ends")
	assert.Equal(t, []string{"/first", "/second"}, under.startedPaths())
	close(under.finish)
	require.NoError(t, <-first)

	third := make(chan error, 1)
	get("/third", third)
	require.NoError(t, <-third)
	assert.Equal(t, []string{"/first", "/second", "/third"}, under.startedPaths())
}

func TestOneConnAtStartWaiterGivesUpWithItsContext(t *testing.T) {
	under := &gateTransport{gotConn: make(chan struct{}), finish: make(chan struct{})}
	g := OneConnAtStart(under).(*connGate)
	first := make(chan error, 1)
	go func() {
		req, _ := http.NewRequest(http.MethodGet, "https://example.invalid/first", nil)
		_, err := g.RoundTrip(req)
		first <- err
	}()
	require.Eventually(t, func() bool { return len(under.startedPaths()) == 1 }, testTimeout, testTick)
	ctx, cancel := context.WithCancel(context.Background())
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, "https://example.invalid/second", nil)
	require.NoError(t, err)
	cancel()
	_, err = g.RoundTrip(req)
	require.ErrorIs(t, err, context.Canceled)
	assert.Equal(t, []string{"/first"}, under.startedPaths(), "a request whose context ended is never sent")
	close(under.gotConn)
	close(under.finish)
	require.NoError(t, <-first)
}

// TestOneConnAtStartOneTLSConnection sends requests side by side through
// a client-go transport to an HTTP/2 server that has seen no connection
// yet: they share the first one. net/http makes the first connection
// available to the others a moment after the first request has it, so in
// a rare schedule the others may still dial their own: of three tries, one
// must see a single connection.
func TestOneConnAtStartOneTLSConnection(t *testing.T) {
	var seen []int32
	for range 3 {
		n := connectionsForRequestsAtOnce(t, 4)
		seen = append(seen, n)
		if n == 1 {
			return
		}
	}
	t.Fatalf("connections for 4 requests at once, in 3 tries: %v; want 1 in one of them", seen)
}

// connectionsForRequestsAtOnce returns how many connections a new HTTP/2
// server saw for n requests sent at once through a new client-go client.
func connectionsForRequestsAtOnce(t *testing.T, n int) int32 {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.WriteHeader(http.StatusOK)
	}))
	srv.EnableHTTP2 = true
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.StartTLS()
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL, TLSClientConfig: rest.TLSClientConfig{Insecure: true}}
	cfg.Wrap(OneConnAtStart)
	client, err := rest.HTTPClientFor(cfg)
	require.NoError(t, err)
	defer client.CloseIdleConnections()
	var wg sync.WaitGroup
	errs := make(chan error, n)
	for range n {
		wg.Go(func() {
			resp, err := client.Get(srv.URL)
			if err == nil {
				_ = resp.Body.Close()
				if resp.ProtoMajor != 2 {
					t.Errorf("protocol %s, want HTTP/2", resp.Proto)
				}
			}
			errs <- err
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
	return conns.Load()
}
