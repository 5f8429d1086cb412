// Package servertime estimates the API server's clock from the Date header
// of its answers, so that every lockctl process judges lock expiries on one
// clock, the API server's, whatever its own clock says
// (docs/adr/0015-lock-clock.md).
//
// Each answer bounds the offset between the API server's clock and the local
// one: the Date header (whole seconds, truncated) was written between the
// request being sent and the answer arriving. Clock keeps the intersection of
// those bounds, which narrows to about a round trip after a few answers, and
// starts again from the newest answer if a clock was stepped.
package servertime

import (
	"net/http"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// Clock is a clock.WithTicker whose Now follows the API server's clock once
// an answer has been seen, and the base clock until then. Durations (timers,
// tickers, sleeps) are the base clock's.
type Clock struct {
	clock.WithTicker

	mu     sync.Mutex
	synced bool
	lo, hi time.Duration // bounds of server time minus base time
}

var _ clock.WithTicker = (*Clock)(nil)

// New returns a Clock on base; nil means clock.RealClock.
func New(base clock.WithTicker) *Clock {
	if base == nil {
		base = clock.RealClock{}
	}
	return &Clock{WithTicker: base}
}

// Now returns the estimated time on the API server.
func (c *Clock) Now() time.Time { return c.WithTicker.Now().Add(c.Offset()) }

// Since returns the time elapsed since t on the API server's clock.
func (c *Clock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

// Offset returns the estimated API server time minus base time; 0 before
// any answer.
func (c *Clock) Offset() time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return (c.lo + c.hi) / 2
}

// Uncertainty returns how far Offset may be off, and false before any
// answer.
func (c *Clock) Uncertainty() (time.Duration, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return (c.hi - c.lo) / 2, c.synced
}

// Observe records an answer sent at sent and received at received (base
// clock) whose Date header is date.
func (c *Clock) Observe(sent, received time.Time, date time.Time) {
	lo := date.Sub(received)
	hi := date.Add(time.Second).Sub(sent)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.synced && lo <= c.hi && hi >= c.lo {
		c.lo, c.hi = max(c.lo, lo), min(c.hi, hi)
		return
	}
	// First answer, or one that contradicts the others: a clock was stepped.
	c.lo, c.hi, c.synced = lo, hi, true
}

// WrapTransport returns rt observing the Date header of every answer; use it
// as rest.Config.WrapTransport (or with rest.Config.Wrap).
func (c *Clock) WrapTransport(rt http.RoundTripper) http.RoundTripper {
	return roundTripper{c: c, next: rt}
}

type roundTripper struct {
	c    *Clock
	next http.RoundTripper
}

func (r roundTripper) RoundTrip(req *http.Request) (*http.Response, error) {
	sent := r.c.WithTicker.Now()
	resp, err := r.next.RoundTrip(req)
	if err == nil {
		if date, derr := http.ParseTime(resp.Header.Get("Date")); derr == nil {
			r.c.Observe(sent, r.c.WithTicker.Now(), date)
		}
	}
	return resp, err
}
