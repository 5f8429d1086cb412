package dashboard_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/dashboard"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// TestIntegrationDashboardUpdates: against the API server, a page's stream
// tells a change of one lock of many as an update carrying that lock
// alone, and the page in Chromium applies each update to the cards the
// server rendered: a lock that comes gets a card in its place in the
// order, one that changes its card again, one deleted loses its card, and
// the page ends as the whole snapshot renders.
func TestIntegrationDashboardUpdates(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cs, err := kube.NewForConfig(env.RESTConfig)
	require.NoError(t, err)
	locks := lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{})
	id := func(i int) record.Identity {
		return record.Identity{Owner: "acme", Repo: fmt.Sprintf("svc-%02d", i), Branch: "main", Build: fmt.Sprint(i + 1)}
	}
	const n = 20
	for i := 0; i < n; i += 2 {
		_, _, err := locks.TryAcquire(ctx, lock.Request{Target: fmt.Sprintf("svc-%02d", i), Identity: id(i), ClaimID: fmt.Sprint(i), TTL: time.Hour})
		require.NoError(t, err)
	}
	base := serveDashboard(t, ctx, cs, ns, job.NewStore(kube.CoreV1(cs), ns, job.StoreOptions{}))

	// A page's stream, as the server sends it.
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, base+"/events", nil)
	require.NoError(t, err)
	var resp *http.Response
	require.Eventually(t, func() bool {
		resp, err = http.DefaultClient.Do(req.Clone(ctx))
		return err == nil && resp.StatusCode == http.StatusOK
	}, 10*time.Second, 50*time.Millisecond)
	t.Cleanup(func() { _ = resp.Body.Close() })
	stream := bufio.NewReader(resp.Body)
	var cur *dashboard.Snapshot
	for cur == nil || len(cur.Locks) < n/2 {
		cur = applyEvent(t, cur, stream)
	}

	bctx := browser(t, ctx, func(any) {})
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/")))
	const targets = `[...document.querySelectorAll('#locks .lock h3 a')].map(a => a.textContent).join(' ')`
	awaitJS(t, bctx, "every lock, live", fmt.Sprintf(`document.body.dataset.seq !== undefined && document.querySelectorAll('#locks .lock').length === %d`, n/2))

	// A lock comes between two others: its card comes in its place.
	_, _, err = locks.TryAcquire(ctx, lock.Request{Target: "svc-05", Identity: id(5), ClaimID: "5", TTL: time.Hour})
	require.NoError(t, err)
	var u dashboard.Update
	for {
		ev, data := readEvent(t, stream)
		if ev != "update" {
			continue
		}
		require.NoError(t, json.Unmarshal([]byte(data), &u))
		if len(u.Locks) > 0 {
			break
		}
	}
	require.Len(t, u.Locks, 1, "one lock came of %d: the update carries it alone", n/2+1)
	assert.Equal(t, "svc-05", u.Locks[0].Lock.Spec.Target)
	awaitJS(t, bctx, "svc-05's card between svc-04 and svc-06", fmt.Sprintf(`%s.includes('svc-04 svc-05 svc-06')`, targets))

	// A lock released: its card shows it free.
	_, err = locks.Release(ctx, "svc-02", id(2), lock.ReleaseOptions{})
	require.NoError(t, err)
	awaitJS(t, bctx, "svc-02 free", `(() => {
		const a = [...document.querySelectorAll('#locks .lock h3 a')].find(a => a.textContent === 'svc-02');
		return a !== undefined && a.closest('.lock').dataset.state === 'free';
	})()`)

	// A lock deleted: its card goes.
	require.NoError(t, cs.CoreV1().ConfigMaps(ns).Delete(ctx, record.Name("svc-08"), metav1.DeleteOptions{}))
	awaitJS(t, bctx, "svc-08 gone", fmt.Sprintf(`!%s.includes('svc-08')`, targets))

	// What the updates made is what the whole snapshot renders.
	got := text(t, bctx, targets)
	require.NoError(t, chromedp.Do(bctx, chromedp.Reload()))
	awaitJS(t, bctx, "the page again, live", `document.body.dataset.seq !== undefined`)
	assert.Equal(t, text(t, bctx, targets), got, "the cards in the server's order")
	assert.Equal(t, "svc-00 svc-02 svc-04 svc-05 svc-06 svc-10 svc-12 svc-14 svc-16 svc-18", strings.TrimSpace(got))
}
