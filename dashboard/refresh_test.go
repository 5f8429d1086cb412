package dashboard_test

import (
	"bufio"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/dashboard"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// startAt starts a hub whose clock, and the locks' (seed writes with
// locks), is clk: time moves only when the test steps it.
func startAt(t *testing.T, clk *testingclock.FakeClock, seed func(locks *lock.Client)) *started {
	t.Helper()
	noOptions := func(*fake.Clientset) dashboard.Options { return dashboard.Options{} }
	return startOn(t, clk, noOptions, func(_ *fake.Clientset, locks *lock.Client) { seed(locks) })
}

// event is one server-sent event of a page's stream.
type event struct{ name, data string }

// stream opens a page's stream and reads its events in the background,
// the clock's included.
func stream(t *testing.T, base string) <-chan event {
	t.Helper()
	resp, err := http.Get(base + "/events")
	require.NoError(t, err)
	t.Cleanup(func() { _ = resp.Body.Close() })
	out := make(chan event, 64)
	go func() {
		r := bufio.NewReader(resp.Body)
		for {
			var ev event
			for {
				line, err := r.ReadString('\n')
				if err != nil {
					close(out)
					return
				}
				line = strings.TrimRight(line, "\n")
				if line == "" && ev.name != "" {
					break
				}
				if name, ok := strings.CutPrefix(line, "event: "); ok {
					ev.name = name
				} else if data, ok := strings.CutPrefix(line, "data: "); ok {
					ev.data += data
				}
			}
			out <- ev
		}
	}()
	return out
}

// next returns the next event of events named one of names, skipping
// the others.
func next(t *testing.T, events <-chan event, names ...string) event {
	t.Helper()
	timeout := time.After(10 * time.Second)
	for {
		select {
		case ev, ok := <-events:
			require.True(t, ok, "the stream ended")
			for _, n := range names {
				if ev.name == n {
					return ev
				}
			}
		case <-timeout:
			t.Fatalf("no event %v", names)
		}
	}
}

// TestRefreshSendsNoUnchangedLock: the entries carry the times their
// words count from, not the words, so the periodic refresh sends no lock
// whose state did not change; the page words liveness as status does at
// the moment it is served; a lock expiring is sent at its expiry, alone.
func TestRefreshSendsNoUnchangedLock(t *testing.T) {
	clk := testingclock.NewFakeClock(time.Now().UTC().Truncate(time.Second))
	t0 := clk.Now()
	req := func(target, build string, ttl time.Duration) lock.Request {
		r := holder("main", build)
		r.Target, r.TTL, r.ClaimID = target, ttl, target+"-"+build
		return r
	}
	s := startAt(t, clk, func(locks *lock.Client) {
		ctx := t.Context()
		for _, r := range []lock.Request{
			req("alpha", "1", time.Hour),
			req("beta", "2", time.Minute),
			req("gamma", "3", time.Hour),
			req("gamma", "4", time.Hour), // waits, its priority ageing
		} {
			_, _, err := locks.TryAcquire(ctx, r)
			require.NoError(t, err)
		}
		_, err := locks.Freeze(ctx, record.FreezeRequest{Target: "delta", By: record.Identity{Owner: "sre", Repo: "ops", Branch: "main", Build: "1"},
			Reason: "release", Until: t0.Add(2 * time.Hour)})
		require.NoError(t, err)
	})
	s.await(t, "the four locks", func(snap *dashboard.Snapshot) bool { return len(snap.Locks) == 4 })
	events := stream(t, s.srv.URL)
	var first dashboard.Snapshot
	require.NoError(t, json.Unmarshal([]byte(next(t, events, "snapshot").data), &first))
	require.Len(t, first.Locks, 4)
	alpha := first.Locks[0]
	require.Equal(t, "alpha", alpha.Lock.Spec.Target)
	require.NotNil(t, alpha.Expires, "the entry carries the holder's expiry")
	assert.True(t, alpha.Expires.Equal(alpha.Lock.Status.Holder.Expires))
	assert.Empty(t, alpha.Lock.Status.Liveness, "and no words that change every second")
	var clock struct {
		Now time.Time `json:"now"`
	}
	require.NoError(t, json.Unmarshal([]byte(next(t, events, "clock").data), &clock), "the server's time after the first snapshot")
	assert.True(t, clock.Now.Equal(t0), "on the clock locks are judged on")

	// statusSays is the liveness lockctl status shows for target now.
	statusSays := func(target string) string {
		l, err := lock.New(kubetest.CoreV1(s.cs.CoreV1()), kubetest.CoreV1(s.cs.CoreV1()), lockNS, clk, lock.Options{}).Get(t.Context(), target)
		require.NoError(t, err)
		return l.Status.Liveness
	}

	awaitWaiters(t, clk)
	clk.Step(dashboard.DefaultRefresh)
	ev := next(t, events, "update", "snapshot")
	require.Equal(t, "update", ev.name, "a refresh with nothing changed is an update")
	assert.Contains(t, ev.data, `"locks":[]`, "with no lock")
	assert.Contains(t, ev.data, `"removed":[]`)
	var u dashboard.Update
	require.NoError(t, json.Unmarshal([]byte(ev.data), &u))
	assert.Equal(t, first.Seq, u.Base)
	assert.True(t, u.Now.Time.Equal(t0.Add(dashboard.DefaultRefresh)), "the server's time, for the page's clock")
	t.Logf("a refresh with nothing changed: %d bytes", len(ev.data))

	_, body := get(t, s.srv.URL+"/", nil)
	want := statusSays("alpha")
	require.Equal(t, "expires in 59m45s", want)
	assert.Contains(t, body, `">`+want+`</dd>`, "the page words the liveness as status does, at the moment it is served")
	assert.Contains(t, body, `data-expires="`+alpha.Expires.UTC().Format("2006-01-02T15:04:05.000Z07:00")+`"`, "and says where the words count from")

	// beta expires at t0+1m: its entry alone is sent, stale.
	awaitWaiters(t, clk)
	clk.Step(time.Minute - dashboard.DefaultRefresh + time.Second)
	for {
		ev := next(t, events, "update", "snapshot")
		require.Equal(t, "update", ev.name)
		var u dashboard.Update
		require.NoError(t, json.Unmarshal([]byte(ev.data), &u))
		assert.Empty(t, u.Removed)
		if len(u.Locks) == 0 {
			continue
		}
		require.Len(t, u.Locks, 1, "the lock that expired, and no other")
		b := u.Locks[0]
		assert.Equal(t, "beta", b.Lock.Spec.Target)
		assert.Equal(t, lock.StateStale, b.Lock.Status.State)
		assert.False(t, b.Lock.Status.Alive)
		_, body := get(t, s.srv.URL+"/", nil)
		assert.Contains(t, body, `">`+statusSays("beta")+`</dd>`, "expired, worded as status does")
		break
	}
}

// awaitWaiters waits until the hub waits on clk's timers (the refresh's,
// and its due time's), so that a step fires them.
func awaitWaiters(t *testing.T, clk *testingclock.FakeClock) {
	t.Helper()
	require.Eventually(t, clk.HasWaiters, 10*time.Second, 5*time.Millisecond)
	// NOTE: the due time's timer is made just after the snapshot is
	// published; a step before it is made only delays it, by minDueGap.
	time.Sleep(50 * time.Millisecond)
}

// TestIndexServesTheFirstCards: the index page renders the first
// FirstCards locks' cards, and the page's script the others; ?all renders
// every card, for a browser without script.
func TestIndexServesTheFirstCards(t *testing.T) {
	n := dashboard.FirstCards + 5
	s := start(t, func(_ *fake.Clientset, locks *lock.Client) {
		for i := range n {
			r := holder("main", fmt.Sprint(i))
			r.Target = fmt.Sprintf("svc-%03d", i)
			_, _, err := locks.TryAcquire(t.Context(), r)
			require.NoError(t, err)
		}
	})
	s.await(t, "every lock", func(snap *dashboard.Snapshot) bool { return len(snap.Locks) == n })
	_, body := get(t, s.srv.URL+"/", nil)
	assert.Equal(t, dashboard.FirstCards, strings.Count(body, `<article class="lock"`), "the first cards")
	assert.Contains(t, body, `>svc-000</a>`)
	assert.NotContains(t, body, fmt.Sprintf(`>svc-%03d</a>`, n-1), "the last lock is the script's to make")
	assert.Contains(t, body, `<noscript><p class="empty">And 5 more: <a href="/?all">every lock on one page</a>.</p></noscript>`)
	_, all := get(t, s.srv.URL+"/?all", nil)
	assert.Equal(t, n, strings.Count(all, `<article class="lock"`), "every card")
	assert.NotContains(t, all, "<noscript>")
}
