package lock

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestDecideRecordsTheWait: a claim's wait begins when it joins the queue
// and is carried to its hold (through a hand-over and through a take-over
// of a stale holder alike) and into its history entry; a contender that
// takes a free lock waited 0; a hold put in place by a lockctl before
// record version 1.9 (no queued) has no known wait.
func TestDecideRecordsTheWait(t *testing.T) {
	t.Parallel()
	holder := held(claim("h", "web", "main", "1"), t0)
	joined := t0.Add(time.Minute)
	me := claim("me", "api", "main", "7")

	// Joining the queue stamps the wait's start.
	d := record.Decide(recordOf(holder), me, record.PolicyNewest, joined, true, waiterTTL)
	require.Equal(t, record.Waiting, d.Outcome)
	w := d.Record.Waiters[0]
	require.NotNil(t, w.Queued, "a waiter knows when it joined")
	assert.Equal(t, joined, w.Queued.Time)

	tests := []struct {
		name string
		take func(t *testing.T, rec *record.Record, at time.Time) *record.Record
	}{
		{"hand-over by a release", func(t *testing.T, rec *record.Record, at time.Time) *record.Record {
			res, _, err := decideRelease("staging", rec, "1", holder.Identity, ReleaseOptions{}, nil, at)
			require.NoError(t, err)
			require.NotNil(t, res.HandedTo)
			return rec
		}},
		{"take-over of a stale holder", func(t *testing.T, rec *record.Record, at time.Time) *record.Record {
			d := record.Decide(rec, me, record.PolicyNewest, at, false, waiterTTL)
			require.Equal(t, record.Acquired, d.Outcome)
			return d.Record
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			took := joined.Add(4 * time.Minute)
			rec := d.Record.DeepCopy()
			rec.Waiters[0].Expires = microPtr(took.Add(time.Minute)) // renewed while it waits
			rec = tt.take(t, rec, took)
			require.Equal(t, "me", rec.Holder.ClaimID)
			require.NotNil(t, rec.Holder.Queued, "the holder keeps when it joined")
			assert.Equal(t, joined, rec.Holder.Queued.Time)

			// Its hold ends: the entry says how long it waited and held.
			res, _, err := decideRelease("staging", rec, "2", me.Identity, ReleaseOptions{}, nil, took.Add(10*time.Minute))
			require.NoError(t, err)
			require.NotNil(t, res.Previous)
			e := rec.History[len(rec.History)-1]
			wait, ok := e.Wait()
			assert.True(t, ok)
			assert.Equal(t, 4*time.Minute, wait.Round(time.Second))
			assert.Equal(t, 10*time.Minute, e.Held())
		})
	}

	t.Run("a free lock is taken without waiting", func(t *testing.T) {
		t.Parallel()
		d := record.Decide(nil, me, record.PolicyNewest, joined, true, waiterTTL)
		rec := d.Record
		_, _, err := decideRelease("staging", rec, "1", me.Identity, ReleaseOptions{}, nil, joined.Add(time.Minute))
		require.NoError(t, err)
		wait, ok := rec.History[0].Wait()
		assert.True(t, ok)
		assert.Zero(t, wait)
	})

	t.Run("an older writer's hold has no known wait", func(t *testing.T) {
		t.Parallel()
		e := record.HistoryEntry{Since: metav1.NewMicroTime(t0), Until: metav1.NewMicroTime(t0.Add(time.Minute))}
		_, ok := e.Wait()
		assert.False(t, ok)
	})

	t.Run("a hold asked to stop by a newer build is superseded", func(t *testing.T) {
		t.Parallel()
		h := holder
		h.CancelRequest = &record.CancelRequest{Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "2"}, ClaimID: "n"}
		rec := recordOf(h)
		_, _, err := decideRelease("staging", rec, "1", holder.Identity, ReleaseOptions{}, nil, joined)
		require.NoError(t, err)
		assert.Equal(t, "acme/web@main#2", rec.History[0].SupersededBy)
	})
}

// TestQueueRoomDropsOldHistoryFirst: a contender whose joining would make
// the record larger than MaxQueueBytes is queued when dropping the
// history's oldest holds beyond KeptHistory makes room, and refused only
// when the newest KeptHistory would have to go too.
func TestQueueRoomDropsOldHistoryFirst(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	holder := held(claim("h", "api", "main", "7"), t0)
	entry := func(i int) record.HistoryEntry {
		return record.HistoryEntry{
			Identity: record.Identity{Owner: long("owner", i), Repo: long("repo", i), Branch: long("branch", i), Build: "1"},
			Since:    metav1.NewMicroTime(t0), Until: metav1.NewMicroTime(t0), Ended: record.EndReleased,
		}
	}
	rec := recordOf(holder)
	for i := range record.MaxHistory {
		rec.History = append(rec.History, entry(i))
	}
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	withHistory := len(raw)
	rec.Waiters = longWaiters(t, holder, record.MaxQueueBytes-withHistory/2)
	me := claim("late", "db", "main", "1")

	d := record.Decide(rec, me, record.PolicyFIFO, now, true, waiterTTL)
	require.Equal(t, record.Waiting, d.Outcome)
	require.NoError(t, queueRoom("staging", rec, d), "the queue takes the room of old holds")
	assert.Less(t, len(d.Record.History), record.MaxHistory, "old holds dropped")
	assert.GreaterOrEqual(t, len(d.Record.History), record.KeptHistory)
	assert.Equal(t, rec.History[len(rec.History)-1].Identity, d.Record.History[len(d.Record.History)-1].Identity, "the newest hold kept")
	raw, err = json.Marshal(d.Record)
	require.NoError(t, err)
	assert.LessOrEqual(t, len(raw), record.MaxQueueBytes)

	t.Run("refused when only the kept history is left", func(t *testing.T) {
		t.Parallel()
		full := recordOf(holder)
		full.History = append(full.History, rec.History[:record.KeptHistory]...)
		full.Waiters = longWaiters(t, holder, record.MaxQueueBytes)
		d := record.Decide(full, me, record.PolicyFIFO, now, true, waiterTTL)
		var qf *QueueFullError
		require.ErrorAs(t, queueRoom("staging", full, d), &qf, fmt.Sprintf("%d waiters", len(full.Waiters)))
	})
}

// TestEndedFreezesAreKept: a freeze that ends (its time is up at the next
// write, or unfreeze ends it early) leaves its span in Frozen, for
// statistics, at most KeptHistory of them.
func TestEndedFreezesAreKept(t *testing.T) {
	t.Parallel()
	freeze := func(from, until time.Time) *record.Freeze {
		return &record.Freeze{Reason: "r", By: record.Identity{Owner: "o", Repo: "r", Branch: "b", Build: "1"},
			Since: metav1.NewMicroTime(from), Until: metav1.NewMicroTime(until)}
	}
	rec := recordOf(held(claim("h", "web", "main", "1"), t0))
	rec.Freeze = freeze(t0, t0.Add(time.Hour))
	assert.False(t, rec.Thaw(t0.Add(time.Minute)), "still frozen")
	assert.True(t, rec.Thaw(t0.Add(2*time.Hour)))
	require.Len(t, rec.Frozen, 1)
	assert.Equal(t, time.Hour, rec.Frozen[0].Until.Sub(rec.Frozen[0].Since.Time), "frozen until its end, not until the write")

	rec.Freeze = freeze(t0.Add(3*time.Hour), t0.Add(5*time.Hour))
	_, wrote, err := record.DecideUnfreeze("staging", rec, nil, t0.Add(4*time.Hour))
	require.NoError(t, err)
	require.True(t, wrote)
	require.Len(t, rec.Frozen, 2)
	assert.Equal(t, time.Hour, rec.Frozen[1].Until.Sub(rec.Frozen[1].Since.Time), "ended early by unfreeze")

	for i := range record.KeptHistory + 3 {
		rec.Freeze = freeze(t0.Add(time.Duration(10+i)*time.Hour), t0.Add(time.Duration(10+i)*time.Hour+time.Minute))
		rec.Thaw(t0.Add(100 * time.Hour))
	}
	assert.Len(t, rec.Frozen, record.KeptHistory)
}
