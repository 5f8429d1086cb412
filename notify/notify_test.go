package notify

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/lock/record"
)

var t0 = time.Date(2026, 12, 7, 10, 0, 0, 0, time.UTC)

func TestDecideMark(t *testing.T) {
	t.Parallel()
	old := "b " + t0.Add(-25*time.Hour).Format(time.RFC3339)
	mine, out := decideMark(map[string]string{"x": "b " + t0.Format(time.RFC3339), "old": old}, "y", "a", t0)
	assert.True(t, mine)
	assert.Equal(t, map[string]string{"x": "b " + t0.Format(time.RFC3339), "y": "a " + t0.Format(time.RFC3339)}, out, "marked, a mark past a day dropped")
	mine, out = decideMark(map[string]string{"y": "b " + t0.Format(time.RFC3339)}, "y", "a", t0)
	assert.False(t, mine, "marked by another replica")
	assert.Nil(t, out)
}

func microPtr(t time.Time) *metav1.MicroTime {
	m := metav1.NewMicroTime(t)
	return &m
}

func lockCM(t *testing.T, rec *record.Record) *corev1.ConfigMap {
	t.Helper()
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: record.Name(rec.Target), Namespace: "ci",
		Labels:      map[string]string{record.ManagedByLabel: record.ManagedByValue, record.KindLabel: record.KindValue},
		Annotations: map[string]string{record.RecordAnnotation: string(raw)},
	}}
}

// TestNotifierBodiesAndChecks: the events of a lock's changes, a hold past
// its p90 and a freeze window to come, in both formats, given up on a 4xx.
func TestNotifierBodiesAndChecks(t *testing.T) {
	t.Parallel()
	var mu sync.Mutex
	var bodies []string
	var types []string
	status := http.StatusOK
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		defer mu.Unlock()
		bodies = append(bodies, string(b))
		types = append(types, r.Header.Get("Content-Type"))
		w.WriteHeader(status)
	}))
	t.Cleanup(srv.Close)
	clk := testingclock.NewFakeClock(t0)
	parsed, err := record.ParseFreezeWindows([]byte("windows:\n- {name: nightly, schedule: '10 10 * * *', duration: 1h, reason: batch}\n"))
	require.NoError(t, err)
	handled := make(chan Outcome, 10)
	n := New(kubetest.CoreV1(fake.NewClientset().CoreV1()), "ci", Options{
		URL: srv.URL, Format: FormatSlack, Clock: clk, Replica: "a",
		Windows: func(context.Context) ([]record.FreezeWindow, error) { return parsed, nil },
		Handled: func(_ Event, o Outcome) { handled <- o },
	})
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "7"}
	rec := &record.Record{Target: "staging", Policy: record.PolicyNewest}
	for i := range 3 {
		start := t0.Add(time.Duration(i-5) * time.Hour)
		rec.History = append(rec.History, record.HistoryEntry{Identity: id, Since: metav1.NewMicroTime(start), Until: metav1.NewMicroTime(start.Add(10 * time.Minute)), Ended: record.EndReleased})
	}
	rec.Holder = record.Claim{Identity: id, ClaimID: "h", Since: metav1.NewMicroTime(t0.Add(-20 * time.Minute)), Queued: microPtr(t0.Add(-22 * time.Minute)), Expires: microPtr(t0.Add(time.Hour))}
	before := &record.Record{Target: "staging", Policy: record.PolicyNewest, History: rec.History[:2],
		Holder: record.Claim{Identity: id, ClaimID: "h0", Since: rec.History[2].Since, Expires: microPtr(t0)}}
	n.ObserveLock(lockCM(t, before), true)
	n.ObserveLock(lockCM(t, rec), false)

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	go func() { defer close(done); n.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	for range 4 { // the release of the third hold, the turn, overdue, the freeze
		assert.Equal(t, Delivered, <-handled)
	}
	mu.Lock()
	got := append([]string(nil), bodies...)
	assert.Equal(t, "application/json", types[0])
	mu.Unlock()
	assert.ElementsMatch(t, []string{
		`{"text":"acme/web@main#7 released the lock of staging after 10m (released)"}`,
		`{"text":"acme/web@main#7 holds the lock of staging after waiting 2m"}`,
		`{"text":"acme/web@main#7 has held the lock of staging for 20m, past its usual 10m (p90 of the last 3 holds)"}`,
		`{"text":"freeze window nightly freezes every lock in 10m, until 2026-12-07T11:10:00Z: batch"}`,
	}, got)

	// A 4xx is not retried.
	mu.Lock()
	status = http.StatusBadRequest
	mu.Unlock()
	rec.BreakGlass = []record.GrantEntry{{User: "carol", At: metav1.NewMicroTime(t0), Until: metav1.NewMicroTime(t0.Add(time.Minute))}}
	n.ObserveLock(lockCM(t, rec), false)
	assert.Equal(t, Failed, <-handled)
	mu.Lock()
	assert.Len(t, bodies, 5, "one call, not retried")
	mu.Unlock()
}

func TestCloudEventBody(t *testing.T) {
	t.Parallel()
	n := New(kubetest.CoreV1(fake.NewClientset().CoreV1()), "ci", Options{URL: "http://x"})
	b, ctype, err := n.body(Event{ID: "i", Kind: KindTurn, Namespace: "ci", Target: "staging", Time: t0, Data: map[string]any{"target": "staging"}})
	require.NoError(t, err)
	assert.Equal(t, "application/cloudevents+json; charset=utf-8", ctype)
	assert.JSONEq(t, `{"specversion":"1.0","id":"i","source":"lockctl/ci","type":"dev.lockctl.lock.turn","subject":"staging",
		"time":"2026-12-07T10:00:00Z","datacontenttype":"application/json","data":{"target":"staging"}}`, string(b))
}
