package dashboard_test

import (
	"fmt"
	"testing"
	"time"

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

// TestIntegrationDashboardBrowserFilter: at 2,000 locks, the page opened
// filtered (?q=) shows the matching locks only, every other card made and
// hidden; typing in the filter box and picking a state filter the page as
// they change, and its address follows; the header counts every lock by
// state; a holder whose claim names its CI run is a link to it.
func TestIntegrationDashboardBrowserFilter(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cs, err := kube.NewForConfig(env.RESTConfig)
	require.NoError(t, err)
	const n, writers = 2000, 8
	run := "https://github.com/acme/api/actions/runs/1041/attempts/2"
	// Every 100th lock is held by acme/api, the others by acme/web; the
	// first of acme/api's names its run.
	req := func(i int) lock.Request {
		target := fmt.Sprintf("svc-%04d", i)
		r := lock.Request{Target: target, Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: fmt.Sprint(i)}, ClaimID: target, TTL: time.Hour}
		if i%100 == 0 {
			r.Repo = "api"
		}
		if i == 0 {
			r.RunURL = run
		}
		return r
	}
	takeEach(t, env, ns, n, writers, func(c *lock.Client, i int) error {
		_, _, err := c.TryAcquire(ctx, req(i))
		return err
	})
	base := serveHub(t, ctx, cs, ns, dashboard.Options{})
	bctx := pageWithoutExceptions(t, ctx)
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/?q=acme/api")))
	visible := `[...document.querySelectorAll('#locks .lock')].filter(c => !c.hidden)`
	took := awaitJS(t, bctx, "the filtered view, every card made", fmt.Sprintf(`document.body.dataset.seq !== undefined &&
		document.getElementById('locks').dataset.filled !== undefined &&
		document.querySelectorAll('#locks .lock').length === %d && %s.length === 20`, n, visible))
	t.Logf("the page opened filtered, at %d locks: 20 shown, every card made, after %v", n, took.Round(time.Millisecond))
	var want []string
	for i := 0; i < n; i += 100 {
		want = append(want, fmt.Sprintf("svc-%04d", i))
	}
	got, err := chromedp.Run(bctx, chromedp.Evaluate[[]string](visible+`.map(c => c.querySelector('h3 a').textContent)`))
	require.NoError(t, err)
	assert.Equal(t, want, got, "acme/api's locks, in order")
	assert.Equal(t, "2000 held · 0 waiting · 0 frozen · 0 free", text(t, bctx, `document.getElementById('counts').textContent`), "every lock counted")
	assert.Equal(t, "acme/api", text(t, bctx, `document.querySelector('#filter input[name=q]').value`), "the box shows the filter")

	// A holder linked to its run.
	assert.Equal(t, run, text(t, bctx, `(`+cardJS("svc-0000")+`).querySelector('.holder a.run').getAttribute('href')`))
	assert.Equal(t, "acme/api@main#0", text(t, bctx, `(`+cardJS("svc-0000")+`).querySelector('.holder a.run').textContent`))
	assert.Equal(t, "0", text(t, bctx, `String((`+cardJS("svc-0100")+`).querySelectorAll('.holder a').length)`), "a holder without a run is no link")

	// Typing filters the page as it changes; its address follows.
	typed := awaitJS(t, bctx, "one lock, typed", `(() => {
		const q = document.querySelector('#filter input[name=q]');
		if (q.value !== 'SVC-1234') { q.value = 'SVC-1234'; q.dispatchEvent(new Event('input', { bubbles: true })); }
		const shown = `+visible+`;
		return shown.length === 1 && shown[0].querySelector('h3 a').textContent === 'svc-1234';
	})()`)
	t.Logf("typing filtered %d cards in %v", n, typed.Round(time.Millisecond))
	assert.Equal(t, "?q=SVC-1234", text(t, bctx, `location.search`))
	assert.True(t, text(t, bctx, `String(document.getElementById('nomatch').hidden)`) == "true")

	awaitJS(t, bctx, "no lock waiting: none matches", `(() => {
		const s = document.querySelector('#filter select[name=state]');
		if (s.value !== 'waiting') { s.value = 'waiting'; s.dispatchEvent(new Event('change', { bubbles: true })); }
		return `+visible+`.length === 0 && !document.getElementById('nomatch').hidden;
	})()`)
	assert.Equal(t, "?q=SVC-1234&state=waiting", text(t, bctx, `location.search`))

	// A change while filtered: the new waiter's lock comes into the view.
	holder := lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{})
	_, p, err := holder.TryAcquire(ctx, lock.Request{Target: "svc-1234", Identity: record.Identity{Owner: "acme", Repo: "cli", Branch: "main", Build: "1"},
		ClaimID: "waiter", TTL: time.Hour})
	require.NoError(t, err)
	require.NotNil(t, p, "it waits")
	awaitJS(t, bctx, "the lock waited for, shown", `(() => { const shown = `+visible+`;
		return shown.length === 1 && shown[0].querySelector('h3 a').textContent === 'svc-1234' && document.getElementById('nomatch').hidden; })()`)
	assert.Equal(t, "2000 held · 1 waiting · 0 frozen · 0 free", text(t, bctx, `document.getElementById('counts').textContent`))

	// Cleared, every lock again.
	awaitJS(t, bctx, "every lock", `(() => {
		const q = document.querySelector('#filter input[name=q]'), s = document.querySelector('#filter select[name=state]');
		if (q.value !== '' || s.value !== '') { q.value = ''; s.value = ''; q.dispatchEvent(new Event('input', { bubbles: true })); }
		return `+visible+`.length === `+fmt.Sprint(n)+`;
	})()`)
	assert.Equal(t, "", text(t, bctx, `location.search`))
}
