package dashboard_test

import (
	"context"
	"net"
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

// TestIntegrationDashboardBrowserAcross: a dashboard of several clusters
// (Across) serves each cluster's page under its own path; in Chromium
// that page goes live, shows a lock taken after it opened without a
// reload, and links under its path, and the first page lists the
// clusters.
func TestIntegrationDashboardBrowserAcross(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	cs, err := kube.NewForConfig(env.RESTConfig)
	require.NoError(t, err)
	var (
		clusters   []dashboard.Cluster
		namespaces []string
	)
	for i, name := range []string{"us", "eu"} {
		ns := env.Namespace(t)
		namespaces = append(namespaces, ns)
		viewer := lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{})
		hub := dashboard.NewHub(viewer, kube.CoreV1(cs), dashboard.Options{Base: "/c/" + string(rune('1'+i)), Context: name})
		clusters = append(clusters, dashboard.Cluster{Context: name, Hub: hub})
	}
	hctx, stop := context.WithCancel(ctx)
	done := make(chan struct{}, 3)
	t.Cleanup(func() { stop(); <-done; <-done; <-done })
	for _, c := range clusters {
		go func() { _ = c.Hub.Run(hctx); done <- struct{}{} }()
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	go func() { _ = dashboard.Serve(hctx, ln, dashboard.Across(clusters)); done <- struct{}{} }()
	base := "http://" + ln.Addr().String()

	bctx := pageWithoutExceptions(t, ctx)
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/")))
	assert.Equal(t, "us eu", text(t, bctx, `[...document.querySelectorAll('ul.clusters > li > a:first-child')].map(a => a.textContent).join(' ')`))
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/c/2/")))
	took := awaitJS(t, bctx, "live", `document.body.dataset.seq !== undefined && document.getElementById('conn').textContent.startsWith('live')`)
	t.Logf("eu's page live after %v", took.Round(time.Millisecond))

	eu := lock.New(cs.CoreV1(), cs.CoreV1(), namespaces[1], clock.RealClock{}, lock.Options{})
	_, _, err = eu.TryAcquire(ctx, lock.Request{Target: "staging", Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"},
		ClaimID: "across", TTL: time.Hour})
	require.NoError(t, err)
	took = awaitJS(t, bctx, "eu's lock, held", `(() => { const c = `+cardJS("staging")+`; return c !== null && c.dataset.state === 'held'; })()`)
	t.Logf("eu's lock on its page after %v, no reload", took.Round(time.Millisecond))
	href := text(t, bctx, `(`+cardJS("staging")+`).querySelector('h3 a').getAttribute('href')`)
	assert.Regexp(t, `^/c/2/locks/`, href, "the card links under the cluster's path")
}
