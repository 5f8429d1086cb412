package dashboard_test

import (
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/cdp"
	cdplog "github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/runtime"
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

// TestIntegrationDashboardBrowserFirstLook: the page a team sees first, on
// a lock namespace where no lock was ever taken and no job submitted: no
// exception and nothing logged as an error in the console, "live", a line
// saying there are no locks yet and how to make one; the first lock and
// the first job and the first freeze window appear as they come, with no
// reload.
func TestIntegrationDashboardBrowserFirstLook(t *testing.T) {
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	cs, err := kube.NewForConfig(env.RESTConfig)
	require.NoError(t, err)
	store := job.NewStore(kube.CoreV1(cs), ns, job.StoreOptions{})
	base := serveDashboard(t, ctx, cs, ns, store)

	var mu sync.Mutex
	var problems []string
	bctx := browser(t, ctx, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text+" "+exceptionText(e))
		case *cdplog.EventEntryAdded:
			if e.Entry.Level == cdplog.EntryLevelError || e.Entry.Level == cdplog.EntryLevelWarning {
				problems = append(problems, "log "+string(e.Entry.Level)+": "+e.Entry.Text+" "+e.Entry.URL)
			}
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning || e.Type == runtime.ConsoleAPICalledTypeAssert {
				problems = append(problems, "console."+string(e.Type)+": "+consoleText(e))
			}
		}
	})
	t.Cleanup(func() {
		mu.Lock()
		defer mu.Unlock()
		assert.Empty(t, problems, "nothing wrong in the console")
	})
	// NOTE: the Log domain carries what the console shows beside the
	// script's own calls: failed requests, violations.
	_, err = chromedp.Call(bctx, cdplog.Enable, cdp.Empty{})
	require.NoError(t, err)
	require.NoError(t, chromedp.Do(bctx, chromedp.Navigate(base+"/")))
	took := awaitJS(t, bctx, "live", `document.body.dataset.seq !== undefined && document.getElementById('conn').textContent.startsWith('live')`)
	t.Logf("live after %v", took.Round(time.Millisecond))
	assert.Equal(t, "No locks yet — lockctl acquire makes one.", text(t, bctx, `document.querySelector("#locks > p.empty").textContent`))
	assert.Equal(t, "No freeze windows.", text(t, bctx, `document.querySelector('#windows p.empty').textContent`), "the windows drawn")
	assert.Equal(t, "No jobs.", text(t, bctx, `document.querySelector('#jobs p.empty').textContent`), "the jobs drawn")
	// A mark in the page's window: a reload would lose it.
	text(t, bctx, `(window.firstLook = 'same page', '')`)

	holder := lock.New(cs.CoreV1(), cs.CoreV1(), ns, clock.RealClock{}, lock.Options{})
	_, _, err = holder.TryAcquire(ctx, lock.Request{Target: "staging", Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"},
		ClaimID: "first", TTL: time.Hour})
	require.NoError(t, err)
	took = awaitJS(t, bctx, "the first lock, held", `(() => { const c = `+cardJS("staging")+`; return c !== null && c.dataset.state === 'held'; })()`)
	t.Logf("the first lock appeared %v after it was taken", took.Round(time.Millisecond))
	assert.Equal(t, "0", text(t, bctx, `String(document.querySelectorAll("#locks > p.empty").length)`), "the empty line gone")

	_, err = store.Create(ctx, &job.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-web-1"},
		Spec: job.JobSpec{Job: "deploy-web", Type: job.Postsubmit, Refs: &job.Refs{Org: "acme", Repo: "web", BaseRef: "main"},
			PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}},
	})
	require.NoError(t, err)
	took = awaitJS(t, bctx, "the first job", `document.querySelector('#jobs tr[data-job="deploy-web-1"]') !== null`)
	t.Logf("the first job appeared %v after it was submitted", took.Round(time.Millisecond))

	_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: record.FreezeWindowsName, Namespace: ns},
		Data:       map[string]string{record.FreezeWindowsKey: "windows:\n- {name: nightly, schedule: \"" + awayFromNow() + "\", duration: 8h, reason: nightly batch}\n"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	took = awaitJS(t, bctx, "the first freeze window", `[...document.querySelectorAll('#windows td')].some(td => td.textContent === 'nightly')`)
	t.Logf("the first freeze window appeared %v after it was written", took.Round(time.Millisecond))
	assert.Equal(t, "same page", text(t, bctx, `String(window.firstLook)`), "no reload")
	assert.True(t, strings.HasPrefix(text(t, bctx, `document.getElementById('conn').textContent`), "live"), "still live")
}

// exceptionText is the message of an exception thrown in the page.
func exceptionText(e *runtime.EventExceptionThrown) string {
	if e.ExceptionDetails.Exception != nil {
		return e.ExceptionDetails.Exception.Description
	}
	return ""
}

// consoleText is what a console call printed.
func consoleText(e *runtime.EventConsoleAPICalled) string {
	var parts []string
	for _, a := range e.Args {
		if a.Value != nil {
			parts = append(parts, string(a.Value))
		} else {
			parts = append(parts, a.Description)
		}
	}
	return strings.Join(parts, " ")
}
