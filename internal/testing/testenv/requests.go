package testenv

import (
	"net/http"
	"sync"

	"k8s.io/client-go/rest"
)

// Request is one request a client sent: its method, or WATCH for a watch,
// and its URL path and query.
type Request struct{ Verb, URL string }

func (r Request) String() string { return r.Verb + " " + r.URL }

// RequestLog records, in order, the requests of the clients built from the
// REST config given to RecordRequests.
type RequestLog struct {
	mu   sync.Mutex
	reqs []Request
}

// RecordRequests makes the clients built from cfg from now on record their
// requests in the log it returns.
func RecordRequests(cfg *rest.Config) *RequestLog {
	l := &RequestLog{}
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			l.add(req)
			return rt.RoundTrip(req)
		})
	})
	return l
}

func (l *RequestLog) add(req *http.Request) {
	r := Request{Verb: req.Method, URL: req.URL.Path}
	if q := req.URL.Query(); q.Get("watch") == "true" || q.Get("watch") == "1" {
		r.Verb = "WATCH"
	}
	if req.URL.RawQuery != "" {
		r.URL += "?" + req.URL.RawQuery
	}
	l.mu.Lock()
	l.reqs = append(l.reqs, r)
	l.mu.Unlock()
}

// Take returns the requests recorded since the last Take.
func (l *RequestLog) Take() []Request {
	l.mu.Lock()
	defer l.mu.Unlock()
	out := l.reqs
	l.reqs = nil
	return out
}

// Verbs returns the verbs of reqs, in order.
func Verbs(reqs []Request) []string {
	out := make([]string, len(reqs))
	for i, r := range reqs {
		out[i] = r.Verb
	}
	return out
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
