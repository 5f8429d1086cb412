package lock

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestFreezeWindowNext(t *testing.T) {
	ws, err := record.ParseFreezeWindows([]byte(`
windows:
- {name: friday, schedule: "0 16 * * 5", duration: 64h, reason: weekend}
`))
	require.NoError(t, err)
	w := &ws[0]
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return tm
	}
	for _, tt := range []struct {
		name       string
		now        string
		start, end string
	}{
		{name: "before: the next one", now: "2026-12-02T10:00:00Z", start: "2026-12-04T16:00:00Z", end: "2026-12-07T08:00:00Z"},
		{name: "during: the one in force", now: "2026-12-05T10:00:00Z", start: "2026-12-04T16:00:00Z", end: "2026-12-07T08:00:00Z"},
		{name: "right after: the next week's", now: "2026-12-07T08:00:00Z", start: "2026-12-11T16:00:00Z", end: "2026-12-14T08:00:00Z"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			f := w.Next(at(tt.now))
			require.NotNil(t, f, "at %s", tt.now)
			assert.Equal(t, at(tt.start), f.Since.UTC(), "start at %s", tt.now)
			assert.Equal(t, at(tt.end), f.Until.UTC(), "end at %s", tt.now)
			assert.Equal(t, "weekend", f.Reason)
		})
	}
	assert.Nil(t, (&record.FreezeWindow{Name: "unparsed"}).Next(time.Now()), "a window not parsed has no schedule")
}

func TestViewOfAndHistoryOf(t *testing.T) {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	rec := &record.Record{Target: "staging", Policy: record.PolicyNewest, Updated: metav1.NewMicroTime(now)}
	rec.Free(metav1.NewMicroTime(now.Add(-time.Minute)))
	rec.History = []record.HistoryEntry{
		{Identity: record.Identity{Owner: "a", Repo: "r", Branch: "main", Build: "1"}, Ended: record.EndHandedOver, By: "a/r@main#2"},
		{Identity: record.Identity{Owner: "a", Repo: "r", Branch: "main", Build: "2"}, Ended: record.EndReleased},
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: record.Name("staging"), Namespace: "locks"}}
	require.NoError(t, record.Encode(cm, rec))
	c, _ := newTestClient(t, now, onlyVerbs(t))

	_, show := c.ViewOf(t.Context(), cm)
	assert.False(t, show, "a free lock kept for its history is not listed")
	h, err := HistoryOf(cm)
	require.NoError(t, err)
	assert.Equal(t, "staging", h.Target)
	assert.Nil(t, h.Holder, "free")
	require.Len(t, h.Entries, 2)
	assert.Equal(t, "2", h.Entries[0].Build, "newest first")

	_, show = c.ViewOf(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other"}})
	assert.False(t, show, "a ConfigMap that is no lock")

	rec.Holder = record.Claim{Identity: record.Identity{Owner: "a", Repo: "r", Branch: "main", Build: "3"}, ClaimID: "s",
		Since: metav1.NewMicroTime(now), Expires: microPtr(now.Add(time.Hour))}
	require.NoError(t, record.Encode(cm, rec))
	l, show := c.ViewOf(t.Context(), cm)
	require.True(t, show)
	assert.Equal(t, StateHeld, l.Status.State)
	assert.Equal(t, "expires in 1h0m0s", l.Status.Liveness)
}
