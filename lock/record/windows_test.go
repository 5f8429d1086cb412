package record

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestFrozenUntil: every freeze in force counts, and a freeze that starts
// when another ends (or before) carries the lock on: a manual freeze
// inside a window ends with the window, a window after a manual freeze
// with no gap extends it, windows back to back chain.
func TestFrozenUntil(t *testing.T) {
	t.Parallel()
	// t0 is 2026-12-02T10:00:00Z.
	ws, err := ParseFreezeWindows([]byte(`
windows:
- {name: maintenance, schedule: "0 9 * * *", duration: 4h, reason: maintenance, targets: [prod, chain, gap]}
- {name: then, schedule: "0 13 * * *", duration: 2h, reason: then, targets: [chain]}
- {name: later, schedule: "1 13 * * *", duration: 1h, reason: later, targets: [gap]}
- {name: after, schedule: "0 11 * * *", duration: 3h, reason: after, targets: [after]}
`))
	require.NoError(t, err)
	at := func(hhmm string) time.Time {
		tm, err := time.Parse("15:04", hhmm)
		require.NoError(t, err)
		return time.Date(2026, 12, 2, tm.Hour(), tm.Minute(), 0, 0, time.UTC)
	}
	manual := func(until string) *Freeze {
		return &Freeze{Reason: "hotfix", By: Identity{Owner: "alice", Repo: "ops", Branch: "main", Build: "1"},
			Since: metav1.NewMicroTime(at("09:30")), Until: metav1.NewMicroTime(at(until))}
	}
	tests := []struct {
		name      string
		target    string
		own       *Freeze
		wantBy    string // "" for no freeze; "main" for the manual one
		wantUntil string
	}{
		{name: "a manual freeze inside a window ends with the window", target: "prod", own: manual("11:00"), wantBy: "maintenance", wantUntil: "13:00"},
		{name: "a manual freeze longer than the window", target: "prod", own: manual("14:00"), wantBy: "main", wantUntil: "14:00"},
		{name: "a manual freeze that ends with the window", target: "prod", own: manual("13:00"), wantBy: "main", wantUntil: "13:00"},
		{name: "a manual freeze that ended, in a window", target: "prod", own: manual("09:45"), wantBy: "maintenance", wantUntil: "13:00"},
		{name: "windows back to back chain", target: "chain", wantBy: "maintenance", wantUntil: "15:00"},
		{name: "a manual freeze inside chained windows", target: "chain", own: manual("11:00"), wantBy: "maintenance", wantUntil: "15:00"},
		{name: "a minute's gap ends the freeze", target: "gap", wantBy: "maintenance", wantUntil: "13:00"},
		{name: "a window that starts as a manual freeze ends", target: "after", own: manual("11:00"), wantBy: "main", wantUntil: "14:00"},
		{name: "a manual freeze, no window", target: "staging", own: manual("11:00"), wantBy: "main", wantUntil: "11:00"},
		{name: "nothing", target: "staging"},
		{name: "a window that starts later is not a freeze now", target: "after"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			now := at("10:00")
			f := EffectiveFreeze(tt.own, ws, tt.target, now)
			if tt.wantBy == "" {
				assert.Nil(t, f, "not frozen")
				assert.Equal(t, now, thawsAt(tt.own, ws, tt.target, now), "thaws at once")
				return
			}
			require.NotNil(t, f, "frozen")
			assert.Equal(t, tt.wantBy, f.By.Branch, "the freeze shown")
			assert.Equal(t, at(tt.wantUntil), f.Until.UTC(), "until")
			assert.Equal(t, at(tt.wantUntil), thawsAt(tt.own, ws, tt.target, now), "thawsAt agrees")
			if tt.own != nil {
				assert.Equal(t, at("09:30"), tt.own.Since.UTC(), "the record's freeze is left as it was")
			}
		})
	}
}

// TestWindowIntervals: the intervals an enforced lock's summary lists
// start with a window in force, merge windows that overlap, stop at the
// horizon or the most it lists (the list is complete until then), and
// are none for a target no window applies to.
func TestWindowIntervals(t *testing.T) {
	t.Parallel()
	ws, err := ParseFreezeWindows([]byte(`windows:
- {name: nightly, schedule: "0 22 * * *", duration: 8h, reason: batch, targets: [web]}
- {name: late, schedule: "0 5 * * *", duration: 2h, reason: backups, targets: [web]}
- {name: minutes, schedule: "* * * * *", duration: 30s, reason: busy, targets: [api]}
`))
	require.NoError(t, err)
	now := time.Date(2026, 12, 7, 23, 0, 0, 0, time.UTC)
	lines, until := WindowIntervals(ws, "web", now)
	require.Len(t, lines, 91, "every night to the horizon, the last begun before it")
	assert.Equal(t, "2026-12-07T22:00:00Z 2026-12-08T07:00:00Z nightly", lines[0], "the window in force, merged with the one it overlaps")
	assert.Equal(t, "2026-12-08T22:00:00Z 2026-12-09T07:00:00Z nightly", lines[1])
	assert.Equal(t, now.Add(windowsHorizon), until, "a whole second")

	lines, until = WindowIntervals(ws, "api", now)
	require.Len(t, lines, maxWindowIntervals)
	assert.Equal(t, "2026-12-07T23:00:00Z 2026-12-07T23:00:30Z minutes", lines[0])
	assert.Equal(t, time.Date(2026, 12, 8, 3, 16, 0, 0, time.UTC), until, "complete until the first start not listed")

	lines, until = WindowIntervals(ws, "db", now)
	assert.Empty(t, lines)
	assert.True(t, until.IsZero(), "no window applies")
}
