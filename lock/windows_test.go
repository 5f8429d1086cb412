package lock

import (
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestParseFreezeWindows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		in      string
		wantN   int
		wantErr string
	}{
		{name: "two windows", wantN: 2, in: `
windows:
- {name: nightly, schedule: "0 22 * * *", duration: 8h, reason: nightly maintenance, targets: [production]}
- {name: friday, schedule: "0 14 * * FRI", duration: 10h, reason: no deploys on Friday afternoon}
`},
		{name: "empty", in: "", wantN: 0},
		{name: "unknown field", in: `windows: [{name: a, schedule: "@daily", duration: 1h, reason: r, until: x}]`, wantErr: `window 1 ("a"): until "x": unknown field; a window has name, schedule, duration, reason, targets; fix it in that ConfigMap, or remove it with lockctl freeze-windows remove a`},
		{name: "bad schedule", in: `windows: [{name: a, schedule: "at night", duration: 1h, reason: r}]`, wantErr: `window 1 ("a"): schedule "at night": expected exactly 5 fields`},
		{name: "no duration", in: `windows: [{name: a, schedule: "@daily", reason: r}]`, wantErr: `window 1 ("a"): duration: missing`},
		{name: "bad duration", in: `windows: [{name: a, schedule: "@daily", duration: 8 hours, reason: r}]`, wantErr: `window 1 ("a"): duration "8 hours": want a positive duration such as 8h or 90m`},
		{name: "negative duration", in: `windows: [{name: a, schedule: "@daily", duration: -1h, reason: r}]`, wantErr: `window 1 ("a"): duration "-1h": want a positive duration`},
		{name: "one broken of two", in: `windows: [{name: a, schedule: "@daily", duration: 1h, reason: r}, {name: b, schedule: "@dialy", duration: 1h, reason: r}]`, wantErr: `key windows.yaml: window 2 ("b"): schedule "@dialy"`},
		{name: "not a list", in: `windows: {name: a}`, wantErr: `key windows.yaml: error unmarshaling JSON`},
		{name: "no name", in: `windows: [{schedule: "@daily", duration: 1h, reason: r}]`, wantErr: "window 1: name: missing; fix it in that ConfigMap"},
		{name: "name twice", in: `windows: [{name: a, schedule: "@daily", duration: 1h, reason: r}, {name: a, schedule: "@daily", duration: 1h, reason: r}]`, wantErr: `window 2 ("a"): name "a": the name is used twice`},
		{name: "no reason", in: `windows: [{name: a, schedule: "@daily", duration: 1h}]`, wantErr: `window 1 ("a"): reason: missing`},
		{name: "empty reason", in: `windows: [{name: a, schedule: "@daily", duration: 1h, reason: " "}]`, wantErr: `window 1 ("a"): reason " ": the reason is empty`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ws, err := ParseFreezeWindows([]byte(tt.in))
			if tt.wantErr != "" {
				require.Error(t, err, tt.in)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err, tt.in)
			assert.Len(t, ws, tt.wantN)
		})
	}
}

func TestWindowFreeze(t *testing.T) {
	t.Parallel()
	ws, err := ParseFreezeWindows([]byte(`
windows:
- {name: nightly, schedule: "0 22 * * *", duration: 8h, reason: nightly, targets: [production]}
- {name: friday, schedule: "0 14 * * FRI", duration: 10h, reason: friday}
- {name: overlapping, schedule: "0 * * * *", duration: 90m, reason: always, targets: [busy]}
`))
	require.NoError(t, err)
	at := func(s string) time.Time {
		tm, err := time.Parse(time.RFC3339, s)
		require.NoError(t, err)
		return tm
	}
	// 2026-12-03 is a Thursday.
	tests := []struct {
		name      string
		target    string
		now       string
		wantBy    string
		wantSince string
		wantUntil string
	}{
		{name: "in the night", target: "production", now: "2026-12-03T23:00:00Z", wantBy: "nightly", wantSince: "2026-12-03T22:00:00Z", wantUntil: "2026-12-04T06:00:00Z"},
		{name: "early morning, from the day before", target: "production", now: "2026-12-04T05:59:59Z", wantBy: "nightly", wantSince: "2026-12-03T22:00:00Z", wantUntil: "2026-12-04T06:00:00Z"},
		{name: "the window's end is outside it", target: "production", now: "2026-12-04T06:00:00Z"},
		{name: "before the start", target: "production", now: "2026-12-03T21:59:59Z"},
		{name: "at the start", target: "production", now: "2026-12-03T22:00:00Z", wantBy: "nightly", wantSince: "2026-12-03T22:00:00Z", wantUntil: "2026-12-04T06:00:00Z"},
		{name: "another target is not in the nightly window", target: "staging", now: "2026-12-03T23:00:00Z"},
		{name: "friday afternoon, every target", target: "staging", now: "2026-12-04T15:00:00Z", wantBy: "friday", wantSince: "2026-12-04T14:00:00Z", wantUntil: "2026-12-05T00:00:00Z"},
		{name: "friday evening, the longer window wins", target: "production", now: "2026-12-04T23:00:00Z", wantBy: "nightly", wantSince: "2026-12-04T22:00:00Z", wantUntil: "2026-12-05T06:00:00Z"},
		{name: "thursday afternoon", target: "staging", now: "2026-12-03T15:00:00Z"},
		{name: "windows that overlap chain", target: "busy", now: "2026-12-03T10:30:00Z", wantBy: "overlapping", wantSince: "2026-12-03T10:00:00Z", wantUntil: "2026-12-07T15:30:00Z"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := windowFreeze(ws, tt.target, at(tt.now))
			if tt.wantBy == "" {
				assert.Nil(t, f, "no window at %s", tt.now)
				return
			}
			require.NotNil(t, f, "a window at %s", tt.now)
			assert.Equal(t, tt.wantBy, f.By.Branch, "window")
			assert.Equal(t, at(tt.wantSince), f.Since.UTC(), "since")
			assert.Equal(t, at(tt.wantUntil), f.Until.UTC(), "until")
		})
	}
}

// TestDecideInFreezeWindow: a window freezes a lock that does not exist
// yet, which the contender creates frozen and waits on; --ignore-freeze
// takes it; a window freeze in the record that the windows no longer make
// is dropped.
func TestDecideInFreezeWindow(t *testing.T) {
	t.Parallel()
	ws, err := ParseFreezeWindows([]byte(`windows: [{name: always, schedule: "* * * * *", duration: 1h, reason: maintenance}]`))
	require.NoError(t, err)
	now := t0.Add(30 * time.Second)
	c := &Client{}
	c.SetFreezeWindows(ws)

	cur := c.withWindows(nil, "staging", PolicyNewest, now)
	require.NotNil(t, cur, "a new lock, frozen by the window")
	d := Decide(cur, claim("me", "web", "main", "1"), PolicyNewest, now, true, waiterTTL)
	assert.Equal(t, Waiting, d.Outcome)
	require.NotNil(t, d.Record, "created frozen, with me queued")
	require.NotNil(t, d.Record.Freeze)
	assert.Equal(t, "always", d.Record.Freeze.By.Branch)
	assert.True(t, d.Record.unheld())

	d = Decide(c.withWindows(nil, "staging", PolicyNewest, now), ignoring(claim("me", "web", "main", "1")), PolicyNewest, now, true, waiterTTL)
	assert.Equal(t, Acquired, d.Outcome, "--ignore-freeze takes it")
	assert.NotEmpty(t, d.Record.Holder.IgnoredFreeze)

	none := &Client{}
	none.SetFreezeWindows(nil)
	frozenRec := freeRecord(queued(claim("w", "db", "main", "1"), now))
	frozenRec.Freeze = windowFreeze(ws, "staging", now)
	rec := none.withWindows(frozenRec, "staging", PolicyNewest, now)
	assert.Nil(t, rec.Freeze, "the window was removed: its freeze goes")
	assert.NotNil(t, frozenRec.Freeze, "the record read is left as it was")

	notLoaded := &Client{}
	assert.Same(t, frozenRec, notLoaded.withWindows(frozenRec, "staging", PolicyNewest, now), "windows not loaded: the record as it is")
}

// TestFreezeWindowsRefreshedWhileInUse: the windows may be loaded again
// (LoadFreezeWindows, SetFreezeWindows) while views and decisions read
// them; run with -race, which reported the unguarded field this replaced.
func TestFreezeWindowsRefreshedWhileInUse(t *testing.T) {
	t.Parallel()
	now := t0.Add(30 * time.Second)
	c, _ := newTestClient(t, now, nil, lockObject(t, freeRecord()),
		windowsObject(`windows: [{name: always, schedule: "* * * * *", duration: 1h, reason: maintenance}]`))
	ws, err := ParseFreezeWindows([]byte(`windows: [{name: always, schedule: "* * * * *", duration: 1h, reason: maintenance}]`))
	require.NoError(t, err)
	c.SetFreezeWindows(ws)

	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				if i%2 == 0 {
					assert.NoError(t, c.LoadFreezeWindows(t.Context()))
				} else {
					c.SetFreezeWindows(ws)
				}
			}
		}()
	}
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for range 50 {
				l, err := c.Get(t.Context(), "staging")
				assert.NoError(t, err)
				free := c.FreeLockView("staging")
				if l != nil {
					assert.NotNil(t, l.Status.Freeze, "the window freezes the view")
				}
				assert.NotNil(t, free.Status.Freeze, "the window freezes the view")
				_, err = c.Release(t.Context(), "staging", claim("x", "web", "main", "1").Identity, ReleaseOptions{})
				assert.NoError(t, err)
			}
		}()
	}
	wg.Wait()
	assert.Len(t, c.FreezeWindows(), 1)
}

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
			f := effectiveFreeze(tt.own, ws, tt.target, now)
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

// TestFrozenUntilEverywhere: a lock frozen by hand inside a freeze window
// shows the window's end in its view (status, the page), in the error of
// an acquire that would wait, and in unfreeze's
// refusal, on the client's (fake) clock.
func TestFrozenUntilEverywhere(t *testing.T) {
	t.Parallel()
	now := t0 // 10:00
	windows := `windows: [{name: maintenance, schedule: "0 9 * * *", duration: 4h, reason: maintenance}]`
	windowEnd := time.Date(2026, 12, 2, 13, 0, 0, 0, time.UTC)
	rec := frozen(freeRecord(), now.Add(time.Hour)) // until 11:00
	c, _ := newTestClient(t, now, nil, lockObject(t, rec), windowsObject(windows))
	require.NoError(t, c.LoadFreezeWindows(t.Context()))

	l, err := c.Get(t.Context(), "staging")
	require.NoError(t, err)
	require.NotNil(t, l, "the frozen lock")
	require.NotNil(t, l.Status.Freeze)
	assert.Equal(t, windowEnd, l.Status.Freeze.Until.UTC(), "the view: the window's end, not the manual freeze's")

	free := c.FreeLockView("qa")
	require.NotNil(t, free.Status.Freeze)
	assert.Equal(t, windowEnd, free.Status.Freeze.Until.UTC(), "a lock that does not exist yet")

	_, err = c.Acquire(t.Context(), Request{Target: "staging", Identity: claim("me", "web", "main", "2").Identity, NoWait: true})
	var held *HeldError
	require.ErrorAs(t, err, &held)
	require.NotNil(t, held.Freeze)
	assert.Equal(t, windowEnd, held.Freeze.Until.UTC(), "acquire's message")
	assert.Contains(t, err.Error(), "frozen until 2026-12-02T13:00:00Z")

	_, err = c.Unfreeze(t.Context(), "staging")
	var we *windowError
	require.ErrorAs(t, err, &we)
	assert.Equal(t, windowEnd, we.Freeze.Until.UTC(), "unfreeze's refusal")
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
	lines, until := windowIntervals(ws, "web", now)
	require.Len(t, lines, 91, "every night to the horizon, the last begun before it")
	assert.Equal(t, "2026-12-07T22:00:00Z 2026-12-08T07:00:00Z nightly", lines[0], "the window in force, merged with the one it overlaps")
	assert.Equal(t, "2026-12-08T22:00:00Z 2026-12-09T07:00:00Z nightly", lines[1])
	assert.Equal(t, now.Add(windowsHorizon), until, "a whole second")

	lines, until = windowIntervals(ws, "api", now)
	require.Len(t, lines, maxWindowIntervals)
	assert.Equal(t, "2026-12-07T23:00:00Z 2026-12-07T23:00:30Z minutes", lines[0])
	assert.Equal(t, time.Date(2026, 12, 8, 3, 16, 0, 0, time.UTC), until, "complete until the first start not listed")

	lines, until = windowIntervals(ws, "db", now)
	assert.Empty(t, lines)
	assert.True(t, until.IsZero(), "no window applies")
}
