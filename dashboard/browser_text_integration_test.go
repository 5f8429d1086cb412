package dashboard_test

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// brokenWords counts the words of the page's table cells that the browser
// lays out on more than one line (a word is what lies between spaces,
// hyphens and slashes, where a line may break anyway).
const brokenWords = `(() => {
	let broken = [];
	for (const td of document.querySelectorAll('td')) {
		const walker = document.createTreeWalker(td, NodeFilter.SHOW_TEXT);
		for (let n = walker.nextNode(); n; n = walker.nextNode()) {
			const re = /[^\s\-\/]+/g;
			let m;
			while ((m = re.exec(n.data)) !== null) {
				const r = document.createRange();
				r.setStart(n, m.index);
				r.setEnd(n, m.index + m[0].length);
				const tops = new Set([...r.getClientRects()].filter(x => x.width > 0).map(x => Math.round(x.top)));
				if (tops.size > 1) broken.push(m[0]);
			}
		}
	}
	return broken.join(' ');
})()`

// TestIntegrationDashboardBrowserText: in Chromium, the live page shows
// text with a right-to-left override quoted with escapes (as lockctl's CLI
// does), a frozen lock nobody holds as frozen, a job's reason as text
// (not ",[object HTMLSpanElement]"), and tables on a 390px phone whose
// names are not broken every few letters.
func TestIntegrationDashboardBrowserText(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cs, err := kube.NewForConfig(env.RESTConfig)
	require.NoError(t, err)
	locks := lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{WaiterTTL: 10 * time.Minute})

	_, _, err = locks.TryAcquire(ctx, lock.Request{Target: "production", ClaimID: "evil", TTL: time.Hour,
		Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main\u202egnp.exe", Build: "1"},
		Apps:     []record.App{{Kind: record.AppArgoCD, Name: "web"}, {Kind: record.AppFluxHelmRelease, Namespace: "apps", Name: "web"}}})
	require.NoError(t, err)
	_, err = locks.Freeze(ctx, record.FreezeRequest{Target: "staging", By: record.Identity{Owner: "sre", Repo: "ops", Branch: "main", Build: "1"},
		Reason: "hold\u202efix", Until: time.Now().Add(2 * time.Hour)})
	require.NoError(t, err)
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: record.FreezeWindowsName},
		Data: map[string]string{record.FreezeWindowsKey: `windows:
- {name: nightly-database-maintenance, schedule: "0 22 * * *", duration: 1h, reason: database maintenance window, targets: [staging, payments-production]}
`},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	store := job.NewStore(kube.CoreV1(cs), ns, job.StoreOptions{})
	j, err := store.Create(ctx, &job.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-web-frontend-production-42"},
		Spec: job.JobSpec{Job: "deploy-web-frontend", Type: job.Postsubmit, Refs: &job.Refs{Org: "acme", Repo: "web", BaseRef: "release-2026-12-frontend"},
			PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}},
	})
	require.NoError(t, err)
	j, err = store.UpdateStatus(ctx, j, job.JobStatus{State: job.Pending, PodName: "deploy-web-frontend-production-42", BuildID: "1234567890", StartTime: j.Status.StartTime})
	require.NoError(t, err)
	_, err = store.UpdateStatus(ctx, j, job.JobStatus{State: job.Failure, Reason: "PodFailed", Description: "exit code 2",
		PodName: "deploy-web-frontend-production-42", BuildID: "1234567890", StartTime: j.Status.StartTime, PendingTime: j.Status.PendingTime})
	require.NoError(t, err)

	base := serveDashboard(t, ctx, cs, ns, store)
	bctx := browser(t, ctx, func(any) {})

	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/")))
	// The script renders every snapshot: what follows is its rendering.
	awaitJS(t, bctx, "the locks, the window and the job, rendered by the script", `document.body.dataset.seq !== undefined &&
		document.querySelectorAll('#locks .lock').length === 2 && document.querySelectorAll('#windows tbody tr').length === 1 &&
		document.querySelector('#jobs tr[data-job]') !== null`)

	t.Run("a right-to-left override is shown escaped", func(t *testing.T) {
		assert.Equal(t, `acme/web@"main\u202egnp.exe"#1`, text(t, bctx, `document.querySelector('#locks .lock[data-state="held"] .holder').textContent`),
			"the identity as lockctl status shows it")
		assert.Equal(t, `"hold\u202efix"`, text(t, bctx, `document.querySelector('#locks .lock[data-state="frozen"] .freeze .reason').textContent`))
		assert.Equal(t, "false", text(t, bctx, `String(document.body.innerText.includes('\u202e'))`), "no raw override anywhere on the page")
	})

	t.Run("the holder's applications", func(t *testing.T) {
		assert.Equal(t, "argocd/web, flux/helmrelease/apps/web", text(t, bctx, `document.querySelector('#locks .lock[data-state="held"] .apps').textContent`),
			"as the server renders them")
	})

	t.Run("a frozen lock nobody holds shows frozen", func(t *testing.T) {
		card := `document.querySelector('#locks .lock[data-state="frozen"]')`
		assert.Equal(t, "staging", text(t, bctx, card+`.querySelector('h3 a').textContent`))
		assert.Equal(t, "frozen", text(t, bctx, card+`.querySelector('header .badge').textContent`))
		assert.Contains(t, text(t, bctx, card+`.querySelector('.freeze').textContent`), "Frozen until ")
	})

	t.Run("names in tables stay whole on a phone", func(t *testing.T) {
		metrics(t, bctx, 390, 844, 2, true)
		awaitJS(t, bctx, "the phone layout", `window.innerWidth === 390`)
		assert.Equal(t, "", text(t, bctx, brokenWords), "words broken across lines at 390px")
		assert.Equal(t, "true", text(t, bctx, `String(document.documentElement.scrollWidth <= window.innerWidth)`), "the page itself does not scroll sideways")
		if dir := os.Getenv("LOCKCTL_SCREENSHOT_DIR"); dir != "" {
			png, err := chromedp.Run(bctx, chromedp.FullScreenshot(100))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(dir, "dashboard-phone.png"), png, 0o644))
		}
		screenshot(t, bctx, "dashboard-phone.png")
		metrics(t, bctx, 1280, 900, 1, false)
	})

	t.Run("a job's reason on its log page, once the script runs", func(t *testing.T) {
		require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/jobs/deploy-web-frontend-production-42/logs")))
		awaitJS(t, bctx, "the job's facts, rendered by the script", `document.body.dataset.seq !== undefined &&
			document.querySelector('#job-state .badge') !== null && document.querySelector('#job-state .badge').textContent === 'failure'`)
		assert.Equal(t, "exit code 2 (PodFailed)", text(t, bctx, `document.getElementById('job-reason').textContent`), "the words first")
		assert.Equal(t, "(PodFailed)", text(t, bctx, `document.querySelector('#job-reason .muted').textContent`), "the machine's word after them")
	})
}
