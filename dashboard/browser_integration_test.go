package dashboard_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"k8s.io/utils/clock"

	"github.com/chromedp/cdproto/cdp"
	"github.com/chromedp/cdproto/emulation"
	"github.com/chromedp/cdproto/page"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/dashboard"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
)

// hostileLogLine is a line of every container's log on the package's
// control plane: the log page must show it as text and run nothing.
const hostileLogLine = `<img src=x onerror=alert(1)><script>alert(2)</script>`

// containerLog is what every container prints here: the default log with
// a hostile line before its last one, which the tests wait for.
var containerLog = append(append(slices.Clone(testenv.DefaultContainerLog[:len(testenv.DefaultContainerLog)-1]), hostileLogLine),
	testenv.DefaultContainerLog[len(testenv.DefaultContainerLog)-1])

func TestMain(m *testing.M) { testenv.MainWith(m, testenv.Options{ContainerLog: containerLog}) }

// chromiumPath finds Debian's chromium (or $LOCKCTL_CHROMIUM). Without it
// the test skips, or fails when integration tests are required.
func chromiumPath(t *testing.T) string {
	t.Helper()
	for _, p := range []string{os.Getenv("LOCKCTL_CHROMIUM"), "/usr/bin/chromium", "/usr/bin/chromium-browser"} {
		if p == "" {
			continue
		}
		if _, err := exec.LookPath(p); err == nil {
			return p
		}
	}
	msg := "chromium is not installed: run hack/chromium.sh (make chromium) to install Debian's chromium for the dashboard's browser test"
	if os.Getenv("LOCKCTL_REQUIRE_INTEGRATION") != "" {
		t.Fatal(msg)
	}
	t.Skip(msg)
	return ""
}

// browser starts a headless chromium with a fresh profile and no network
// of its own, for the test's duration; listen gets the page's events.
func browser(t *testing.T, ctx context.Context, listen func(ev any)) context.Context {
	t.Helper()
	opts := append([]chromedp.ExecAllocatorOption{}, chromedp.DefaultExecAllocatorOptions[:]...)
	opts = append(opts,
		chromedp.ExecPath(chromiumPath(t)),
		chromedp.NoSandbox,
		chromedp.DisableGPU,
		chromedp.UserDataDir(t.TempDir()),
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-sync", true),
		chromedp.NoFirstRun,
		chromedp.WindowSize(1280, 900),
	)
	alloc, cancelAlloc := chromedp.NewExecAllocator(ctx, opts...)
	t.Cleanup(cancelAlloc)
	bctx, cancel := chromedp.NewContext(alloc, chromedp.WithListener(listen))
	t.Cleanup(cancel)
	require.NoError(t, chromedp.Do(bctx), "start chromium")
	return bctx
}

// awaitJS evaluates expr on the page until it is true and returns how long
// that took. The bound is generous: the test asserts what the page shows
// and logs how fast, never a wall-clock threshold.
func awaitJS(t *testing.T, ctx context.Context, what, expr string) time.Duration {
	t.Helper()
	start := time.Now()
	deadline := start.Add(30 * time.Second)
	for {
		ok, err := chromedp.Run(ctx, chromedp.Evaluate[bool](expr))
		if err == nil && ok {
			return time.Since(start)
		}
		if time.Now().After(deadline) {
			html, _ := chromedp.Run(ctx, chromedp.OuterHTML(chromedp.CSS("main")))
			conn, _ := chromedp.Run(ctx, chromedp.Evaluate[string](`document.getElementById('conn').textContent`))
			t.Fatalf("the page never showed %s (%s; err %v); its connection: %q; main is:\n%s", what, expr, err, conn, html)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func text(t *testing.T, ctx context.Context, expr string) string {
	t.Helper()
	s, err := chromedp.Run(ctx, chromedp.Evaluate[string](expr))
	require.NoError(t, err, expr)
	return s
}

// screenshot writes the page to docs/images/name when
// LOCKCTL_UPDATE_SCREENSHOTS=1.
func screenshot(t *testing.T, ctx context.Context, name string) {
	t.Helper()
	if os.Getenv("LOCKCTL_UPDATE_SCREENSHOTS") != "1" {
		return
	}
	png, err := chromedp.Run(ctx, chromedp.FullScreenshot(100))
	require.NoError(t, err)
	path := filepath.Join("..", "docs", "images", name)
	require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
	require.NoError(t, os.WriteFile(path, png, 0o644))
	t.Logf("wrote %s", path)
}

func metrics(t *testing.T, ctx context.Context, width, height int64, scale float64, mobile bool) {
	t.Helper()
	_, err := chromedp.Call(ctx, emulation.SetDeviceMetricsOverride, emulation.SetDeviceMetricsOverrideParams{
		Width: width, Height: height, DeviceScaleFactor: scale, Mobile: mobile,
	})
	require.NoError(t, err)
}

func colorScheme(t *testing.T, ctx context.Context, scheme string) {
	t.Helper()
	_, err := chromedp.Call(ctx, emulation.SetEmulatedMedia, emulation.SetEmulatedMediaParams{
		Features: []*emulation.MediaFeature{{Name: "prefers-color-scheme", Value: scheme}},
	})
	require.NoError(t, err)
}

func TestIntegrationDashboardBrowser(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cs, err := kube.NewForConfig(env.RESTConfig)
	require.NoError(t, err)

	// The contenders are other processes as far as the page is concerned:
	// clients of their own.
	contender := func() *lock.Client {
		c := lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{WaiterTTL: 10 * time.Minute})
		return c
	}
	first, second, third := contender(), contender(), contender()
	id := func(branch, build string) record.Identity {
		return record.Identity{Owner: "acme", Repo: "web", Branch: branch, Build: build}
	}
	_, _, err = first.TryAcquire(ctx, lock.Request{Target: "production", Identity: id(evil, "41"), ClaimID: "first", TTL: time.Hour})
	require.NoError(t, err)
	_, p, err := second.TryAcquire(ctx, lock.Request{Target: "production", Identity: id("main", "42"), ClaimID: "second", TTL: time.Hour})
	require.NoError(t, err)
	require.NotNil(t, p, "build 42 waits")
	_, p, err = third.TryAcquire(ctx, lock.Request{Target: "production", Identity: record.Identity{Owner: "acme", Repo: "api", Branch: "hotfix", Build: "7"},
		ClaimID: "third", TTL: time.Hour, Priority: record.PriorityHigh})
	require.NoError(t, err)
	require.NotNil(t, p, "the hotfix waits")

	// Another lock, and freeze windows to come, that leave production be.
	_, _, err = contender().TryAcquire(ctx, lock.Request{Target: "staging", Identity: id("release-2.4", "17"), ClaimID: "staging", TTL: time.Hour})
	require.NoError(t, err)
	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: record.FreezeWindowsName},
		Data: map[string]string{record.FreezeWindowsKey: `windows:
- {name: nightly-maintenance, schedule: "0 22 * * *", duration: 1h, reason: database maintenance, targets: [staging]}
- {name: holidays, schedule: "0 0 24 12 *", duration: 72h, reason: holiday freeze, targets: [staging, payments]}
`},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	// A lock with a history, for the wait estimate: five holds of 10m, a
	// holder 1m in and one waiter.
	regularHolds(t, cs.CoreV1(), ns, "uat", 5, 10*time.Minute, time.Minute)
	_, p, err = contender().TryAcquire(ctx, lock.Request{Target: "uat", Identity: id("main", "99"), ClaimID: "uat-waiter", TTL: time.Hour})
	require.NoError(t, err)
	require.NotNil(t, p, "build 99 waits for uat")

	store := job.NewStore(kube.CoreV1(cs), ns, job.StoreOptions{})
	base := serveDashboard(t, ctx, cs, ns, store)

	var dialogs, exceptions atomic.Int32
	var bctx context.Context
	bctx = browser(t, ctx, func(ev any) {
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			exceptions.Add(1)
			t.Logf("exception in the page: %s", e.ExceptionDetails.Text)
		case *page.EventJavascriptDialogOpening, page.EventJavascriptDialogOpening:
			dialogs.Add(1)
			go func() {
				_, _ = chromedp.Call(bctx, page.HandleJavaScriptDialog, page.HandleJavaScriptDialogParams{Accept: true})
			}()
		}
	})

	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/")))
	awaitJS(t, bctx, "the holder and the queue in order", `(() => {
		const who = [...document.querySelectorAll('#locks .lock:first-child .queue .who')].map(e => e.textContent);
		const holder = document.querySelector('#locks .lock .holder');
		return document.body.dataset.seq !== undefined && holder !== null &&
			holder.textContent === 'acme/web@<img src=x onerror=alert(1)>#41' &&
			who.join('|') === 'acme/api@hotfix#7|acme/web@main#42';
	})()`)
	assert.Equal(t, "high", text(t, bctx, `document.querySelector('#locks .queue .prio').textContent`), "the hotfix's priority")
	awaitJS(t, bctx, "the freeze windows to come", `document.querySelectorAll('#windows tbody tr').length === 2`)

	t.Run("the wait estimate, as status gives it", func(t *testing.T) {
		awaitJS(t, bctx, "uat's estimates", `(() => {
			const card = [...document.querySelectorAll('#locks .lock')].find(c => c.querySelector('h3 a').textContent === 'uat');
			const eta = card && card.querySelector('.queue .eta'), est = card && card.querySelector('.estimate');
			return eta !== null && est !== null && eta.textContent === ' · est. wait about 9 min' &&
				est.textContent === 'about 20 min for a deploy queued now (median hold 10m over the last 5)';
		})()`)
		assert.NotContains(t, text(t, bctx, `document.getElementById('locks').textContent`), "about about", "estimates are shown as they are")
	})

	t.Run("a release by another process moves the queue on the open page", func(t *testing.T) {
		_, err := first.Release(ctx, "production", id(evil, "41"), lock.ReleaseOptions{})
		require.NoError(t, err)
		took := awaitJS(t, bctx, "the hotfix holding and build 42 next", `(() => {
			const holder = document.querySelector('#locks .lock .holder');
			const who = [...document.querySelectorAll('#locks .lock:first-child .queue .who')].map(e => e.textContent);
			return holder !== null && holder.textContent === 'acme/api@hotfix#7' && who.join('|') === 'acme/web@main#42';
		})()`)
		t.Logf("hand-over visible on the page %v after the release returned", took.Round(time.Millisecond))
	})

	t.Run("a freeze appears with its reason, as text", func(t *testing.T) {
		_, err := third.Freeze(ctx, record.FreezeRequest{Target: "production", By: record.Identity{Owner: "sre", Repo: "ops", Branch: "main", Build: "1"},
			Reason: evil, Until: time.Now().Add(2 * time.Hour)})
		require.NoError(t, err)
		awaitJS(t, bctx, "the freeze's reason", `(() => {
			const r = document.querySelector('#locks .freeze .reason');
			return r !== null && r.textContent === '<img src=x onerror=alert(1)>';
		})()`)
		assert.Equal(t, "0", text(t, bctx, `String(document.querySelectorAll('img').length)`), "no user string became an element")
	})

	j, err := store.Create(ctx, &job.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-web-42"},
		Spec: job.JobSpec{Job: "deploy-web", Type: job.Postsubmit, Refs: &job.Refs{Org: "acme", Repo: "web", BaseRef: evil},
			PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}},
	})
	require.NoError(t, err)
	awaitJS(t, bctx, "the job, triggered, with its branch as text", `(() => {
		const row = document.querySelector('#jobs tr[data-job="deploy-web-42"]');
		return row !== null && row.querySelector('.badge').textContent === 'triggered' &&
			row.textContent.includes('<img src=x onerror=alert(1)>');
	})()`)
	metrics(t, bctx, 1280, 900, 1, false)
	screenshot(t, bctx, "dashboard-locks.png")

	t.Run("the page fits a phone and works with the keyboard", func(t *testing.T) {
		metrics(t, bctx, 390, 844, 2, true)
		assert.Equal(t, "true", text(t, bctx, `String(document.documentElement.scrollWidth <= window.innerWidth)`), "no horizontal scrolling at 390px")
		_, err = chromedp.Call(bctx, emulation.ClearDeviceMetricsOverride, cdp.Empty{})
		require.NoError(t, err)
		require.NoError(t, chromedp.Do(bctx, chromedp.KeyEvent("\t"), chromedp.KeyEvent("\t")))
		assert.Equal(t, "A", text(t, bctx, `document.activeElement.tagName`), "Tab reaches the links")
		assert.Equal(t, "solid", text(t, bctx, `getComputedStyle(document.activeElement).outlineStyle`), "the focused link shows where the focus is")
	})

	t.Run("dark mode", func(t *testing.T) {
		light := text(t, bctx, `getComputedStyle(document.body).backgroundColor`)
		colorScheme(t, bctx, "dark")
		dark := text(t, bctx, `getComputedStyle(document.body).backgroundColor`)
		assert.NotEqual(t, light, dark, "the page follows prefers-color-scheme")
		colorScheme(t, bctx, "light")
	})

	t.Run("one click to the lock's history", func(t *testing.T) {
		require.NoError(t, chromedp.Do(bctx, chromedp.Click(chromedp.CSS(`#locks .lock h3 a`))))
		awaitJS(t, bctx, "the hold handed over, by whom", `(() => {
			const rows = [...document.querySelectorAll('#history tbody tr')].map(r => r.textContent);
			return rows.length === 1 && rows[0].includes('acme/web@<img src=x onerror=alert(1)>#41') &&
				rows[0].includes('handed over to acme/api@hotfix#7');
		})()`)
		metrics(t, bctx, 390, 844, 2, true)
		assert.Equal(t, "true", text(t, bctx, `String(document.documentElement.scrollWidth <= window.innerWidth)`), "the history fits a phone too")
		metrics(t, bctx, 1280, 900, 1, false)
		screenshot(t, bctx, "dashboard-history.png")
	})

	t.Run("a job's state moves and its logs stream", func(t *testing.T) {
		require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/jobs/deploy-web-42/logs")))
		awaitJS(t, bctx, "the job triggered", `document.querySelector('#job-state .badge') !== null && document.querySelector('#job-state .badge').textContent === 'triggered'`)
		// The reconciler's part, by hand: the pod, then the job pending.
		pod := job.NewPod(j, ns, "1")
		pod.Annotations = map[string]string{testenv.AnnotationExitCode: "0", testenv.AnnotationDuration: "3s"}
		_, err := cs.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
		require.NoError(t, err)
		j, err = store.UpdateStatus(ctx, j, job.JobStatus{State: job.Pending, PodName: pod.Name, BuildID: "1", StartTime: j.Status.StartTime})
		require.NoError(t, err)
		awaitJS(t, bctx, "the job pending with its pod and build", `(() => {
			const b = document.querySelector('#job-state .badge');
			return b !== null && b.textContent === 'pending' && document.getElementById('job-pod').textContent === 'deploy-web-42' &&
				document.getElementById('job-build').textContent === '1';
		})()`)
		awaitJS(t, bctx, "the pod's log", fmt.Sprintf(`document.getElementById('log').textContent.includes(%q)`, testenv.DefaultContainerLog[len(testenv.DefaultContainerLog)-1]))
		assert.Equal(t, "true", text(t, bctx, fmt.Sprintf(`String(document.getElementById('log').textContent.includes(%q))`, hostileLogLine)), "a log line that looks like HTML shows as text")
		assert.Equal(t, "0", text(t, bctx, `String(document.querySelectorAll('#log *').length)`), "a log line makes no element")
		awaitJS(t, bctx, "the end of the pod", `document.body.dataset.logEnded === 'true'`)
		j, err = store.UpdateStatus(ctx, j, job.JobStatus{State: job.Success, PodName: pod.Name, BuildID: "1", StartTime: j.Status.StartTime, PendingTime: j.Status.PendingTime})
		require.NoError(t, err)
		awaitJS(t, bctx, "the job succeeded", `document.querySelector('#job-state .badge').textContent === 'success'`)
		metrics(t, bctx, 1280, 700, 1, false)
		screenshot(t, bctx, "dashboard-job-logs.png")
	})

	assert.Zero(t, dialogs.Load(), "no script from a user string ran")
	assert.Zero(t, exceptions.Load(), "the page's script ran without an exception")
}

// serveDashboard runs a hub over the locks and jobs of ns and serves its
// page on a loopback port until the test ends, as lockctl dashboard does;
// it returns the page's base URL.
func serveDashboard(t *testing.T, ctx context.Context, cs kube.Interface, ns string, store *job.Store) string {
	t.Helper()
	return serveHub(t, ctx, cs, ns, dashboard.Options{
		Jobs:    store,
		PodsFor: func(*job.Job) (kube.PodsGetter, string, error) { return cs.CoreV1(), ns, nil },
	})
}
