package kube

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"
	"time"
)

// DefaultRequestTimeout bounds every request lockctl sends: its answer
// must start within it and, for a short request, no more than this may
// pass without a byte of its body.
const DefaultRequestTimeout = 30 * time.Second

// BoundRequests wraps a client's transport so that no request can hang on
// a silent connection (a partition, a stalled load balancer): the answer's
// headers must come within d, and the body of a short request must keep
// coming, never d without a byte, however long it is (a large list keeps
// its time). Watches and streams (watch=true, follow=true, upgrades) are
// bounded until their headers only: they are quiet for as long as nothing
// changes, and client-go's HTTP/2 health check (a ping after 30s without a
// frame, the connection closed 15s later without an answer) ends those
// on a connection that went silent, after which they are made again. A
// request whose context has an earlier deadline keeps it; callers that need
// a tighter bound (a lock renewal) set one. d <= 0 returns rt unchanged.
func BoundRequests(d time.Duration) func(http.RoundTripper) http.RoundTripper {
	return func(rt http.RoundTripper) http.RoundTripper {
		if d <= 0 {
			return rt
		}
		return &boundedRT{next: rt, d: d}
	}
}

// boundedRT is BoundRequests' round tripper.
type boundedRT struct {
	next http.RoundTripper
	d    time.Duration
}

// isStream reports whether req's answer may rightly stay quiet for long.
func isStream(req *http.Request) bool {
	q := req.URL.Query()
	return q.Get("watch") == "true" || q.Get("watch") == "1" || q.Get("follow") == "true" ||
		req.Header.Get("Upgrade") != ""
}

func (b *boundedRT) RoundTrip(req *http.Request) (*http.Response, error) {
	ctx, cancel := context.WithCancel(req.Context())
	t := &silence{d: b.d, cancel: cancel}
	t.timer = time.AfterFunc(b.d, t.fire)
	resp, err := b.next.RoundTrip(req.WithContext(ctx))
	if err != nil {
		t.stop()
		cancel()
		if t.fired() {
			return nil, t.err(req)
		}
		return nil, err
	}
	if isStream(req) {
		t.stop()
		resp.Body = &boundedBody{rc: resp.Body, t: nil, cancel: cancel, req: req}
		return resp, nil
	}
	t.reset()
	resp.Body = &boundedBody{rc: resp.Body, t: t, cancel: cancel, req: req}
	return resp, nil
}

// WrappedRoundTripper returns the transport underneath, for client-go's
// helpers that look for it.
func (b *boundedRT) WrappedRoundTripper() http.RoundTripper { return b.next }

// silence cancels a request once d passes without progress.
type silence struct {
	d      time.Duration
	cancel context.CancelFunc

	mu      sync.Mutex
	timer   *time.Timer
	didFire bool
}

func (s *silence) fire() {
	s.mu.Lock()
	s.didFire = true
	s.mu.Unlock()
	s.cancel()
}

func (s *silence) fired() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.didFire
}

func (s *silence) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !s.didFire {
		s.timer.Reset(s.d)
	}
}

func (s *silence) stop() { s.timer.Stop() }

// err is the error of a request cancelled for its silence. It wraps
// context.DeadlineExceeded, so it reads as a timeout.
func (s *silence) err(req *http.Request) error {
	return fmt.Errorf("%s %s: no answer from the API server for %s: %w", req.Method, req.URL.Path, s.d, context.DeadlineExceeded)
}

// boundedBody is the body of a bounded answer: each read that brings
// bytes pushes the silence deadline of a short request back; closing it
// ends the request's context.
type boundedBody struct {
	rc     io.ReadCloser
	t      *silence // nil for a stream
	cancel context.CancelFunc
	req    *http.Request
}

func (b *boundedBody) Read(p []byte) (int, error) {
	n, err := b.rc.Read(p)
	if b.t == nil {
		return n, err
	}
	if n > 0 {
		b.t.reset()
	}
	if err != nil {
		b.t.stop()
		if err != io.EOF && b.t.fired() {
			return n, b.t.err(b.req)
		}
	}
	return n, err
}

func (b *boundedBody) Close() error {
	if b.t != nil {
		b.t.stop()
	}
	b.cancel()
	return b.rc.Close()
}
