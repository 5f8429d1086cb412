package notify_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/notify"
	"github.com/lockctl/lockctl/stats"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// receiver is a webhook that records the bodies it accepts, and answers
// 500 to the first request.
type receiver struct {
	mu       sync.Mutex
	requests int
	events   []map[string]any
	types    []string
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.requests++
	if r.requests == 1 {
		http.Error(w, "not yet", http.StatusInternalServerError)
		return
	}
	var e map[string]any
	if err := json.Unmarshal(b, &e); err != nil || req.Header.Get("Content-Type") != "application/cloudevents+json; charset=utf-8" {
		http.Error(w, "not a CloudEvent", http.StatusBadRequest)
		return
	}
	e["raw"] = string(b)
	r.events = append(r.events, e)
	r.types = append(r.types, e["type"].(string))
}

func (r *receiver) snapshot() (int, []map[string]any, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests, append([]map[string]any(nil), r.events...), append([]string(nil), r.types...)
}

// TestIntegrationNotifyOncePerTransitionFromTwoReplicas: two replicas,
// each watching the locks of the namespace, notify one webhook of a
// lock's changes on the real API server: every transition (a turn, a
// release, a hand-over, a break-glass grant) reaches the webhook exactly
// once between them, the first call answered 500 is retried, and no body
// holds the webhook's secret or a fencing token.
func TestIntegrationNotifyOncePerTransitionFromTwoReplicas(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	recv := &receiver{}
	srv := httptest.NewServer(recv)
	t.Cleanup(srv.Close)
	const secret = "s3cr3t-token"
	url := srv.URL + "/hooks/" + secret + "?key=" + secret

	var mu sync.Mutex
	handled := map[string]map[string]notify.Outcome{} // replica → event ID → outcome
	ctx, cancel := context.WithCancel(t.Context())
	var wg sync.WaitGroup
	t.Cleanup(func() { cancel(); wg.Wait() })
	for _, replica := range []string{"a", "b"} {
		handled[replica] = map[string]notify.Outcome{}
		n := notify.New(env.Kube.CoreV1(), ns, notify.Options{
			URL: url, Replica: replica, Backoff: 50 * time.Millisecond, Clock: clock.RealClock{},
			Handled: func(e notify.Event, o notify.Outcome) {
				mu.Lock()
				defer mu.Unlock()
				handled[replica][e.ID] = o
			},
		})
		synced := make(chan struct{})
		wg.Add(2)
		go func() {
			defer wg.Done()
			stats.WatchLocks(ctx, env.Kube.CoreV1(), ns, nil, func() { close(synced) }, n)
		}()
		go func() { defer wg.Done(); n.Run(ctx) }()
		<-synced
	}

	l := lock.New(env.Kube.CoreV1(), env.Kube.CoreV1(), ns, clock.RealClock{}, lock.Options{})
	web := lock.Request{Target: "staging", Identity: clitest.Identity("web", 1)}
	api := lock.Request{Target: "staging", Identity: clitest.Identity("api", 2)}
	held, err := l.Acquire(t.Context(), web) // turn of web
	require.NoError(t, err)
	res := make(chan error, 1)
	waiting := make(chan struct{}, 1)
	api.Callbacks.OnProgress = func(p lock.Progress) {
		if p.Position == 1 {
			select {
			case waiting <- struct{}{}:
			default:
			}
		}
	}
	go func() { _, err := l.Acquire(t.Context(), api); res <- err }()
	<-waiting
	_, err = l.ReleaseHeld(t.Context(), held, lock.ReleaseOptions{}) // release of web, turn of api
	require.NoError(t, err)
	require.NoError(t, <-res)
	_, err = l.Release(t.Context(), "staging", api.Identity, lock.ReleaseOptions{}) // release of api
	require.NoError(t, err)
	_, err = l.GrantBreakGlass(t.Context(), lock.BreakGlassRequest{Target: "staging", User: "carol", By: clitest.Identity("ops", 3), Reason: "roll back", For: time.Minute})
	require.NoError(t, err)

	want := []string{"dev.lockctl.lock.turn", "dev.lockctl.lock.release", "dev.lockctl.lock.turn", "dev.lockctl.lock.release", "dev.lockctl.lock.break-glass"}
	// Both replicas are done with all five: nothing more can arrive.
	require.Eventually(t, func() bool {
		mu.Lock()
		defer mu.Unlock()
		return len(handled["a"]) == len(want) && len(handled["b"]) == len(want)
	}, 2*time.Minute, 20*time.Millisecond, "both replicas handle every event")
	requests, events, types := recv.snapshot()
	assert.ElementsMatch(t, want, types, "one event per transition")
	assert.Equal(t, len(want)+1, requests, "the first call, answered 500, was retried")
	ids := map[string]bool{}
	for _, e := range events {
		id, _ := e["id"].(string)
		assert.False(t, ids[id], "event %s delivered twice", id)
		ids[id] = true
		assert.Equal(t, "1.0", e["specversion"])
		assert.Equal(t, "lockctl/"+ns, e["source"])
		raw := e["raw"].(string)
		assert.NotContains(t, raw, secret, "nothing of the webhook's URL in the body")
		assert.NotContains(t, strings.ToLower(raw), "token", "no fencing token in the body")
	}
	mu.Lock()
	defer mu.Unlock()
	for id := range ids {
		outcomes := []notify.Outcome{handled["a"][id], handled["b"][id]}
		assert.ElementsMatch(t, []notify.Outcome{notify.Delivered, notify.Elsewhere}, outcomes, "event %s: one replica delivered it, the other found it marked", id)
	}
}
