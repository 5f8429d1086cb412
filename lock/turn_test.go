package lock

import (
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlaceTTLGrowsBehindTheHead(t *testing.T) {
	for _, tc := range []struct {
		pos  int
		want time.Duration
	}{
		{1, time.Minute},
		{headWatchers, time.Minute},
		{headWatchers + 1, time.Minute + 10*time.Second},
		{headWatchers + 6, 2 * time.Minute},
		{200, time.Minute + time.Duration(200-headWatchers)*10*time.Second},
	} {
		assert.Equal(t, tc.want, placeTTL(time.Minute, tc.pos), "position %d", tc.pos)
	}
}

// queueOf returns a record held by h with n waiters w1…wn, queued in order.
func queueOf(n int) *Record {
	h := held(claim("h", "holder", "main", "1"), t0)
	var ws []Claim
	for i := range n {
		ws = append(ws, queued(local(claim(fmt.Sprintf("w%d", i+1), fmt.Sprintf("r%d", i+1), "main", "1")), t0.Add(time.Duration(i)*time.Millisecond)))
	}
	rec := record(h, ws...)
	rec.Policy = PolicyFIFO
	return rec
}

func TestDecideRenewsAPlaceByItsPosition(t *testing.T) {
	rec := queueOf(10)
	now := t0.Add(30 * time.Second)

	// The fifth waiter's place, a minute long from t0, has 30 s left: at
	// the head it would be renewed (less than two thirds left), behind it
	// the place lasts longer, so it is renewed for that longer time.
	me := rec.Waiters[4]
	d := Decide(rec, me, PolicyFIFO, now, true, waiterTTL)
	require.Equal(t, Waiting, d.Outcome)
	require.Equal(t, 5, d.Position)
	require.NotNil(t, d.Record, "renewed")
	assert.Equal(t, now.Add(placeTTL(waiterTTL, 5)), d.Record.Waiters[4].Expires.Time)
	assert.Equal(t, d.Record.Waiters[4].Expires.Time.Add(-placeTTL(waiterTTL, 5)/3), d.NextCheck, "renews at two thirds")

	// Renewed like that, it is not renewed again at the next decision.
	d2 := Decide(d.Record, me, PolicyFIFO, now.Add(time.Second), true, waiterTTL)
	assert.Nil(t, d2.Record, "nothing to write")

	// A newcomer behind ten waiters gets a place of position 11.
	d3 := Decide(rec, local(claim("new", "new", "main", "1")), PolicyFIFO, now, true, waiterTTL)
	require.Equal(t, 11, d3.Position)
	assert.Equal(t, now.Add(placeTTL(waiterTTL, 11)), d3.Record.Waiters[10].Expires.Time)
}

func TestHandOverCountsNoLongerThanAPlaceAtTheHead(t *testing.T) {
	rec := queueOf(1)
	deep := now2()
	rec.Waiters[0].Expires = microPtr(deep.Add(20 * time.Minute)) // renewed while deep in the queue
	rec.handOver(rec.Waiters[0], metav1.NewMicroTime(deep), deep)
	assert.Equal(t, deep.Add(defaultWaiterTTL), rec.Holder.Expires.Time)

	rec = queueOf(1)
	short := rec.Waiters[0].Expires.Time
	rec.handOver(rec.Waiters[0], metav1.NewMicroTime(t0), t0)
	assert.Equal(t, short, rec.Holder.Expires.Time, "a shorter expiry stays")
}

func now2() time.Time { return t0.Add(time.Minute) }

func TestTurnChange(t *testing.T) {
	lockWith := func(ann string) *corev1.ConfigMap {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
		if ann != "" {
			cm.Annotations[turnAnnotation] = ann
		}
		return cm
	}
	short, long := queueOf(headWatchers), queueOf(headWatchers+2)
	key := turnOf(long).key()
	assert.Equal(t, "h/w1,w2,w3", key)

	for _, tc := range []struct {
		name    string
		was     *corev1.ConfigMap
		rec     *Record
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
	lockCM := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: Name("staging"), UID: "u1"}}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: TurnName("staging")}}
	tu.encode(cm, "staging", lockCM)
	got, ok := readTurn(cm)
	require.True(t, ok)
	assert.Equal(t, tu, got)
	assert.True(t, got.names("w3"))
	assert.True(t, got.names("h"))
	assert.False(t, got.names("w4"))
	assert.False(t, got.names(""))
	assert.False(t, isLock(cm), "a turn object is never read as a lock")
	require.Len(t, cm.OwnerReferences, 1, "owned by the lock, so it goes with it")
	assert.Equal(t, "lockctl-turn-staging", TurnName("staging"))
	long := "a-namespace-name-that-is-much-longer-than-forty-characters-x"
	assert.Equal(t, len(Name(long)), len(TurnName(long)))

	_, ok = readTurn(&corev1.ConfigMap{})
	assert.False(t, ok, "not a turn object")
}

func TestMovedFollowsTheTurn(t *testing.T) {
	rec := queueOf(8)
	me := rec.Waiters[7]
	last := &Progress{Holder: rec.Holder, HolderAlive: true, Position: 8, Ahead: rec.Waiters[:7],
		Wait: &EstimateInput{Ahead: 7}}
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
