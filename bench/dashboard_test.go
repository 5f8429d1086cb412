package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
)

// dashboardRun is what one dashboard over l locks with pages open cost.
type dashboardRun struct {
	l, pages int
	// snapshot is the size of the page's data (GET /api/snapshot), html
	// that of the page itself (GET /).
	snapshot, html int
	// idle is the dashboard's resident set with its locks listed and no
	// page open; open with every page open, once they settled; peak its
	// peak over the whole run (VmHWM), pages opening and updates included.
	idle, open, peak int64
	// cpuOpen is the dashboard's CPU to serve the pages their first page
	// and snapshot; cpuUpdate its CPU per update.
	cpuOpen, cpuUpdate time.Duration
	// update is, per update, from before the acquire's write to the last
	// page of the stream's clients having it; updateEach the same per
	// page; bytesUpdate the bytes each page read per update.
	update, updateEach Sample
	bytesUpdate        float64
	// bytesRefresh is what each page read from its stream over one
	// periodic refresh with no lock changed (the dashboard's Refresh, 15
	// s); refreshEvents how many events that was, per page.
	bytesRefresh, refreshEvents float64
	// browser is Chromium's page: firstRender from the navigation's start
	// to every lock shown by the live page (the later of live and full);
	// live when the stream's first snapshot was on the page, full when
	// the page had a card for every lock; dcl and fcp the page's own
	// DOMContentLoaded and first contentful paint; browserUpdate the delay
	// of each update to that page.
	firstRender, live, full, dcl, fcp time.Duration
	browserUpdate                     Sample
	browser                           string
}

// BenchmarkDashboard measures `lockctl dashboard` (the binary, its
// defaults) over one lock namespace of L held locks (LOCKCTL_BENCH_DASH_LOCKS,
// default 5000) with P pages open (LOCKCTL_BENCH_DASH_PAGES, default 100):
// each page a client that does what a browser opening the page does (GET
// the page, then hold the live-update stream, /events, open and read
// every event of it). It reports the dashboard's resident set (idle, with
// the pages open, and its peak), the delay of one update (a lock acquired
// by another client) to reach every page, LOCKCTL_BENCH_DASH_UPDATES
// times (default 5), what each page reads per periodic refresh with no
// lock changed, and, when Debian's chromium is installed, the first full
// render of the page in headless Chromium (from the navigation's start to
// a card for every lock on the page and the live stream's snapshot
// applied) and the delay of the same updates to that page. With LOCKCTL_BENCH_BASELINE_BIN it
// measures that build too, after this one, on a namespace of its own.
func BenchmarkDashboard(b *testing.B) {
	env := testenv.Get(b)
	l := envInt("LOCKCTL_BENCH_DASH_LOCKS", 5000)
	pages := envInt("LOCKCTL_BENCH_DASH_PAGES", 100)
	updates := envInt("LOCKCTL_BENCH_DASH_UPDATES", 5)
	builds := lockctlBuilds(b)
	runs := make([]dashboardRun, len(builds))
	b.Logf("load average at the start: %s", loadAverage())
	for range b.N {
		for i, build := range builds {
			runs[i] = measureDashboard(b, env, build.path, l, pages, updates)
			logDashboard(b, build, runs[i])
		}
	}
	b.Logf("load average at the end: %s", loadAverage())
	for i, build := range builds {
		reportDashboard(b, build, runs[i])
	}
	b.ReportMetric(0, "ns/op")
}

// reportDashboard prints and reports the figures of one build.
func reportDashboard(b *testing.B, build lockctlBuild, r dashboardRun) {
	b.Helper()
	p := build.prefix
	b.ReportMetric(float64(r.idle)/(1<<20), p+"idle-rss-MiB")
	b.ReportMetric(float64(r.open)/(1<<20), p+"open-rss-MiB")
	b.ReportMetric(float64(r.peak)/(1<<20), p+"peak-rss-MiB")
	b.ReportMetric(MS(r.update.Percentile(50)), p+"update-all-pages-p50-ms")
	b.ReportMetric(MS(r.update.Max()), p+"update-all-pages-max-ms")
	b.ReportMetric(r.bytesUpdate/1024, p+"KiB/update/page")
	b.ReportMetric(float64(r.snapshot)/1024, p+"snapshot-KiB")
	b.ReportMetric(r.bytesRefresh/1024, p+"KiB/refresh/page")
	if r.browser != "" {
		b.ReportMetric(MS(r.firstRender), p+"browser-first-render-ms")
		b.ReportMetric(MS(r.browserUpdate.Percentile(50)), p+"browser-update-p50-ms")
		b.ReportMetric(MS(r.browserUpdate.Max()), p+"browser-update-max-ms")
	}
}

// logDashboard prints the figures of one build.
func logDashboard(b *testing.B, build lockctlBuild, r dashboardRun) {
	b.Helper()
	b.Logf("lockctl dashboard (%s) over %d locks: snapshot %.0f KiB, page %.0f KiB", build.name, r.l, float64(r.snapshot)/1024, float64(r.html)/1024)
	b.Logf("  resident: %.1f MiB idle, %.1f MiB with %d pages open, peak %.1f MiB", float64(r.idle)/(1<<20), float64(r.open)/(1<<20), r.pages, float64(r.peak)/(1<<20))
	b.Logf("  CPU: %s to open the %d pages, %s per update", r.cpuOpen.Round(time.Millisecond), r.pages, r.cpuUpdate.Round(time.Millisecond))
	b.Logf("  one update (a lock acquired) to all %d pages: %s; to each page: %s; %.1f KiB read per page per update",
		r.pages, r.update, r.updateEach, r.bytesUpdate/1024)
	b.Logf("  one periodic refresh with no lock changed: %.1f KiB read per page, in %.1f events", r.bytesRefresh/1024, r.refreshEvents)
	if r.browser == "" {
		b.Logf("  no chromium: the browser's figures were not measured")
		return
	}
	b.Logf("  %s: first full render %s (live %s, every card %s, DOMContentLoaded %s, first contentful paint %s); each update on the page: %s",
		r.browser, r.firstRender.Round(time.Millisecond), r.live.Round(time.Millisecond), r.full.Round(time.Millisecond),
		r.dcl.Round(time.Millisecond), r.fcp.Round(time.Millisecond), r.browserUpdate)
}

func measureDashboard(b *testing.B, env *testenv.Env, bin string, l, pages, updates int) dashboardRun {
	ctx := within(b, 30*time.Minute)
	ns := env.Namespace(b)
	fillLocks(b, env, ns, l)
	r := dashboardRun{l: l, pages: pages}

	// NOTE: the dashboard and the browser stop when the run ends, so that
	// the next build's run does not share the CPUs with them.
	dash := startDashboard(ctx, b, bin, env.Kubeconfig, ns)
	defer dash.stop()
	var peak atomic.Int64
	sampleCtx, stopSampling := context.WithCancel(ctx)
	sampled := make(chan struct{})
	go func() {
		defer close(sampled)
		t := time.NewTicker(50 * time.Millisecond)
		defer t.Stop()
		for {
			if v, err := procStatus(dash.pid, "VmRSS:"); err == nil && v > peak.Load() {
				peak.Store(v)
			}
			select {
			case <-sampleCtx.Done():
				return
			case <-t.C:
			}
		}
	}()
	defer func() { stopSampling(); <-sampled }()

	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: pages + 2, DisableCompression: true}}
	want := []byte(fmt.Sprintf(`"target":"svc-%05d"`, l-1))
	awaitSnapshot(ctx, b, client, dash.url, func(s []byte) bool { return bytes.Contains(s, want) })
	snap := get(ctx, b, client, dash.url+"/api/snapshot")
	r.snapshot = len(snap)
	r.html = len(get(ctx, b, client, dash.url+"/"))
	settle()
	r.idle = mustStatus(b, dash.pid, "VmRSS:")

	cpu0 := processCPU(dash.pid)
	streams := make([]*pageStream, pages)
	var wg sync.WaitGroup
	for i := range streams {
		streams[i] = &pageStream{}
		wg.Go(func() { streams[i].open(ctx, b, client, dash.url) })
	}
	wg.Wait()
	for _, s := range streams {
		select {
		case <-s.first:
		case <-ctx.Done():
			b.Fatalf("a page never got its first snapshot: %v", context.Cause(ctx))
		}
	}
	r.cpuOpen = processCPU(dash.pid) - cpu0
	settle()
	r.open = mustStatus(b, dash.pid, "VmRSS:")
	b.Logf("  %d pages open: the dashboard's RSS %.1f MiB (%.1f MiB idle), peak so far %.1f MiB", pages, float64(r.open)/(1<<20),
		float64(r.idle)/(1<<20), float64(mustStatus(b, dash.pid, "VmHWM:"))/(1<<20))

	var browser *browserPage
	if path := chromiumPath(); path != "" {
		browser = openBrowser(ctx, b, path, dash.url, l)
		defer browser.stop()
		r.browser, r.firstRender, r.dcl, r.fcp = browser.version, browser.firstRender, browser.dcl, browser.fcp
		r.live, r.full = browser.live, browser.full
	}

	locker := newLockClient(b, env.RESTConfig, ns)
	var cpuUpdates time.Duration
	var bytesUpdates int64
	for u := range updates {
		target := fmt.Sprintf("probe-%02d", u)
		marker := []byte(fmt.Sprintf(`"target":%q`, target))
		for _, s := range streams {
			s.expect(marker)
		}
		if browser != nil {
			browser.expect(b, target)
		}
		read0 := int64(0)
		for _, s := range streams {
			read0 += s.read.Load()
		}
		cpu0 := processCPU(dash.pid)
		start := time.Now()
		_, err := locker.Acquire(ctx, lock.Request{Target: target, Identity: clitest.Identity(target, 1), TTL: time.Hour})
		require.NoError(b, err)
		uctx, cancel := context.WithTimeoutCause(ctx, updateBound, errUpdateBound)
		var last time.Duration
		for _, s := range streams {
			at := s.await(uctx, b)
			d := at.Sub(start)
			r.updateEach = append(r.updateEach, d)
			last = max(last, d)
		}
		r.update = append(r.update, last)
		if browser != nil {
			r.browserUpdate = append(r.browserUpdate, browser.await(uctx, b, start))
		}
		cancel()
		b.Logf("  update %d: every page had it after %s%s; the dashboard's RSS %.1f MiB", u+1, last.Round(time.Millisecond),
			browserFigure(r.browserUpdate, browser != nil), float64(mustStatus(b, dash.pid, "VmRSS:"))/(1<<20))
		// NOTE: the update's events may still be in flight to a page that
		// had it from an earlier event; counted once every page has it.
		cpuUpdates += processCPU(dash.pid) - cpu0
		for _, s := range streams {
			bytesUpdates += s.read.Load()
		}
		bytesUpdates -= read0
	}
	r.cpuUpdate = cpuUpdates / time.Duration(max(updates, 1))
	r.bytesUpdate = float64(bytesUpdates) / float64(updates*pages)
	settle()
	r.bytesRefresh, r.refreshEvents = measureRefresh(ctx, b, streams)
	r.peak = max(peak.Load(), mustStatus(b, dash.pid, "VmHWM:"))
	return r
}

// measureRefresh returns what each page read, on average, per periodic
// refresh of the dashboard with no lock changed, and in how many events:
// from now until every page had refreshes snapshots or updates (one comes
// every Refresh, 15 s), then a quiet second. Two, not one: a refresh may
// judge again only the entries judged a whole Refresh before it, which a
// refresh timer's first tick may miss by a moment.
func measureRefresh(ctx context.Context, b *testing.B, streams []*pageStream) (perPage, events float64) {
	b.Helper()
	const refreshes = 2
	read0, seq0 := make([]int64, len(streams)), make([]int64, len(streams))
	for i, s := range streams {
		read0[i], seq0[i] = s.read.Load(), s.snapshots.Load()
	}
	events0 := int64(0)
	for _, s := range streams {
		events0 += s.events.Load()
	}
	rctx, cancel := context.WithTimeoutCause(ctx, 2*time.Minute, errors.New("the refreshes did not reach every page within two minutes"))
	defer cancel()
	for i := 0; i < len(streams); {
		if streams[i].snapshots.Load() >= seq0[i]+refreshes {
			i++
			continue
		}
		select {
		case <-rctx.Done():
			b.Fatalf("waiting for a refresh: %v", context.Cause(rctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
	// NOTE: read counts whole events: once every page has the last
	// refresh's, a quiet second lets the others finish theirs.
	time.Sleep(time.Second)
	var n, e int64
	for i, s := range streams {
		n += s.read.Load() - read0[i]
		e += s.events.Load()
	}
	e -= events0
	per := float64(len(streams) * refreshes)
	return float64(n) / per, float64(e) / per
}

// updateBound bounds the wait for one update to reach the pages: a build
// that takes longer fails the benchmark, with the time it was given.
const updateBound = 5 * time.Minute

var errUpdateBound = errors.New("an update did not reach every page within " + updateBound.String())

// browserFigure renders the last of the browser's delays, when there is a
// browser.
func browserFigure(s Sample, ok bool) string {
	if !ok || len(s) == 0 {
		return ""
	}
	return fmt.Sprintf(", Chromium's page after %s", s[len(s)-1].Round(time.Millisecond))
}

// settle waits for a moment of quiet, so that a resident set read after it
// is not in the middle of a collection.
func settle() { time.Sleep(2 * time.Second) }

func mustStatus(b *testing.B, pid int, key string) int64 {
	b.Helper()
	v, err := procStatus(pid, key)
	require.NoError(b, err)
	return v
}

// runningDashboard is a `lockctl dashboard` process.
type runningDashboard struct {
	url  string
	pid  int
	stop func()
}

// startDashboard starts `lockctl dashboard` over the locks of ns (and its
// jobs, none) on a free loopback port until stop (or the benchmark's end).
func startDashboard(ctx context.Context, b *testing.B, bin, kubeconfig, ns string) runningDashboard {
	b.Helper()
	cmd := exec.CommandContext(ctx, bin, "dashboard", "-n", ns, "--address", "127.0.0.1:0")
	cmd.Env = runEnviron(b, kubeconfig, ns)
	stdout, err := cmd.StdoutPipe()
	require.NoError(b, err)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(b, cmd.Start())
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	stop := sync.OnceFunc(func() {
		_ = cmd.Process.Signal(os.Interrupt)
		select {
		case <-exited:
		case <-time.After(10 * time.Second):
			_ = cmd.Process.Kill()
			<-exited
		}
	})
	b.Cleanup(stop)
	line, err := bufio.NewReader(stdout).ReadString('\n')
	require.NoError(b, err, "lockctl dashboard printed no URL: %s", stderr.String())
	go func() { _, _ = io.Copy(io.Discard, stdout) }()
	return runningDashboard{url: strings.TrimSpace(line), pid: cmd.Process.Pid, stop: stop}
}

// get reads url whole.
func get(ctx context.Context, b *testing.B, c *http.Client, url string) []byte {
	b.Helper()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	require.NoError(b, err)
	resp, err := c.Do(req)
	require.NoError(b, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, resp.StatusCode, "GET %s: %s", url, body)
	return body
}

// awaitSnapshot polls GET /api/snapshot until ok says it is complete.
func awaitSnapshot(ctx context.Context, b *testing.B, c *http.Client, base string, ok func([]byte) bool) {
	b.Helper()
	for {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/api/snapshot", nil)
		require.NoError(b, err)
		if resp, err := c.Do(req); err == nil {
			body, rerr := io.ReadAll(resp.Body)
			resp.Body.Close()
			if rerr == nil && resp.StatusCode == http.StatusOK && ok(body) {
				return
			}
		}
		select {
		case <-ctx.Done():
			b.Fatalf("the dashboard never showed every lock: %v", context.Cause(ctx))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// pageStream is one open page as the server sees it: the page read once,
// then its live-update stream held open and read, each event whole, as a
// browser's EventSource reads it.
type pageStream struct {
	first chan struct{}
	read  atomic.Int64
	// events counts the events with data (not the keep-alive comments);
	// snapshots those of a snapshot or an update of one.
	events, snapshots atomic.Int64

	mu     sync.Mutex
	marker []byte
	seen   chan time.Time
}

// open gets the page, then opens its stream and reads it in the
// background until ctx ends.
func (p *pageStream) open(ctx context.Context, b *testing.B, c *http.Client, base string) {
	p.first = make(chan struct{})
	p.read.Add(int64(len(get(ctx, b, c, base+"/"))))
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
	require.NoError(b, err)
	req.Header.Set("Accept", "text/event-stream")
	resp, err := c.Do(req)
	require.NoError(b, err)
	require.Equal(b, http.StatusOK, resp.StatusCode)
	go func() {
		defer resp.Body.Close()
		_ = readEvents(resp.Body, func(n int, data []byte) {
			p.read.Add(int64(n))
			if len(data) > 0 {
				p.events.Add(1)
			}
			if bytes.HasPrefix(data, []byte(`{"seq":`)) {
				p.snapshots.Add(1)
			}
			select {
			case <-p.first:
			default:
				close(p.first)
			}
			p.mu.Lock()
			defer p.mu.Unlock()
			if p.marker != nil && bytes.Contains(data, p.marker) {
				p.seen <- time.Now()
				p.marker = nil
			}
		})
	}()
}

// expect makes the next event that holds marker be awaited.
func (p *pageStream) expect(marker []byte) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.marker, p.seen = marker, make(chan time.Time, 1)
}

// await returns when the page had the event expect waits for.
func (p *pageStream) await(ctx context.Context, b *testing.B) time.Time {
	b.Helper()
	p.mu.Lock()
	seen := p.seen
	p.mu.Unlock()
	select {
	case at := <-seen:
		return at
	case <-ctx.Done():
		b.Fatalf("a page did not get the update: %v", context.Cause(ctx))
		return time.Time{}
	}
}

// readEvents reads a server-sent event stream, calling each with the bytes
// of each event (comments included) and the data of the event.
func readEvents(r io.Reader, each func(n int, data []byte)) error {
	br := bufio.NewReaderSize(r, 1<<20)
	var data bytes.Buffer
	n := 0
	for {
		line, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			// A line longer than the buffer: copied before the buffer is
			// read into again.
			whole := append([]byte(nil), line...)
			for errors.Is(err, bufio.ErrBufferFull) {
				line, err = br.ReadSlice('\n')
				whole = append(whole, line...)
			}
			line = whole
		}
		if err != nil {
			return err
		}
		n += len(line)
		line = bytes.TrimRight(line, "\r\n")
		switch {
		case len(line) == 0:
			if data.Len() > 0 || n > 0 {
				each(n, data.Bytes())
			}
			data.Reset()
			n = 0
		case bytes.HasPrefix(line, []byte("data:")):
			if data.Len() > 0 {
				data.WriteByte('\n')
			}
			data.Write(bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" ")))
		}
	}
}

// chromiumPath finds Debian's chromium (or $LOCKCTL_CHROMIUM); "" without.
func chromiumPath() string {
	for _, p := range []string{os.Getenv("LOCKCTL_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	return ""
}

// browserPage is the dashboard open in a headless Chromium.
type browserPage struct {
	ctx                               context.Context
	stop                              func()
	version                           string
	firstRender, live, full, dcl, fcp time.Duration
}

// marksScript runs in the page before its own script: it records when the
// live stream's first snapshot is on the page (body's data-seq set), when
// the page has a card for each of its locks (want) and, for expect, when a
// card of a given target appears, on the page's clock.
const marksScript = `(() => {
  window.__lockctlBench = { live: 0, full: 0, want: %d, target: "", seen: 0 };
  const m = window.__lockctlBench;
  const check = () => {
    const now = performance.timeOrigin + performance.now();
    if (!m.live && document.body && document.body.dataset.seq !== undefined) m.live = now;
    if (!m.full && document.querySelectorAll("#locks .lock").length === m.want) m.full = now;
    if (m.target && !m.seen) {
      for (const a of document.querySelectorAll("#locks .lock h3 a")) {
        if (a.textContent === m.target) { m.seen = performance.timeOrigin + performance.now(); break; }
      }
    }
  };
  m.check = check;
  new MutationObserver(check).observe(document, { subtree: true, childList: true, attributes: true, attributeFilter: ["data-seq"] });
})();`

// openBrowser starts Chromium and opens the page, measuring its first full
// render: from the navigation's start until the page shows every one of
// its l locks and has its live stream's snapshot on the page.
func openBrowser(ctx context.Context, b *testing.B, path, url string, l int) *browserPage {
	b.Helper()
	opts := append([]chromedp.ExecAllocatorOption{}, chromedp.DefaultExecAllocatorOptions[:]...)
	opts = append(opts,
		chromedp.ExecPath(path), chromedp.NoSandbox, chromedp.DisableGPU, chromedp.UserDataDir(b.TempDir()),
		chromedp.Flag("disable-background-networking", true), chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true), chromedp.NoFirstRun, chromedp.WindowSize(1280, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	b.Cleanup(cancelAlloc)
	bctx, cancel := chromedp.NewContext(alloc)
	b.Cleanup(cancel)
	stop := func() { cancel(); cancelAlloc() }
	_, err := chromedp.Call(bctx, page.AddScriptToEvaluateOnNewDocument, page.AddScriptToEvaluateOnNewDocumentParams{Source: fmt.Sprintf(marksScript, l)})
	require.NoError(b, err, "start chromium")
	p := &browserPage{ctx: bctx, stop: stop}
	if v, err := chromedp.Run(bctx, chromedp.Evaluate[string](`navigator.userAgent`)); err == nil {
		if i := strings.Index(v, "Chrome/"); i >= 0 {
			v = "Chromium " + strings.Fields(v[i+len("Chrome/"):])[0]
		}
		p.version = v
	}
	start := time.Now()
	require.NoError(b, chromedp.Do(bctx, chromedp.Navigate(url+"/")))
	full := `window.__lockctlBench.live > 0 && window.__lockctlBench.full > 0`
	for {
		ok, err := chromedp.Run(bctx, chromedp.Evaluate[bool](full))
		if err == nil && ok {
			break
		}
		select {
		case <-ctx.Done():
			b.Fatalf("the page never showed %d locks: %v", l, context.Cause(ctx))
		case <-time.After(10 * time.Millisecond):
		}
	}
	type timing struct {
		Origin float64 `json:"origin"`
		Live   float64 `json:"live"`
		Full   float64 `json:"full"`
		DCL    float64 `json:"dcl"`
		FCP    float64 `json:"fcp"`
	}
	t, err := chromedp.Run(bctx, chromedp.Evaluate[timing](`(() => {
		const n = performance.getEntriesByType("navigation")[0];
		const fcp = performance.getEntriesByName("first-contentful-paint")[0];
		return { origin: performance.timeOrigin, live: window.__lockctlBench.live, full: window.__lockctlBench.full,
			dcl: n ? n.domContentLoadedEventEnd : 0, fcp: fcp ? fcp.startTime : 0 };
	})()`))
	require.NoError(b, err)
	// NOTE: from the page's own clock (the navigation's start, its time
	// origin, to the live snapshot on the page and a card for every
	// lock, whichever came last), not the polling's.
	p.live, p.full = msDuration(t.Live-t.Origin), msDuration(t.Full-t.Origin)
	p.firstRender = max(p.live, p.full)
	p.dcl, p.fcp = msDuration(t.DCL), msDuration(t.FCP)
	b.Logf("chromium: the page showed its %d locks, live, %s after the navigation started (%s by the benchmark's clock)",
		l, p.firstRender.Round(time.Millisecond), time.Since(start).Round(time.Millisecond))
	return p
}

// expect makes the page record when a card of target appears.
func (p *browserPage) expect(b *testing.B, target string) {
	b.Helper()
	_, err := chromedp.Run(p.ctx, chromedp.Evaluate[any](fmt.Sprintf(`window.__lockctlBench.target = %q; window.__lockctlBench.seen = 0; null`, target)))
	require.NoError(b, err)
}

// await returns how long after start the page showed the target expected.
func (p *browserPage) await(ctx context.Context, b *testing.B, start time.Time) time.Duration {
	b.Helper()
	for {
		seen, err := chromedp.Run(p.ctx, chromedp.Evaluate[float64](`window.__lockctlBench.seen`))
		require.NoError(b, err)
		if seen > 0 {
			return time.UnixMicro(int64(seen * 1000)).Sub(start)
		}
		select {
		case <-ctx.Done():
			b.Fatalf("the browser's page did not show the update: %v", context.Cause(ctx))
		case <-time.After(20 * time.Millisecond):
		}
	}
}

func TestReadEvents(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("x", 3<<20)
	stream := "event: snapshot\ndata: {\"a\":1}\n\n: keep-alive\n\nevent: update\ndata: one\ndata: two\n\ndata: " + long + "\n\n"
	type got struct {
		n    int
		data string
	}
	var events []got
	err := readEvents(strings.NewReader(stream), func(n int, data []byte) { events = append(events, got{n, string(data)}) })
	require.ErrorIs(t, err, io.EOF)
	require.Len(t, events, 4)
	require.Equal(t, got{len("event: snapshot\ndata: {\"a\":1}\n\n"), `{"a":1}`}, events[0])
	require.Equal(t, got{len(": keep-alive\n\n"), ""}, events[1], "a comment: its bytes, no data")
	require.Equal(t, "one\ntwo", events[2].data, "data lines joined")
	require.Equal(t, long, events[3].data, "a line longer than the reader's buffer")
}
