package lock

import (
	"fmt"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestClientDecodesAVersionOnce: a waiter deciding twice on one version of
// a lock (a hand-over to it, then its turn) decodes it once, and each
// caller gets a record of its own to change.
func TestClientDecodesAVersionOnce(t *testing.T) {
	c := &Client{}
	cm := contendedRecord(t)
	cm.ResourceVersion = "7"
	a, err := c.decode(cm, "round")
	require.NoError(t, err)
	b, err := c.decode(cm, "round")
	require.NoError(t, err)
	assert.Equal(t, a, b)
	assert.Same(t, c.lastDecoded.Load().cm, cm)
	a.Waiters[0].ClaimID = "changed"
	a.Holder.Expires.Time = time.Time{}
	c2, err := c.decode(cm, "round")
	require.NoError(t, err)
	assert.Equal(t, b, c2, "a change to one caller's record reaches no other")

	next := cm.DeepCopy()
	next.ResourceVersion = "8"
	next.Annotations[record.RecordAnnotation] = lockConfigMapOf(t, &record.Record{Target: "round", Policy: record.PolicyFIFO, Updated: c2.Updated, Holder: c2.Holder}).Annotations[record.RecordAnnotation]
	d, err := c.decode(next, "round")
	require.NoError(t, err)
	assert.Empty(t, d.Waiters, "another version is decoded")
}

func contendedRecord(tb testing.TB) *corev1.ConfigMap {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	ts := metav1.NewMicroTime(now)
	rec := &record.Record{Target: "round", Policy: record.PolicyFIFO, Updated: ts}
	rec.Holder = held(claim("s-holder", "repo-00", "main", "1"), now)
	for i := 1; i < 20; i++ {
		rec.Waiters = append(rec.Waiters, queued(claim(fmt.Sprintf("s-%02d", i), fmt.Sprintf("repo-%02d", i), "main", "1"), now))
	}
	for i := range record.MaxHistory {
		rec.History = append(rec.History, record.HistoryEntry{Identity: record.Identity{Owner: "bench", Repo: fmt.Sprintf("repo-%02d", i), Branch: "main", Build: "1"}, Since: ts, Until: ts, Ended: record.EndReleased})
	}
	return lockConfigMapOf(tb, rec)
}

func lockConfigMapOf(tb testing.TB, rec *record.Record) *corev1.ConfigMap {
	cm := lockConfigMap("")
	require.NoError(tb, record.Encode(cm, rec))
	return cm
}
