package dashboard

import (
	"bytes"
	"context"
	"embed"
	"errors"
	"html/template"
	"io/fs"
	"net"
	"net/http"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/base/lazy"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

//go:embed assets
var assets embed.FS

// ContentSecurityPolicy is the policy of every answer: nothing but the
// page's own script, style and connections, no inline script or style, no
// frames, no forms.
const ContentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; " +
	"connect-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"

// heartbeat is how often an idle event stream gets a comment, so that
// proxies (kubectl port-forward) keep it open and a gone browser is noticed.
const heartbeat = 15 * time.Second

// MaxLogStreams bounds the log pages open at once: each follows a pod.
const MaxLogStreams = 32

// FirstCards is how many lock cards the index page is served with: a
// wall screen's worth or two. The page's script makes the others from the
// stream's first snapshot, in slices while the browser is idle, so that a
// page over thousands of locks is not megabytes of HTML to parse first;
// GET /?all serves every card, for a browser that runs no script.
const FirstCards = 100

// pages parses the page templates on the first page served, not at the
// process start: every lockctl command links this package, and parsing
// them was 2,190 of the start's 19,800 allocations (ADR 0071).
var pagesValue lazy.Value[*template.Template]

func pages() *template.Template {
	return pagesValue.Get(func() *template.Template {
		return template.Must(template.New("").Funcs(template.FuncMap{
			"ago":      ago,
			"liveness": liveness,
			"instant":  instant,
			"rfc3339":  rfc3339,
			"when":     when,
			"duration": jobDuration,
			"holdFor":  holdFor,
			"window":   describeWindow,
			"freeze":   describeFreeze,
			"lower":    lower,
			"card":     card,
			"text":     record.Printable,
			"state":    cardState,
			"states":   func() []string { return FilterStates },
		}).ParseFS(assets, "assets/*.html"))
	})
}

// Handler returns the page's HTTP handler. hosts are the host names (not
// IP addresses, which are always accepted, nor localhost) that requests may
// name in their Host header, for a dashboard reached under a name.
func (h *Hub) Handler(hosts ...string) http.Handler { return guard(h.routes(), hosts) }

// staticFiles serves the page's script, style sheet and icon.
func staticFiles() http.Handler {
	static, _ := fs.Sub(assets, "assets/static")
	return http.StripPrefix("/assets/", http.FileServerFS(static))
}

// routes are h's pages, as served at the root.
func (h *Hub) routes() *http.ServeMux {
	mux := http.NewServeMux()
	mux.Handle("GET /assets/", staticFiles())
	mux.HandleFunc("GET /{$}", h.serveIndex)
	mux.HandleFunc("GET /locks/{namespace}/{name}", h.serveHistory)
	mux.HandleFunc("GET /jobs/{name}/logs", h.serveLogsPage)
	mux.HandleFunc("GET /jobs/{name}/logs/stream", h.serveLogStream)
	mux.HandleFunc("GET /events", h.serveEvents)
	mux.HandleFunc("GET /api/snapshot", h.serveSnapshot)
	if h.o.Metrics != nil {
		mux.Handle("GET /metrics", h.o.Metrics)
	}
	return mux
}

// Cluster is one cluster of a dashboard of several (Across): its hub,
// whose Options.Base is the path its pages are served under, and the
// kubeconfig context it shows.
type Cluster struct {
	Context string
	Hub     *Hub
}

// Across returns the handler of a dashboard of several clusters: each
// cluster's pages under its hub's Options.Base, and at the root a page
// that lists the clusters with their locks counted by state. hosts are
// as for Handler.
func Across(clusters []Cluster, hosts ...string) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("GET /assets/", staticFiles())
	for _, c := range clusters {
		mux.Handle("GET "+c.Hub.o.Base+"/", http.StripPrefix(c.Hub.o.Base, c.Hub.routes()))
	}
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		d := pageData{Title: "lockctl dashboard", Page: "clusters"}
		for _, c := range clusters {
			link := ClusterLink{Context: c.Context, Base: c.Hub.o.Base}
			c.Hub.mu.Lock()
			if p := c.Hub.current; p != nil {
				link.Counts, link.Live = p.counts(), true
			}
			c.Hub.mu.Unlock()
			d.Clusters = append(d.Clusters, link)
		}
		page, err := renderPage("clusters.html", d)
		if err != nil {
			http.Error(w, "cannot render the page", http.StatusInternalServerError)
			return
		}
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write(page)
	})
	return guard(mux, hosts)
}

// ClusterLink is a cluster on the page of a dashboard of several: its
// context, the path of its pages, and its locks counted by state once its
// hub has a snapshot (Live).
type ClusterLink struct {
	Context string
	Base    string
	Counts  Counts
	Live    bool
}

// guard answers mux's requests with the page's security headers, to GET
// and HEAD only, for hosts (and IP addresses and localhost) only.
func guard(mux http.Handler, hosts []string) http.Handler {
	allowed := map[string]bool{"localhost": true}
	for _, n := range hosts {
		allowed[strings.ToLower(n)] = true
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hdr := w.Header()
		hdr.Set("Content-Security-Policy", ContentSecurityPolicy)
		hdr.Set("X-Content-Type-Options", "nosniff")
		hdr.Set("X-Frame-Options", "DENY")
		hdr.Set("Referrer-Policy", "no-referrer")
		hdr.Set("Cache-Control", "no-store")
		if !hostAllowed(r.Host, allowed) {
			http.Error(w, "unknown host: open the dashboard by IP address or localhost", http.StatusMisdirectedRequest)
			return
		}
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			hdr.Set("Allow", "GET, HEAD")
			http.Error(w, "the dashboard is read-only", http.StatusMethodNotAllowed)
			return
		}
		mux.ServeHTTP(w, r)
	})
}

// hostAllowed reports whether a request for host (a Host header) may be
// answered: an IP address, localhost, or one of allowed. Names a web page
// elsewhere could point at the dashboard's address (DNS rebinding) are not.
func hostAllowed(host string, allowed map[string]bool) bool {
	if h, _, err := net.SplitHostPort(host); err == nil {
		host = h
	}
	host = strings.TrimSuffix(strings.Trim(host, "[]"), ".")
	if net.ParseIP(host) != nil {
		return true
	}
	return allowed[strings.ToLower(host)]
}

// pageData is what the page templates get.
type pageData struct {
	// Base is the path the page is served under (Options.Base): "" at
	// the root; Context the cluster it shows in a dashboard of several.
	Base, Context string
	Title         string
	Page          string
	Snap          *Snapshot
	// Now is when the page's ages and liveness are worded at; zero means
	// Snap.Now.
	Now  time.Time
	Lock *LockEntry
	Job  *JobEntry
	// Cards are the locks of Snap the index page renders, the first of
	// those Filter shows; More counts the others it shows.
	Cards []LockEntry
	More  int
	// Filter is the index page's filter (its query); Counts count the
	// locks of Snap by state, whatever the filter.
	Filter Filter
	Counts Counts
	// Clusters are the clusters of a dashboard of several (Across).
	Clusters []ClusterLink
}

func (h *Hub) render(w http.ResponseWriter, status int, name string, d pageData) {
	page, err := renderPage(name, d)
	h.write(w, status, page, err)
}

// renderPage renders the page template name with d.
func renderPage(name string, d pageData) ([]byte, error) {
	if d.Snap == nil {
		d.Snap = &Snapshot{Locks: []LockEntry{}, Windows: []Window{}, Jobs: []JobEntry{}}
	}
	if d.Now.IsZero() {
		d.Now = d.Snap.Now.Time
	}
	var b bytes.Buffer
	if err := pages().ExecuteTemplate(&b, name, d); err != nil {
		return nil, err
	}
	return b.Bytes(), nil
}

// write answers with page, or with an error when it could not be
// rendered.
func (h *Hub) write(w http.ResponseWriter, status int, page []byte, err error) {
	if err != nil {
		h.o.Log.Error("cannot render the dashboard", "err", err)
		http.Error(w, "cannot render the page", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(status)
	_, _ = w.Write(page)
}

// serveIndex serves the index page of the current snapshot with its
// first FirstCards cards, worded at the request's second and rendered
// once for every page opened in it; the script makes the others. With
// the query ?all it serves every card, rendered once for every such
// request while the snapshot is current (at 5,000 locks that is 3.4 MB),
// worded at the snapshot's time.
func (h *Hub) serveIndex(w http.ResponseWriter, r *http.Request) {
	d := pageData{Base: h.o.Base, Context: h.o.Context, Title: "lockctl dashboard", Page: "index", Filter: filterOf(r.URL.Query())}
	h.mu.Lock()
	p := h.current
	h.mu.Unlock()
	if p == nil {
		h.render(w, http.StatusOK, "index.html", d)
		return
	}
	d.Snap = p.snap
	d.Counts = p.counts()
	if d.Filter.Active() {
		// Rendered for this request alone: the first cards of the locks it
		// shows, or all of them with ?all.
		var shown []LockEntry
		for i := range p.snap.Locks {
			if d.Filter.Matches(&p.snap.Locks[i]) {
				shown = append(shown, p.snap.Locks[i])
			}
		}
		d.Cards = shown
		if !r.URL.Query().Has("all") {
			d.Cards = shown[:min(len(shown), FirstCards)]
		}
		d.More = len(shown) - len(d.Cards)
		h.render(w, http.StatusOK, "index.html", d)
		return
	}
	if r.URL.Query().Has("all") {
		d.Cards = p.snap.Locks
		page, err := p.allPage(func() ([]byte, error) { return renderPage("index.html", d) })
		h.write(w, http.StatusOK, page, err)
		return
	}
	d.Cards = p.snap.Locks[:min(len(p.snap.Locks), FirstCards)]
	d.More = len(p.snap.Locks) - len(d.Cards)
	page, err := p.firstPage(h.o.Clock.Now(), func(now time.Time) ([]byte, error) {
		d.Now = now
		return renderPage("index.html", d)
	})
	h.write(w, http.StatusOK, page, err)
}

func (h *Hub) serveHistory(w http.ResponseWriter, r *http.Request) {
	ns, name := r.PathValue("namespace"), r.PathValue("name")
	s := h.Current()
	d := pageData{Base: h.o.Base, Context: h.o.Context, Page: "history", Snap: s, Title: "lock " + ns + "/" + name, Now: h.o.Clock.Now()}
	if s != nil {
		for i := range s.Locks {
			if l := &s.Locks[i]; l.Lock.Namespace == ns && l.Lock.Name == name {
				d.Lock, d.Title = l, "history of "+l.Lock.Spec.Target
			}
		}
	}
	if d.Lock == nil {
		// An empty entry names the lock, so the page shows it when it
		// comes.
		d.Lock = &LockEntry{Lock: lock.LockView{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name}}}
		h.render(w, http.StatusNotFound, "history.html", d)
		return
	}
	h.render(w, http.StatusOK, "history.html", d)
}

func (h *Hub) serveLogsPage(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	d := pageData{Base: h.o.Base, Context: h.o.Context, Page: "logs", Snap: h.Current(), Title: "logs of " + name}
	j, err := h.job(name)
	if err != nil {
		d.Job = &JobEntry{Name: name}
		h.render(w, http.StatusNotFound, "logs.html", d)
		return
	}
	e := newJobEntry(j)
	d.Job = &e
	h.render(w, http.StatusOK, "logs.html", d)
}

func (h *Hub) serveSnapshot(w http.ResponseWriter, _ *http.Request) {
	h.mu.Lock()
	p := h.current
	h.mu.Unlock()
	if p == nil {
		http.Error(w, "not ready: the locks are being listed", http.StatusServiceUnavailable)
		return
	}
	data, _, err := p.encoded()
	if err != nil {
		h.o.Log.Error("cannot encode the dashboard's snapshot", "err", err)
		http.Error(w, "cannot encode the snapshot", http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	_, _ = w.Write(data)
}

// eventStream starts a server-sent event stream on w.
type eventStream struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func newEventStream(w http.ResponseWriter) *eventStream {
	hdr := w.Header()
	hdr.Set("Content-Type", "text/event-stream")
	hdr.Set("X-Accel-Buffering", "no")
	w.WriteHeader(http.StatusOK)
	s := &eventStream{w: w, rc: http.NewResponseController(w)}
	_ = s.rc.Flush()
	return s
}

// send writes one event whose data is each line of data.
func (s *eventStream) send(event string, data []byte) error {
	return s.write(frameEvent(event, data))
}

// comment writes a comment, which keeps the stream open.
func (s *eventStream) comment() error { return s.write([]byte(": keep-alive\n\n")) }

// clock writes the event "clock": the server's time now, which also keeps
// the stream open.
func (s *eventStream) clock(now time.Time) error {
	return s.write(frameEvent(eventClock, []byte(`{"now":"`+now.UTC().Format(metav1.RFC3339Micro)+`"}`)))
}

func (s *eventStream) write(b []byte) error {
	// NOTE: a browser that stops reading must not hold a handler forever.
	_ = s.rc.SetWriteDeadline(time.Now().Add(heartbeat))
	if _, err := s.w.Write(b); err != nil {
		return err
	}
	return s.rc.Flush()
}

// serveEvents streams every snapshot, the current one first, whole (an
// event "snapshot"), then each as the change from the one before (an
// event "update") when that is smaller (Subscribe). After the first, and
// then instead of a keep-alive comment, it sends the server's time (an
// event "clock", {"now": …} on the clock locks are judged on): the page
// words liveness and ages on its own clock corrected by it, and the
// current snapshot's time may be a refresh old.
func (h *Hub) serveEvents(w http.ResponseWriter, r *http.Request) {
	events, cancel := h.Subscribe()
	defer cancel()
	es := newEventStream(w)
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	clocked := false
	for {
		select {
		case <-r.Context().Done():
			return
		case <-t.C:
			if es.clock(h.o.Clock.Now()) != nil {
				return
			}
		case ev, ok := <-events:
			if !ok || es.write(ev) != nil {
				return
			}
			if !clocked {
				clocked = true
				if es.clock(h.o.Clock.Now()) != nil {
					return
				}
			}
		}
	}
}

// errServerClosing ends streams when the server stops.
var errServerClosing = errors.New("dashboard stopping")

// Serve serves handler on ln until ctx ends, then closes every connection,
// event streams included, within a few seconds.
func Serve(ctx context.Context, ln net.Listener, handler http.Handler) error {
	base, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	defer cancel(errServerClosing)
	srv := &http.Server{
		Handler: handler,
		// NOTE: no ReadTimeout: its deadline, once passed, cancels the
		// request's context, which would end every event stream; the page
		// reads no request bodies.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		BaseContext:       func(net.Listener) context.Context { return base },
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	cancel(errServerClosing)
	shutdown, stop := context.WithTimeout(context.WithoutCancel(ctx), 5*time.Second)
	defer stop()
	if err := srv.Shutdown(shutdown); err != nil {
		_ = srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}
