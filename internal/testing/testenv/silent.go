package testenv

import (
	"net/http"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// SilentAfterCut plays a client cut off from the API server right after a
// watch event: once Cut, every request but the watches already streaming
// goes unanswered until its context ends, as over a connection gone silent.
type SilentAfterCut struct {
	next http.RoundTripper
	cut  atomic.Bool
}

// Config returns a copy of cfg whose requests go through s.
func (s *SilentAfterCut) Config(cfg *rest.Config) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		s.next = rt
		return s
	})
	return c
}

// Cut leaves every request from now on unanswered, but the watches already
// streaming.
func (s *SilentAfterCut) Cut() { s.cut.Store(true) }

// RoundTrip implements http.RoundTripper.
func (s *SilentAfterCut) RoundTrip(req *http.Request) (*http.Response, error) {
	if s.cut.Load() && req.URL.Query().Get("watch") != "true" {
		<-req.Context().Done()
		if req.Body != nil {
			_ = req.Body.Close()
		}
		return nil, req.Context().Err()
	}
	return s.next.RoundTrip(req)
}
