package dashboard_test

import (
	"context"
	"fmt"
	"net"
	"regexp"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/dashboard"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// takeEach calls take for each i below n, spread over writers lock
// clients of their own in ns (each with its own rate limit) running at
// once; it fails the test on the first error of each.
func takeEach(t *testing.T, env *testenv.Env, ns string, n, writers int, take func(c *lock.Client, i int) error) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := range writers {
		wcs, err := kube.NewForConfig(env.RESTConfig)
		require.NoError(t, err)
		c := lock.New(wcs.CoreV1(), wcs.CoreV1(), ns, clock.RealClock{}, lock.Options{})
		wg.Go(func() {
			for i := w; i < n; i += writers {
				if err := take(c, i); err != nil {
					errs <- err
					return
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		require.NoError(t, err)
	}
}

// serveHub runs a hub with o over the locks of ns and serves its page on
// a loopback port until the test ends; it returns the page's base URL.
func serveHub(t *testing.T, ctx context.Context, cs kube.Interface, ns string, o dashboard.Options) string {
	t.Helper()
	viewer := lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{})
	hub := dashboard.NewHub(viewer, kube.CoreV1(cs), o)
	hctx, stop := context.WithCancel(ctx)
	served := make(chan struct{}, 2)
	t.Cleanup(func() { stop(); <-served; <-served })
	go func() { _ = hub.Run(hctx); served <- struct{}{} }()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = dashboard.Serve(hctx, ln, hub.Handler()); served <- struct{}{} }()
	return "http://" + ln.Addr().String()
}

// pageWithoutExceptions opens a browser that counts the page's
// exceptions, which the test asserts none of at its end.
func pageWithoutExceptions(t *testing.T, ctx context.Context) context.Context {
	t.Helper()
	var exceptions atomic.Int32
	bctx := browser(t, ctx, func(ev any) {
		if e, ok := ev.(*runtime.EventExceptionThrown); ok {
			exceptions.Add(1)
			t.Logf("exception in the page: %s", e.ExceptionDetails.Text)
		}
	})
	t.Cleanup(func() { assert.Zero(t, exceptions.Load(), "the page's script ran without an exception") })
	return bctx
}

// hourLeft matches the liveness of a lock taken for an hour, in its
// first hour, as lockctl status words it.
var hourLeft = regexp.MustCompile(`^expires in (59m[0-5]?\ds|1h0m0s)$`)

// cardJS is an expression for the card of target on the page, null
// without one.
func cardJS(target string) string {
	return fmt.Sprintf(`[...document.querySelectorAll('#locks .lock')].find(c => c.querySelector('h3 a').textContent === %q) || null`, target)
}

// TestIntegrationDashboardBrowserWordsLiveness: the page words a lock's
// liveness from the expiry the server sent and counts it down by itself,
// with no snapshot or update from the server (the hub's refresh is an hour
// here); a lock expiring is shown expired, stale, at its expiry.
func TestIntegrationDashboardBrowserWordsLiveness(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cs, err := kube.NewForConfig(env.RESTConfig)
	require.NoError(t, err)
	holder := lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{})
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}
	_, _, err = holder.TryAcquire(ctx, lock.Request{Target: "a-hour", Identity: id, ClaimID: "hour", TTL: time.Hour})
	require.NoError(t, err)
	base := serveHub(t, ctx, cs, ns, dashboard.Options{Refresh: time.Hour})
	bctx := pageWithoutExceptions(t, ctx)
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/")))

	words := func(target string) string {
		return text(t, bctx, `(() => { const c = `+cardJS(target)+`; const d = c && c.querySelector('dd[data-expires]'); return d ? d.textContent : ''; })()`)
	}
	awaitJS(t, bctx, "the lock, live", `document.body.dataset.seq !== undefined && (`+cardJS("a-hour")+`) !== null`)
	seq := text(t, bctx, `document.body.dataset.seq`)
	first := words("a-hour")
	require.Regexp(t, hourLeft, first, "worded as lockctl status words it")
	took := awaitJS(t, bctx, "the words counting down", fmt.Sprintf(`(() => { const d = (%s).querySelector('dd[data-expires]'); return d.textContent !== %q; })()`, cardJS("a-hour"), first))
	next := words("a-hour")
	assert.Regexp(t, hourLeft, next)
	assert.NotEqual(t, "expires in 1h0m0s", next, "fewer seconds left")
	assert.Equal(t, seq, text(t, bctx, `document.body.dataset.seq`), "with no snapshot or update from the server")
	t.Logf("%q became %q after %v, with no snapshot or update from the server", first, next, took.Round(time.Millisecond))

	t.Run("a lock expiring shows expired and stale", func(t *testing.T) {
		_, _, err := holder.TryAcquire(ctx, lock.Request{Target: "b-short", Identity: id, ClaimID: "short", TTL: 4 * time.Second})
		require.NoError(t, err)
		awaitJS(t, bctx, "the short lock, held, expiring", `(() => { const c = `+cardJS("b-short")+`;
			return c !== null && c.dataset.state === 'held' && /^expires in \ds$/.test(c.querySelector('dd[data-expires]').textContent); })()`)
		took := awaitJS(t, bctx, "the short lock stale, expired", `(() => { const c = `+cardJS("b-short")+`;
			return c !== null && c.dataset.state === 'stale' && c.querySelector('.badge').textContent === 'stale' &&
				/^expired \d+s ago$/.test(c.querySelector('dd[data-expires]').textContent); })()`)
		t.Logf("the page showed the lock stale %v after it showed it held, expiring", took.Round(time.Millisecond))
		assert.Equal(t, "held", text(t, bctx, `(`+cardJS("a-hour")+`).dataset.state`), "the other lock holds on")
	})
}

// TestIntegrationDashboardBrowserEveryLock: with more locks than the
// page is served with (dashboard.FirstCards), the script makes the
// others: every lock has its card, found by the browser's find in page,
// worded when scrolled to, and changed by an update.
func TestIntegrationDashboardBrowserEveryLock(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cs, err := kube.NewForConfig(env.RESTConfig)
	require.NoError(t, err)
	holder := lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{})
	n := dashboard.FirstCards + 20
	var targets []string
	for i := range n {
		target := fmt.Sprintf("svc-%03d", i)
		targets = append(targets, target)
		_, _, err := holder.TryAcquire(ctx, lock.Request{Target: target, Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: fmt.Sprint(i)},
			ClaimID: target, TTL: time.Hour})
		require.NoError(t, err)
	}
	base := serveHub(t, ctx, cs, ns, dashboard.Options{})
	bctx := pageWithoutExceptions(t, ctx)
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/")))
	took := awaitJS(t, bctx, "a card for every lock", fmt.Sprintf(`document.body.dataset.seq !== undefined && document.querySelectorAll('#locks .lock').length === %d`, n))
	t.Logf("%d cards, %d of them served, after %v", n, dashboard.FirstCards, took.Round(time.Millisecond))
	got, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#locks .lock h3 a')].map(a => a.textContent)`))
	require.NoError(t, err)
	assert.Equal(t, targets, got, "every lock, in order, once")

	last := targets[n-1]
	assert.Equal(t, "true", text(t, bctx, fmt.Sprintf(`String(window.find(%q))`, last)), "find in page reaches a lock the script made")
	words := text(t, bctx, `(() => { const c = `+cardJS(last)+`; c.scrollIntoView(); return c.querySelector('dd[data-expires]').textContent; })()`)
	assert.Regexp(t, hourLeft, words, "its liveness worded")

	_, err = holder.Release(ctx, last, record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: fmt.Sprint(n - 1)}, lock.ReleaseOptions{})
	require.NoError(t, err)
	awaitJS(t, bctx, "the last lock, released, free", `(`+cardJS(last)+`).dataset.state === 'free'`)
	_, _, err = holder.TryAcquire(ctx, lock.Request{Target: "svc-999", Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "999"},
		ClaimID: "svc-999", TTL: time.Hour})
	require.NoError(t, err)
	awaitJS(t, bctx, "a new lock, last", `(() => { const a = [...document.querySelectorAll('#locks .lock h3 a')]; return a.length === `+fmt.Sprint(n+1)+` && a[a.length-1].textContent === 'svc-999'; })()`)
	got, err = chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#locks .lock h3 a')].map(a => a.textContent)`))
	require.NoError(t, err)
	assert.True(t, slices.IsSorted(got), "in order: %s", strings.Join(got, " "))
}

// TestIntegrationDashboardBrowserUpdatesDuringTheFill: locks taken,
// released and taken anew while the page makes its thousands of cards
// end with the page showing every lock once, in order, as the server's
// snapshot has them, whichever slice of the fill each update met.
func TestIntegrationDashboardBrowserUpdatesDuringTheFill(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cs, err := kube.NewForConfig(env.RESTConfig)
	require.NoError(t, err)
	const n, writers = 2000, 8
	acquire := func(c *lock.Client, target string) error {
		_, _, err := c.TryAcquire(ctx, lock.Request{Target: target, Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"},
			ClaimID: target, TTL: time.Hour})
		return err
	}
	takeEach(t, env, ns, n, writers, func(c *lock.Client, i int) error {
		return acquire(c, fmt.Sprintf("svc-%04d", i))
	})
	base := serveHub(t, ctx, cs, ns, dashboard.Options{})
	bctx := pageWithoutExceptions(t, ctx)
	holder := lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{})
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/")))
	awaitJS(t, bctx, "the page live", `document.body.dataset.seq !== undefined`)
	// Among the server's cards, in the fill's and past it; a release
	// keeps the lock, free.
	filling := text(t, bctx, `String(document.getElementById('locks').dataset.filled === undefined)`)
	for _, target := range []string{"svc-0000a", "svc-1000a", "svc-9999"} {
		require.NoError(t, acquire(holder, target))
	}
	_, err = holder.Release(ctx, "svc-1500", record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}, lock.ReleaseOptions{})
	require.NoError(t, err)
	t.Logf("the page was still making its cards when the changes began: %s; when they were made: %s", filling,
		text(t, bctx, `String(document.getElementById('locks').dataset.filled === undefined)`))
	awaitJS(t, bctx, "every lock and the last one taken", fmt.Sprintf(`(() => {
		const a = [...document.querySelectorAll('#locks .lock h3 a')];
		return a.length === %d && a[a.length-1].textContent === 'svc-9999';
	})()`, n+3))
	var want []string
	for i := range n {
		target := fmt.Sprintf("svc-%04d", i)
		state := "held"
		if i == 1500 {
			state = "free"
		}
		want = append(want, target+" "+state)
		if i == 0 || i == 1000 {
			want = append(want, target+"a held")
		}
	}
	want = append(want, "svc-9999 held")
	awaitJS(t, bctx, "svc-1500 released", `(`+cardJS("svc-1500")+`).dataset.state === 'free'`)
	got, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](`[...document.querySelectorAll('#locks .lock')].map(c => c.querySelector('h3 a').textContent + ' ' + c.dataset.state)`))
	require.NoError(t, err)
	assert.Equal(t, want, got, "every lock once, in order, as it is now")
}
