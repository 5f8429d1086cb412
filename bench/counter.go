package bench

import (
	"io"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"

	"k8s.io/client-go/rest"
)

// Verbs a Counter tells apart. "list" and "get" are both GETs without
// watch=true, so they are counted together as "get".
const (
	VerbGet    = "get"
	VerbWatch  = "watch"
	VerbCreate = "create"
	VerbUpdate = "update"
	VerbPatch  = "patch"
	VerbDelete = "delete"
	VerbOther  = "other"
)

// Counter counts the API requests of every client built from a
// configuration it wrapped, by verb, and the responses that were a
// Conflict (409). The zero value is ready to use and safe for concurrent
// use.
type Counter struct {
	mu         sync.Mutex
	byVerb     map[string]int
	byResource map[string]int
	conflicts  int
}

var _ http.RoundTripper = (*countingTransport)(nil)

// Wrap returns a copy of cfg whose transport counts into c. A watch counts
// once, when it is opened.
func (c *Counter) Wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return &countingTransport{next: rt, c: c}
	})
	return out
}

// Counts returns what has been counted so far.
func (c *Counter) Counts() Counts {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := Counts{ByVerb: make(map[string]int, len(c.byVerb)), ByResource: make(map[string]int, len(c.byResource)), Conflicts: c.conflicts}
	for v, n := range c.byVerb {
		out.ByVerb[v] = n
	}
	for v, n := range c.byResource {
		out.ByResource[v] = n
	}
	return out
}

// Count counts one request, as the transports of Wrap do; a conflict is a
// response with status 409.
func (c *Counter) Count(req *http.Request, conflict bool) {
	verb := VerbOf(req)
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.byVerb == nil {
		c.byVerb, c.byResource = map[string]int{}, map[string]int{}
	}
	c.byVerb[verb]++
	c.byResource[verb+" "+ResourceOf(req)]++
	if conflict {
		c.conflicts++
	}
}

type countingTransport struct {
	next http.RoundTripper
	c    *Counter
}

func (t *countingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := t.next.RoundTrip(req)
	t.c.Count(req, err == nil && resp.StatusCode == http.StatusConflict)
	return resp, err
}

// ResourceOf names what an API request is about, by its URL: the resource
// ("pods", "configmaps", "leases"), with lockctl's own ConfigMaps told
// apart by name: "build-id counter", "admission ledger", "lock".
func ResourceOf(req *http.Request) string {
	parts := strings.Split(strings.Trim(req.URL.Path, "/"), "/")
	// /api/v1/namespaces/NS/RESOURCE[/NAME[/SUB]] or /apis/G/V/namespaces/NS/...
	for i := 0; i+2 < len(parts); i++ {
		if parts[i] != "namespaces" {
			continue
		}
		res := parts[i+2]
		name := ""
		if i+3 < len(parts) {
			name = parts[i+3]
		}
		if res == "configmaps" {
			switch {
			case strings.HasPrefix(name, "lockctl.build-id."):
				return "build-id counter"
			case name == "lockctl.admission":
				return "admission ledger"
			case strings.HasPrefix(name, "lockctl-lock-"):
				return "lock"
			}
		}
		return res
	}
	if len(parts) > 0 {
		return parts[len(parts)-1]
	}
	return "other"
}

// VerbOf classifies an API request by its method and query.
func VerbOf(req *http.Request) string {
	switch req.Method {
	case http.MethodGet:
		if req.URL.Query().Get("watch") == "true" || req.URL.Query().Get("watch") == "1" {
			return VerbWatch
		}
		return VerbGet
	case http.MethodPost:
		return VerbCreate
	case http.MethodPut:
		return VerbUpdate
	case http.MethodPatch:
		return VerbPatch
	case http.MethodDelete:
		return VerbDelete
	}
	return VerbOther
}

// Counts is a snapshot of a Counter.
type Counts struct {
	// ByVerb counts requests by verb (VerbGet, VerbWatch, ...).
	ByVerb map[string]int
	// ByResource counts requests by verb and resource (see ResourceOf):
	// "update build-id counter", "patch pods".
	ByResource map[string]int
	// Conflicts counts responses with status 409.
	Conflicts int
}

// Total is the number of requests of every verb.
func (c Counts) Total() int {
	n := 0
	for _, v := range c.ByVerb {
		n += v
	}
	return n
}

// Writes is the number of create, update, patch and delete requests.
func (c Counts) Writes() int {
	return c.ByVerb[VerbCreate] + c.ByVerb[VerbUpdate] + c.ByVerb[VerbPatch] + c.ByVerb[VerbDelete]
}

// Sub returns c minus an earlier snapshot.
func (c Counts) Sub(earlier Counts) Counts {
	out := Counts{ByVerb: map[string]int{}, ByResource: map[string]int{}, Conflicts: c.Conflicts - earlier.Conflicts}
	for v, n := range c.ByVerb {
		if d := n - earlier.ByVerb[v]; d != 0 {
			out.ByVerb[v] = d
		}
	}
	for v, n := range c.ByResource {
		if d := n - earlier.ByResource[v]; d != 0 {
			out.ByResource[v] = d
		}
	}
	return out
}

// ByteCounter counts the bytes of the response bodies every client built
// from a configuration it wrapped reads: of watches (every event the API
// server sends) apart from the rest. They are the bytes after any
// decompression, about what the API server writes, since it compresses
// neither watches nor small responses. The zero value is ready to use.
type ByteCounter struct {
	watch, other atomic.Int64
}

// Wrap returns a copy of cfg whose transport counts into c.
func (c *ByteCounter) Wrap(cfg *rest.Config) *rest.Config {
	out := rest.CopyConfig(cfg)
	out.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err == nil && resp.Body != nil {
				n := &c.other
				if VerbOf(req) == VerbWatch {
					n = &c.watch
				}
				resp.Body = &countingBody{ReadCloser: resp.Body, n: n}
			}
			return resp, err
		})
	})
	return out
}

// Watch returns the bytes read from watches so far, Other those of every
// other response.
func (c *ByteCounter) Watch() int64 { return c.watch.Load() }

// Other returns the bytes read from responses other than watches so far.
func (c *ByteCounter) Other() int64 { return c.other.Load() }

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

type countingBody struct {
	io.ReadCloser
	n *atomic.Int64
}

func (b *countingBody) Read(p []byte) (int, error) {
	n, err := b.ReadCloser.Read(p)
	b.n.Add(int64(n))
	return n, err
}
