package record

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestPlaceTTLGrowsBehindTheHead(t *testing.T) {
	for _, tc := range []struct {
		pos  int
		want time.Duration
	}{
		{1, time.Minute},
		{HeadWatchers, time.Minute},
		{HeadWatchers + 1, time.Minute + 10*time.Second},
		{HeadWatchers + 6, 2 * time.Minute},
		{200, time.Minute + time.Duration(200-HeadWatchers)*10*time.Second},
	} {
		assert.Equal(t, tc.want, placeTTL(time.Minute, tc.pos), "position %d", tc.pos)
	}
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
	rec.HandOver(rec.Waiters[0], metav1.NewMicroTime(deep), deep)
	assert.Equal(t, deep.Add(DefaultWaiterTTL), rec.Holder.Expires.Time)

	rec = queueOf(1)
	short := rec.Waiters[0].Expires.Time
	rec.HandOver(rec.Waiters[0], metav1.NewMicroTime(t0), t0)
	assert.Equal(t, short, rec.Holder.Expires.Time, "a shorter expiry stays")
}
