package kube

import (
	"net/http"
	"net/http/httptrace"
	"sync"
)

// OneConnAtStart wraps a client's transport so that the requests that
// start while its first request is still getting a connection wait for
// that connection instead of dialing their own. net/http dials one
// connection per request that finds none idle, even for HTTP/2, which then
// keeps one and closes the others: a command whose first requests go side
// by side (lockctl run reads a lock and the freeze windows at once) paid a
// TCP connection and a TLS handshake more, on both ends, for nothing. Once
// the first request has its connection (or has failed without one), every
// request goes straight through.
func OneConnAtStart(rt http.RoundTripper) http.RoundTripper {
	return &connGate{next: rt}
}

// connGate is OneConnAtStart's round tripper.
type connGate struct {
	next http.RoundTripper

	mu sync.Mutex
	// ready is closed once the first request has a connection or has
	// ended; nil until the first request starts.
	ready chan struct{}
	open  bool
	// waiting counts the requests waiting for ready (for tests).
	waiting int
}

func (g *connGate) RoundTrip(req *http.Request) (*http.Response, error) {
	g.mu.Lock()
	switch {
	case g.open:
		g.mu.Unlock()
		return g.next.RoundTrip(req)
	case g.ready == nil:
		g.ready = make(chan struct{})
		g.mu.Unlock()
		var once sync.Once
		openGate := func() { once.Do(g.openGate) }
		// NOTE: WithClientTrace keeps any trace the caller set; HTTP/2
		// reports GotConn once the connection is set up and shared.
		ctx := httptrace.WithClientTrace(req.Context(), &httptrace.ClientTrace{
			GotConn: func(httptrace.GotConnInfo) { openGate() },
		})
		resp, err := g.next.RoundTrip(req.WithContext(ctx))
		openGate()
		return resp, err
	}
	ready := g.ready
	g.waiting++
	g.mu.Unlock()
	defer func() {
		g.mu.Lock()
		g.waiting--
		g.mu.Unlock()
	}()
	select {
	case <-ready:
	case <-req.Context().Done():
		// NOTE: the request is never sent; the body, if any, is closed as
		// a RoundTripper must.
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, req.Context().Err()
	}
	return g.next.RoundTrip(req)
}

func (g *connGate) openGate() {
	g.mu.Lock()
	defer g.mu.Unlock()
	g.open = true
	close(g.ready)
}

// WrappedRoundTripper returns the transport underneath, for client-go's
// helpers that look for it (closing idle connections).
func (g *connGate) WrappedRoundTripper() http.RoundTripper { return g.next }
