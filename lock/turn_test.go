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

// queueOf returns a record held by h with n waiters w1…wn, queued in order.
func queueOf(n int) *record.Record {
	h := held(claim("h", "holder", "main", "1"), t0)
	var ws []record.Claim
	for i := range n {
		ws = append(ws, queued(local(claim(fmt.Sprintf("w%d", i+1), fmt.Sprintf("r%d", i+1), "main", "1")), t0.Add(time.Duration(i)*time.Millisecond)))
	}
	rec := recordOf(h, ws...)
	rec.Policy = record.PolicyFIFO
	return rec
}

func TestTurnChange(t *testing.T) {
	lockWith := func(ann string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		if ann != "" {
			cm.Annotations[turnAnnotation] = ann
		}
		return cm
	}
	short, long := queueOf(record.HeadWatchers), queueOf(record.HeadWatchers+2)
	key := turnOf(long).key()
	assert.Equal(t, "h/w1,w2,w3", key)

	for _, tc := range []struct {
		name    string
		was     *corev1.ConfigMap
		rec     *record.Record
		wantAnn string
		publish bool
	}{
		{"a short queue publishes nothing", lockWith(""), short, "", false},
		{"a new lock with a short queue", nil, short, "", false},
		{"the queue grows past the head", lockWith(""), long, key, true},
		{"the head is as published", lockWith(key), long, key, false},
		{"an older writer moved the head", lockWith("h0/h,w1,w2"), long, key, true},
		{"the queue shrinks to the head: a last publication", lockWith(key), short, "", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ann, publish := turnChange(tc.was, tc.rec)
			assert.Equal(t, tc.wantAnn, ann)
			assert.Equal(t, tc.publish, publish)
		})
	}
}

func TestTurnObjectRoundTrip(t *testing.T) {
	tu := turnOf(queueOf(5))
	tu.record = "42"
	lockCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: record.Name("staging"), UID: "u1"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: record.TurnName("staging")}}
	tu.encode(cm, "staging", lockCM)
	got, ok := readTurn(cm)
	require.True(t, ok)
	assert.Equal(t, tu, got)
	assert.True(t, got.names("w3"))
	assert.True(t, got.names("h"))
	assert.False(t, got.names("w4"))
	assert.False(t, got.names(""))
	assert.False(t, record.IsLock(cm), "a turn object is never read as a lock")
	require.Len(t, cm.OwnerReferences, 1, "owned by the lock, so it goes with it")
	assert.Equal(t, "lockctl-turn-staging", record.TurnName("staging"))
	long := "a-namespace-name-that-is-much-longer-than-forty-characters-x"
	assert.Equal(t, len(record.Name(long)), len(record.TurnName(long)))

	_, ok = readTurn(&corev1.ConfigMap{})
	assert.False(t, ok, "not a turn object")
}

func TestMovedFollowsTheTurn(t *testing.T) {
	rec := queueOf(8)
	me := rec.Waiters[7]
	last := &Progress{Holder: rec.Holder, HolderAlive: true, Position: 8, Ahead: rec.Waiters[:7],
		Wait: &record.EstimateInput{Ahead: 7}}
	now := t0.Add(time.Minute)

	// Two hand-overs later: w2 holds, w3 heads the queue.
	p := moved(last, turn{holder: "w2", head: []string{"w3", "w4", "w5"}}, now)
	require.NotNil(t, p)
	assert.Equal(t, 6, p.Position)
	assert.Equal(t, "w2", p.Holder.ClaimID)
	assert.Equal(t, []string{"w3", "w4", "w5", "w6", "w7"}, sessions(p.Ahead))
	assert.Equal(t, 5, p.Wait.Ahead)
	assert.Equal(t, now, *p.Wait.HolderSince)
	assert.Equal(t, 8, last.Position, "last is left as it was")
	assert.NotEqual(t, me.ClaimID, p.Holder.ClaimID)

	assert.Nil(t, moved(last, turn{holder: "h", head: []string{"w1", "w2", "w3"}}, now), "nothing moved")
	assert.Nil(t, moved(last, turn{holder: "h", head: []string{"other"}}, now), "a head it does not know")
	assert.Nil(t, moved(nil, turn{head: []string{"w3"}}, now))
}
