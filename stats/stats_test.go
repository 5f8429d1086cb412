package stats_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/stats"
)

var t0 = time.Date(2026, 12, 7, 8, 0, 0, 0, time.UTC)

func micro(t time.Time) metav1.MicroTime { return metav1.NewMicroTime(t) }

func microPtr(t time.Time) *metav1.MicroTime {
	m := metav1.NewMicroTime(t)
	return &m
}

// hold is a past hold that began at start after waiting wait, lasted
// held and ended how.
func hold(build string, start time.Time, wait, held time.Duration, how record.Ending) record.HistoryEntry {
	return record.HistoryEntry{
		Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: build},
		Since:    micro(start), Until: micro(start.Add(held)), Ended: how, Queued: microPtr(start.Add(-wait)),
	}
}

func TestSummarize(t *testing.T) {
	t.Parallel()
	rec := &record.Record{Target: "staging", Policy: record.PolicyNewest}
	// Ten holds of 1..10 minutes, one an hour apart from 08:00, each
	// waited for as many minutes as its number minus one.
	for i := range 10 {
		how := record.EndHandedOver
		switch i {
		case 3:
			how = record.EndExpired
		case 4:
			how = record.EndBroken
		case 5:
			how = record.EndRanAgain
		}
		rec.History = append(rec.History, hold(string(rune('0'+i)), t0.Add(time.Duration(i)*time.Hour), time.Duration(i)*time.Minute, time.Duration(i+1)*time.Minute, how))
	}
	rec.History[6].SupersededBy = "acme/web@main#99"
	rec.History[7].IgnoredFreeze = "frozen until ..."
	rec.History[8].Queued = nil // ended by a lockctl before 1.9
	rec.History[9].Since = micro(t0.Add(8*time.Hour + 30*time.Minute))
	rec.History[9].Until = micro(t0.Add(8*time.Hour + 40*time.Minute))
	rec.Frozen = []record.FrozenSpan{{Since: micro(t0.Add(-time.Hour)), Until: micro(t0.Add(time.Hour))}}
	rec.Freeze = &record.Freeze{Since: micro(t0.Add(11 * time.Hour)), Until: micro(t0.Add(20 * time.Hour))}
	rec.BreakGlass = []record.GrantEntry{{User: "carol", At: micro(t0.Add(-time.Hour))}, {User: "carol", At: micro(t0.Add(2 * time.Hour))}}
	now := t0.Add(12 * time.Hour)

	all := stats.Summarize("ci", rec, time.Time{}, now)
	assert.Equal(t, "LockStats", all.Kind)
	assert.Equal(t, "lockctl-lock-staging", all.Name)
	st := all.Status
	assert.Equal(t, 10, st.Holds)
	require.NotNil(t, st.Hold)
	assert.Equal(t, 5*time.Minute+30*time.Second, st.Hold.P50.Duration)
	assert.Equal(t, 10*time.Minute, st.Hold.Max.Duration)
	assert.Equal(t, 9, st.Waits, "one hold does not say how long it was waited for")
	require.NotNil(t, st.Wait)
	assert.Equal(t, 7*time.Minute, st.Wait.Max.Duration, "the last hold's wait reads as none: it took the lock before it joined")
	assert.Equal(t, map[string]int{"released": 6, "expired": 1, "superseded": 2, "forced": 1}, st.Ended)
	assert.Equal(t, 1, st.IgnoredFreeze)
	assert.Equal(t, 2, st.BreakGlass)
	assert.Equal(t, 3*time.Hour, st.Frozen.Duration, "two hours of an ended freeze and the hour of the one in force")
	require.Len(t, st.BusiestHours, 3)
	assert.Equal(t, stats.HourLoad{Hour: 16, Holds: 2, Held: metav1.Duration{Duration: 19 * time.Minute}}, st.BusiestHours[0])
	assert.Equal(t, 15, st.BusiestHours[1].Hour, "then by time held")
	assert.Equal(t, t0, st.From.Time)
	assert.False(t, st.Partial)

	since := stats.Summarize("ci", rec, t0.Add(5*time.Hour), now).Status
	assert.Equal(t, 5, since.Holds, "holds that ended within the window")
	assert.Zero(t, since.BreakGlass)
	assert.Equal(t, time.Hour, since.Frozen.Duration)
	assert.Equal(t, t0.Add(5*time.Hour), since.From.Time)
}

func TestSummarizeNothingRecorded(t *testing.T) {
	t.Parallel()
	s := stats.Summarize("ci", &record.Record{Target: "staging"}, time.Time{}, t0)
	assert.Zero(t, s.Status.Holds)
	assert.Nil(t, s.Status.Hold)
	assert.Nil(t, s.Status.Wait)
	assert.Nil(t, s.Status.From)
	assert.Empty(t, s.Status.BusiestHours)
	assert.Equal(t, map[string]int{"released": 0, "expired": 0, "superseded": 0, "forced": 0}, s.Status.Ended, "every ending, at 0")
}

func TestBudgetOf(t *testing.T) {
	t.Parallel()
	regular := &record.Record{Target: "staging"}
	for i := range 20 {
		regular.History = append(regular.History, hold("1", t0.Add(time.Duration(i)*time.Hour), 0, time.Duration(15+i%5)*time.Minute, record.EndReleased))
	}
	now := t0.Add(30 * time.Hour)
	withQueue := func(rec *record.Record, waiters int, heldFor time.Duration) *record.Record {
		r := *rec
		r.Holder = record.Claim{ClaimID: "h", Since: micro(now.Add(-heldFor)), Expires: microPtr(now.Add(time.Hour))}
		r.Waiters = make([]record.Claim, waiters)
		return &r
	}
	tests := []struct {
		name        string
		rec         *record.Record
		want        time.Duration
		wantPos     int
		wantExpects time.Duration
	}{
		{name: "no lock: no history", rec: nil, want: stats.BudgetNoHistory, wantPos: 1},
		{name: "free, regular holds: the floor", rec: regular, want: stats.BudgetFloor, wantPos: 1},
		{name: "held 5 min, nobody waiting: the longest rest, and a quarter", rec: withQueue(regular, 0, 5*time.Minute),
			want: (19*time.Minute - 5*time.Minute) * 5 / 4, wantPos: 1, wantExpects: 12 * time.Minute},
		{name: "three waiting ahead: the longest hold each", rec: withQueue(regular, 3, 5*time.Minute),
			want: (14*time.Minute + 3*19*time.Minute) * 5 / 4, wantPos: 4, wantExpects: 12*time.Minute + 3*17*time.Minute},
		{name: "a long queue: the ceiling", rec: withQueue(regular, 30, 5*time.Minute), want: stats.BudgetCeiling, wantPos: 31},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := stats.BudgetOf(tt.rec, now)
			assert.Equal(t, tt.want, b.Timeout.Round(time.Second))
			assert.Equal(t, tt.wantPos, b.Position)
			if tt.wantExpects > 0 {
				assert.Equal(t, tt.wantExpects, b.Expected.Round(time.Second))
			}
		})
	}

	b := stats.BudgetOf(withQueue(regular, 3, 5*time.Minute), now)
	assert.Equal(t, "position 4, holds of ~17m (p90 19m) over the last 20", b.Describe())
	assert.Equal(t, "at position 4 with holds of ~17m, expected wait 1h3m exceeds --timeout 30m0s", b.Exceeds(30*time.Minute, "--timeout 30m0s"))
	assert.Empty(t, b.Exceeds(2*time.Hour, "--timeout 2h"))
	assert.Equal(t, "position 1, fewer than 3 holds recorded", stats.BudgetOf(nil, now).Describe())
}
