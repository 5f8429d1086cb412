package dashboard_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/dashboard"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

const (
	lockNS = "locks"
	jobNS  = "ci"
	// evil is a string a user chose that must render as text.
	evil = `<img src=x onerror=alert(1)>`
)

// started is a hub over a fake clientset, running until the test ends.
type started struct {
	hub   *dashboard.Hub
	cs    *fake.Clientset
	locks *lock.Client
	srv   *httptest.Server
}

// start starts the hub; seed, if any, writes to the cluster first, so
// that the hub's first list has it (the fake clientset's watch may start
// after its list and miss what was written in between).
func start(t *testing.T, seed ...func(cs *fake.Clientset, locks *lock.Client)) *started {
	t.Helper()
	withJobs := func(cs *fake.Clientset) dashboard.Options {
		return dashboard.Options{Jobs: job.NewStore(kube.CoreV1(kubetest.Clients(cs)), jobNS, job.StoreOptions{})}
	}
	return startOn(t, clock.RealClock{}, withJobs, seed...)
}

// startOn starts a hub with the options opts gives, whose clock, and the
// locks' (seed writes with locks), is clk.
func startOn(t *testing.T, clk clock.WithTicker, opts func(cs *fake.Clientset) dashboard.Options, seed ...func(cs *fake.Clientset, locks *lock.Client)) *started {
	t.Helper()
	cs := fake.NewClientset()
	locks := lock.New(kubetest.CoreV1(cs.CoreV1()), kubetest.CoreV1(cs.CoreV1()), lockNS, clk, lock.Options{})
	for _, f := range seed {
		f(cs, locks)
	}
	viewer := lock.New(kubetest.CoreV1(cs.CoreV1()), kubetest.CoreV1(cs.CoreV1()), lockNS, clk, lock.Options{})
	hub := dashboard.NewHub(viewer, kube.CoreV1(kubetest.Clients(cs)), opts(cs))
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = hub.Run(ctx)
	}()
	t.Cleanup(func() { cancel(); <-done })
	srv := httptest.NewServer(hub.Handler())
	t.Cleanup(srv.Close)
	return &started{hub: hub, cs: cs, locks: locks, srv: srv}
}

// await waits until the hub's snapshot satisfies ok.
func (s *started) await(t *testing.T, what string, ok func(*dashboard.Snapshot) bool) *dashboard.Snapshot {
	t.Helper()
	var last *dashboard.Snapshot
	require.Eventually(t, func() bool {
		last = s.hub.Current()
		return last != nil && ok(last)
	}, 10*time.Second, 10*time.Millisecond, "snapshot with %s", what)
	return last
}

func holder(branch, build string) lock.Request {
	return lock.Request{
		Target:   "production",
		Identity: record.Identity{Owner: "acme", Repo: "web", Branch: branch, Build: build},
		ClaimID:  "s-" + build,
	}
}

func get(t *testing.T, url string, hdr map[string]string) (*http.Response, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodGet, url, nil)
	require.NoError(t, err)
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(b)
}

func TestSnapshotShowsHolderQueueFreezeAndJobs(t *testing.T) {
	// NOTE: written before the hub starts (see start): written after it,
	// a write between the fake clientset's list and its watch is missed,
	// and on a busy machine that happens.
	s := start(t, func(cs *fake.Clientset, locks *lock.Client) {
		ctx := t.Context()
		first := holder(evil, "1")
		first.Apps = []record.App{{Kind: record.AppArgoCD, Name: "web"}, {Kind: record.AppFluxKustomization, Namespace: "apps", Name: "web"}}
		_, _, err := locks.TryAcquire(ctx, first)
		require.NoError(t, err)
		_, p, err := locks.TryAcquire(ctx, holder("main", "2"))
		require.NoError(t, err)
		require.NotNil(t, p, "the second build waits")
		_, err = locks.Freeze(ctx, record.FreezeRequest{
			Target: "production", By: record.Identity{Owner: "sre", Repo: "ops", Branch: "main", Build: "1"},
			Reason: evil, Until: time.Now().Add(time.Hour),
		})
		require.NoError(t, err)
		_, err = job.NewStore(kube.CoreV1(kubetest.Clients(cs)), jobNS, job.StoreOptions{}).Create(ctx, &job.Job{
			TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
			ObjectMeta: metav1.ObjectMeta{Name: "deploy-1"},
			Spec: job.JobSpec{Job: "deploy", Type: job.Postsubmit, Refs: &job.Refs{Org: "acme", Repo: "web", BaseRef: evil},
				PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}},
		})
		require.NoError(t, err)
	})

	snap := s.await(t, "the holder, a waiter, the freeze and the job", func(s *dashboard.Snapshot) bool {
		return len(s.Locks) == 1 && len(s.Locks[0].Lock.Status.Waiters) == 1 &&
			s.Locks[0].Lock.Status.Freeze != nil && len(s.Jobs) == 1
	})
	l := snap.Locks[0].Lock
	assert.Equal(t, lock.StateHeld, l.Status.State)
	assert.Equal(t, evil, l.Status.Holder.Branch)
	assert.Equal(t, "2", l.Status.Waiters[0].Build)
	assert.Equal(t, evil, l.Status.Freeze.Reason)
	assert.Equal(t, "deploy-1", snap.Jobs[0].Name)
	assert.Equal(t, evil, snap.Jobs[0].Branch)

	t.Run("the page escapes every string from users", func(t *testing.T) {
		resp, body := get(t, s.srv.URL+"/", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		assert.NotContains(t, body, "<img", "no user string as markup")
		assert.Contains(t, body, "&lt;img src=x onerror=alert(1)&gt;", "the branch and the reason as text")
		assert.Contains(t, body, `href="/locks/locks/`, "a link to the lock's history")
		assert.Contains(t, body, `href="/jobs/deploy-1/logs"`, "a link to the job's logs")
		assert.Contains(t, body, `<dt>Apps</dt><dd class="apps">argocd/web, flux/kustomization/apps/web</dd>`, "the holder's applications")
		assert.Equal(t, dashboard.ContentSecurityPolicy, resp.Header.Get("Content-Security-Policy"))
		assert.NotContains(t, body, "<script>", "no inline script")
		assert.NotContains(t, body, "http://", "no asset from elsewhere")
		assert.NotContains(t, body, "https://", "no asset from elsewhere")
	})
	t.Run("the history page names the lock", func(t *testing.T) {
		resp, body := get(t, s.srv.URL+"/locks/"+lockNS+"/"+l.Name, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode, body)
		assert.Contains(t, body, "History of lock")
		assert.NotContains(t, body, "<img")
	})
	t.Run("the snapshot is the status view", func(t *testing.T) {
		resp, body := get(t, s.srv.URL+"/api/snapshot", nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var raw struct {
			Locks []struct {
				Lock map[string]any `json:"lock"`
			} `json:"locks"`
		}
		require.NoError(t, json.Unmarshal([]byte(body), &raw))
		require.Len(t, raw.Locks, 1)
		assert.Equal(t, "Lock", raw.Locks[0].Lock["kind"], "a Lock object, as status -o json prints")
	})
}

func TestHandlerRefuses(t *testing.T) {
	s := start(t)
	s.await(t, "the first snapshot", func(*dashboard.Snapshot) bool { return true })
	for _, tc := range []struct {
		name   string
		method string
		path   string
		host   string
		want   int
	}{
		{name: "a write", method: http.MethodPost, path: "/", want: http.StatusMethodNotAllowed},
		{name: "a delete", method: http.MethodDelete, path: "/api/snapshot", want: http.StatusMethodNotAllowed},
		{name: "a host name (DNS rebinding)", method: http.MethodGet, path: "/", host: "attacker.example:8080", want: http.StatusMisdirectedRequest},
		{name: "localhost", method: http.MethodGet, path: "/", host: "localhost:8080", want: http.StatusOK},
		{name: "an IPv6 address", method: http.MethodGet, path: "/", host: "[::1]:8080", want: http.StatusOK},
		{name: "an unknown page", method: http.MethodGet, path: "/nothing", want: http.StatusNotFound},
		{name: "an unknown job's logs", method: http.MethodGet, path: "/jobs/nope/logs/stream", want: http.StatusNotFound},
		{name: "the script", method: http.MethodGet, path: "/assets/app.js", want: http.StatusOK},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequest(tc.method, s.srv.URL+tc.path, nil)
			require.NoError(t, err)
			if tc.host != "" {
				req.Host = tc.host
			}
			resp, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			_ = resp.Body.Close()
			assert.Equal(t, tc.want, resp.StatusCode, "%s %s host %q", tc.method, tc.path, tc.host)
			assert.Equal(t, dashboard.ContentSecurityPolicy, resp.Header.Get("Content-Security-Policy"), "every answer has the policy")
		})
	}
}

// readEvent reads the next server-sent event's name and data, skipping
// the events "clock" (the server's time, sent after the first event and
// as the stream's heartbeat).
func readEvent(t *testing.T, r *bufio.Reader) (string, string) {
	t.Helper()
	for {
		if ev, data := readAnyEvent(t, r); ev != "clock" {
			return ev, data
		}
	}
}

// readAnyEvent reads the next server-sent event's name and data.
func readAnyEvent(t *testing.T, r *bufio.Reader) (string, string) {
	t.Helper()
	var event, data string
	for {
		line, err := r.ReadString('\n')
		require.NoError(t, err)
		line = strings.TrimRight(line, "\n")
		switch {
		case line == "" && (event != "" || data != ""):
			return event, data
		case strings.HasPrefix(line, "event: "):
			event = strings.TrimPrefix(line, "event: ")
		case strings.HasPrefix(line, "data: "):
			data += strings.TrimPrefix(line, "data: ")
		}
	}
}

// applyEvent reads the next event of a page's stream and applies it to
// the snapshot the stream sent before, cur, as the page's script does:
// a "snapshot" is the whole, an "update" the change from cur.
func applyEvent(t *testing.T, cur *dashboard.Snapshot, r *bufio.Reader) *dashboard.Snapshot {
	t.Helper()
	ev, data := readEvent(t, r)
	switch ev {
	case "snapshot":
		var snap dashboard.Snapshot
		require.NoError(t, json.Unmarshal([]byte(data), &snap))
		return &snap
	case "update":
		var u dashboard.Update
		require.NoError(t, json.Unmarshal([]byte(data), &u))
		require.NotNil(t, cur, "an update comes after a snapshot")
		require.Equal(t, cur.Seq, u.Base, "an update changes the snapshot the stream sent last")
		return applyUpdate(cur, &u)
	}
	t.Fatalf("unknown event %q", ev)
	return nil
}

// applyUpdate applies u to the snapshot it changes, as the page does.
func applyUpdate(cur *dashboard.Snapshot, u *dashboard.Update) *dashboard.Snapshot {
	byKey := map[dashboard.LockKey]dashboard.LockEntry{}
	for _, e := range cur.Locks {
		byKey[dashboard.LockKey{Namespace: e.Lock.Namespace, Name: e.Lock.Name}] = e
	}
	for _, k := range u.Removed {
		delete(byKey, k)
	}
	for _, e := range u.Locks {
		byKey[dashboard.LockKey{Namespace: e.Lock.Namespace, Name: e.Lock.Name}] = e
	}
	next := u.Snapshot
	next.Locks = []dashboard.LockEntry{}
	for _, e := range byKey {
		next.Locks = append(next.Locks, e)
	}
	sort.Slice(next.Locks, func(i, k int) bool {
		a, b := next.Locks[i].Lock, next.Locks[k].Lock
		return a.Namespace < b.Namespace || a.Namespace == b.Namespace && a.Name < b.Name
	})
	return &next
}

func TestEventsFanOutFromOneSetOfWatches(t *testing.T) {
	s := start(t)
	s.await(t, "the first snapshot", func(*dashboard.Snapshot) bool { return true })
	const viewers = 5
	readers := make([]*bufio.Reader, viewers)
	firsts := make([]*dashboard.Snapshot, viewers)
	for i := range readers {
		resp, err := http.Get(s.srv.URL + "/events")
		require.NoError(t, err)
		t.Cleanup(func() { _ = resp.Body.Close() })
		require.Equal(t, "text/event-stream", resp.Header.Get("Content-Type"))
		readers[i] = bufio.NewReader(resp.Body)
		ev, data := readEvent(t, readers[i])
		require.Equal(t, "snapshot", ev, "the current snapshot first")
		require.NoError(t, json.Unmarshal([]byte(data), &firsts[i]))
	}
	require.Eventually(t, func() bool { return s.hub.Subscribers() == viewers }, 5*time.Second, 10*time.Millisecond)
	before := len(s.cs.Actions())

	_, _, err := s.locks.TryAcquire(t.Context(), holder("main", "7"))
	require.NoError(t, err)
	for i, r := range readers {
		snap := firsts[i]
		for {
			snap = applyEvent(t, snap, r)
			if len(snap.Locks) == 1 && snap.Locks[0].Lock.Status.Holder != nil {
				assert.Equal(t, "7", snap.Locks[0].Lock.Status.Holder.Build, "viewer %d", i)
				break
			}
		}
	}
	// The acquire's own requests, and none per viewer: the hub reads
	// nothing (the holder has no pod) to show the change.
	var reads []string
	for _, a := range s.cs.Actions()[before:] {
		if v := a.GetVerb(); v == "list" || v == "watch" || v == "get" && a.GetResource().Resource != "configmaps" {
			reads = append(reads, v+" "+a.GetResource().Resource)
		}
	}
	assert.Empty(t, reads, "no request per viewer")
}

func TestJobChangesDoNotReadHolderPodsAgain(t *testing.T) {
	s := start(t)
	ctx := t.Context()
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "deployer", Namespace: jobNS, UID: "pod-uid"},
		Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	_, err := s.cs.CoreV1().Pods(jobNS).Create(ctx, pod, metav1.CreateOptions{})
	require.NoError(t, err)
	r := holder("main", "5")
	r.Pod = &record.PodRef{Namespace: jobNS, Name: "deployer"}
	_, _, err = s.locks.TryAcquire(ctx, r)
	require.NoError(t, err)
	s.await(t, "the holder in its pod", func(s *dashboard.Snapshot) bool {
		return len(s.Locks) == 1 && s.Locks[0].Lock.Status.Holder != nil && s.Locks[0].Lock.Status.Alive
	})
	podGets := func() int {
		n := 0
		for _, a := range s.cs.Actions() {
			if a.GetVerb() == "get" && a.GetResource().Resource == "pods" {
				n++
			}
		}
		return n
	}
	before := podGets()
	_, err = job.NewStore(kube.CoreV1(kubetest.Clients(s.cs)), jobNS, job.StoreOptions{}).Create(ctx, &job.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-2"},
		Spec: job.JobSpec{Job: "deploy", Type: job.Periodic,
			PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}},
	})
	require.NoError(t, err)
	s.await(t, "the job", func(s *dashboard.Snapshot) bool { return len(s.Jobs) == 1 })
	assert.Equal(t, before, podGets(), "the lock did not change: its view is kept, its holder's pod not read again")
}

func TestPageShowsTheWaitEstimateAsStatusDoes(t *testing.T) {
	// Five holds of 10m and a holder 1m in: the waiter's turn is about
	// 9 min away, a deploy queued now waits one hold more.
	s := start(t, func(cs *fake.Clientset, locks *lock.Client) {
		regularHolds(t, kubetest.CoreV1(cs.CoreV1()), lockNS, "production", 5, 10*time.Minute, time.Minute)
		_, p, err := locks.TryAcquire(t.Context(), holder(evil, "7"))
		require.NoError(t, err)
		require.NotNil(t, p, "build 7 waits")
	})

	snap := s.await(t, "the waiter with its estimate", func(s *dashboard.Snapshot) bool {
		return len(s.Locks) == 1 && len(s.Locks[0].Lock.Status.Waiters) == 1
	})
	st := snap.Locks[0].Lock.Status
	require.Equal(t, "about 9 min", st.Waiters[0].EstimatedWait, "the waiter's estimate, as status -o json gives it")
	require.Equal(t, "about 20 min", st.EstimatedWait, "a deploy queued now")

	_, body := get(t, s.srv.URL+"/", nil)
	assert.Contains(t, body, `<dt>Est. wait</dt><dd class="estimate">about 20 min <span class="muted">for a deploy queued now (median hold 10m over the last 5)</span></dd>`,
		"the lock's estimate and its basis, as status -o wide shows them")
	assert.Contains(t, body, `<span class="eta" title="median hold 10m over the last 5"> · est. wait about 9 min</span>`, "the waiter's own estimate")
	assert.NotContains(t, body, "about about", "the estimate is printed as it is, not prefixed")

	t.Run("the history page reads on a phone", func(t *testing.T) {
		_, body := get(t, s.srv.URL+"/locks/"+lockNS+"/"+record.Name("production"), nil)
		assert.Contains(t, body, `<td class="nowrap">10m</td><td><span class="badge state-released">released</span></td>`,
			"a hold's length in one piece, how it ended said once")
		assert.Regexp(t, `<time datetime="\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ"><span class="nowrap">\d{4}-\d\d-\d\d</span> <span class="nowrap">\d\d:\d\d:\d\dZ</span></time>`, body,
			"times with a space a narrow column may wrap at, and no break at the date's hyphens")
	})
}

// rlo is the right-to-left override, which displays what follows it
// reversed: "main\u202egnp.exe" reads "mainexe.png".
const rlo = "\u202e"

// awayFromNow is a daily schedule twelve hours from now, so that a window
// on it is not in force while the test runs: a window in force would
// freeze the locks the test takes.
func awayFromNow() string {
	return fmt.Sprintf("0 %d * * *", (time.Now().UTC().Hour()+12)%24)
}

// TestPageShowsBidiControlsEscaped: text with a bidirectional override (an
// identity, a freeze's reason, a window's name) is shown quoted with
// escapes, as lockctl's CLI shows it, never raw; and a frozen lock nobody
// holds shows frozen, not free.
func TestPageShowsBidiControlsEscaped(t *testing.T) {
	s := start(t, func(cs *fake.Clientset, _ *lock.Client) {
		_, err := cs.CoreV1().ConfigMaps(lockNS).Create(t.Context(), &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: record.FreezeWindowsName, Namespace: lockNS},
			Data:       map[string]string{record.FreezeWindowsKey: "windows: [{name: \"night" + rlo + "ly\", schedule: \"" + awayFromNow() + "\", duration: 1h, reason: \"re" + rlo + "ason\"}]\n"},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
	})
	ctx := t.Context()
	_, _, err := s.locks.TryAcquire(ctx, holder("main"+rlo+"gnp.exe", "1"))
	require.NoError(t, err)
	_, err = s.locks.Freeze(ctx, record.FreezeRequest{
		Target: "staging", By: record.Identity{Owner: "sre", Repo: "ops", Branch: "main", Build: "1"},
		Reason: "hold" + rlo + "fix", Until: time.Now().Add(time.Hour),
	})
	require.NoError(t, err)
	s.await(t, "both locks and the window", func(snap *dashboard.Snapshot) bool { return len(snap.Locks) == 2 && len(snap.Windows) == 1 })

	_, body := get(t, s.srv.URL+"/", nil)
	assert.NotContains(t, body, rlo, "no raw override on the page")
	assert.Contains(t, body, `acme/web@&#34;main\u202egnp.exe&#34;#1`, "the identity, as lock.Identity.String shows it")
	assert.Contains(t, body, `&#34;hold\u202efix&#34;`, "the freeze's reason")
	assert.Contains(t, body, `&#34;night\u202ely&#34;`, "the window's name")
	assert.Contains(t, body, `&#34;re\u202eason&#34;`, "the window's reason")
	assert.Contains(t, body, `<article class="lock" data-state="frozen" data-namespace="locks" data-name="lockctl-lock-staging">`, "the frozen lock nobody holds")
	assert.Contains(t, body, `<span class="badge state-frozen">frozen</span>`)
	_, frozen, ok := strings.Cut(body, `data-name="lockctl-lock-staging"`)
	require.True(t, ok, "the frozen lock's card")
	frozen, _, _ = strings.Cut(frozen, "</article>")
	assert.NotContains(t, frozen, "Liveness", "a frozen lock nobody holds has no holder to be alive")
	assert.Contains(t, body, "<dt>Liveness</dt>", "a held one has")
}

// TestEventsSendTheLocksThatChanged: a page's stream sends the snapshot
// whole first, then each change as an update carrying the locks that
// changed or came and the keys of those gone, and no other lock; applied
// in turn, the updates make the snapshot GET /api/snapshot serves.
func TestEventsSendTheLocksThatChanged(t *testing.T) {
	holderOf := func(target, build string) lock.Request {
		r := holder("main", build)
		r.Target = target
		return r
	}
	const n = 10
	s := start(t, func(_ *fake.Clientset, locks *lock.Client) {
		for i := range n {
			_, _, err := locks.TryAcquire(t.Context(), holderOf(fmt.Sprintf("svc-%02d", i), fmt.Sprint(i)))
			require.NoError(t, err)
		}
	})
	s.await(t, "every lock", func(snap *dashboard.Snapshot) bool { return len(snap.Locks) == n })
	resp, err := http.Get(s.srv.URL + "/events")
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	r := bufio.NewReader(resp.Body)
	ev, data := readEvent(t, r)
	require.Equal(t, "snapshot", ev, "the stream starts with the whole")
	var cur *dashboard.Snapshot
	require.NoError(t, json.Unmarshal([]byte(data), &cur))
	require.Len(t, cur.Locks, n)

	// apply applies the next event to cur.
	apply := func() dashboard.Update {
		t.Helper()
		ev, data := readEvent(t, r)
		var u dashboard.Update
		require.NoError(t, json.Unmarshal([]byte(data), &u))
		if ev == "snapshot" {
			// Whole after a snapshot the stream skipped, or when half of
			// the locks changed or more (their liveness, every Refresh).
			if u.Seq == cur.Seq+1 {
				require.GreaterOrEqual(t, 2*changed(cur, &u.Snapshot), len(u.Locks), "whole only when not smaller")
			}
			cur = &u.Snapshot
			return dashboard.Update{}
		}
		require.Equal(t, "update", ev)
		require.Equal(t, cur.Seq, u.Base, "an update of the snapshot sent last")
		cur = applyUpdate(cur, &u)
		return u
	}
	// next applies events until the page shows n locks, and returns the
	// update that brought it there; ok is false when a whole snapshot did
	// (a stream that fell behind skips to the whole, which says nothing of
	// what an update holds).
	next := func(n int) (u dashboard.Update, ok bool) {
		t.Helper()
		for {
			u := apply()
			if len(cur.Locks) == n {
				return u, len(u.Locks) > 0 || len(u.Removed) > 0
			}
		}
	}
	_, _, err = s.locks.TryAcquire(t.Context(), holderOf("svc-new", "99"))
	require.NoError(t, err)
	if u, ok := next(n + 1); ok {
		require.Len(t, u.Locks, 1, "the lock that came, and no other")
		assert.Equal(t, "svc-new", u.Locks[0].Lock.Spec.Target)
		assert.Empty(t, u.Removed)
	}

	require.NoError(t, s.cs.CoreV1().ConfigMaps(lockNS).Delete(t.Context(), record.Name("svc-03"), metav1.DeleteOptions{}))
	if u, ok := next(n); ok {
		assert.Empty(t, u.Locks)
		assert.Equal(t, []dashboard.LockKey{{Namespace: lockNS, Name: record.Name("svc-03")}}, u.Removed, "the lock gone, by key")
	}

	for {
		_, body := get(t, s.srv.URL+"/api/snapshot", nil)
		var whole dashboard.Snapshot
		require.NoError(t, json.Unmarshal([]byte(body), &whole))
		for cur.Seq < whole.Seq {
			apply()
		}
		if cur.Seq == whole.Seq {
			assert.Equal(t, whole.Locks, cur.Locks, "the updates applied make the whole")
			return
		}
	}
}

// changed counts the locks of next that are not in prev as they are
// there, and those of prev gone.
func changed(prev, next *dashboard.Snapshot) int {
	was := map[dashboard.LockKey]string{}
	for _, e := range prev.Locks {
		b, _ := json.Marshal(e)
		was[dashboard.LockKey{Namespace: e.Lock.Namespace, Name: e.Lock.Name}] = string(b)
	}
	n := 0
	for _, e := range next.Locks {
		k := dashboard.LockKey{Namespace: e.Lock.Namespace, Name: e.Lock.Name}
		b, _ := json.Marshal(e)
		if old, ok := was[k]; !ok || old != string(b) {
			n++
		}
		delete(was, k)
	}
	return n + len(was)
}

// TestJobReasonReadsWordsFirst: a job's reason reads as people say it,
// the machine's word after it: "superseded by a newer push
// (AbortRequested)", on the index page and the job's.
func TestJobReasonReadsWordsFirst(t *testing.T) {
	s := start(t, func(cs *fake.Clientset, _ *lock.Client) {
		store := job.NewStore(kube.CoreV1(kubetest.Clients(cs)), jobNS, job.StoreOptions{})
		_, err := store.Create(t.Context(), &job.Job{
			TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
			ObjectMeta: metav1.ObjectMeta{Name: "deploy-1"},
			Spec: job.JobSpec{Job: "deploy", Type: job.Periodic,
				PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}},
		})
		require.NoError(t, err)
		_, err = store.Abort(t.Context(), "deploy-1", job.ReasonAbortRequested, "superseded by a newer push")
		require.NoError(t, err)
	})
	s.await(t, "the job", func(s *dashboard.Snapshot) bool { return len(s.Jobs) == 1 && s.Jobs[0].Reason != "" })
	want := `superseded by a newer push <span class="muted">(AbortRequested)</span>`
	_, body := get(t, s.srv.URL+"/", nil)
	assert.Contains(t, body, want, "the index page")
	_, body = get(t, s.srv.URL+"/jobs/deploy-1/logs", nil)
	assert.Contains(t, body, want, "the job's page")
}

// TestHolderLinkedToItsRun: a holder and a waiter whose claims name their
// CI run are links to it; a run URL that is not a web page's is no link.
func TestHolderLinkedToItsRun(t *testing.T) {
	run := "https://github.com/acme/web/actions/runs/1041/attempts/2"
	s := start(t, func(_ *fake.Clientset, locks *lock.Client) {
		h := holder("release-2.4", "41")
		h.RunURL = run
		_, _, err := locks.TryAcquire(t.Context(), h)
		require.NoError(t, err)
		w := holder("release-2.4", "42")
		w.RunURL = "javascript:alert(1)"
		_, _, err = locks.TryAcquire(t.Context(), w)
		require.NoError(t, err)
	})
	snap := s.await(t, "the holder and the waiter", func(s *dashboard.Snapshot) bool {
		return len(s.Locks) == 1 && len(s.Locks[0].Lock.Status.Waiters) == 1
	})
	assert.Equal(t, run, snap.Locks[0].Lock.Status.Holder.RunURL, "recorded with the claim")
	_, body := get(t, s.srv.URL+"/", nil)
	assert.Contains(t, body, `<dd class="holder"><a class="run" href="`+run+`" title="its CI run">acme/web@release-2.4#41</a></dd>`)
	assert.NotContains(t, body, "javascript:", "no link but to a web page")
}

// TestUnfrozenLockStaysOnThePage: a lock nobody ever held, frozen and then
// unfrozen, stays on the page, free, as a released lock does.
func TestUnfrozenLockStaysOnThePage(t *testing.T) {
	// NOTE: written before the hub starts: the fake clientset sets no
	// resourceVersion, by which the hub tells a lock changed.
	s := start(t, func(_ *fake.Clientset, locks *lock.Client) {
		_, err := locks.Freeze(t.Context(), record.FreezeRequest{Target: "production", By: record.Identity{Owner: "sre", Repo: "ops", Branch: "main", Build: "1"},
			Reason: "release", Until: time.Now().Add(time.Hour)})
		require.NoError(t, err)
		_, err = locks.Unfreeze(t.Context(), "production")
		require.NoError(t, err)
	})
	snap := s.await(t, "the lock, unfrozen", func(s *dashboard.Snapshot) bool { return len(s.Locks) == 1 })
	assert.Equal(t, lock.StateFree, snap.Locks[0].Lock.Status.State)
	assert.Nil(t, snap.Locks[0].Lock.Status.Freeze)
	_, body := get(t, s.srv.URL+"/", nil)
	assert.Contains(t, body, `data-state="free" data-namespace="locks" data-name="lockctl-lock-production"`, "still on the page, free")
}
