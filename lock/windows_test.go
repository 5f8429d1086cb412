package lock

import (
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
			ws, err := record.ParseFreezeWindows([]byte(tt.in))
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
	ws, err := record.ParseFreezeWindows([]byte(`
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
			f := record.WindowFreeze(ws, tt.target, at(tt.now))
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
	ws, err := record.ParseFreezeWindows([]byte(`windows: [{name: always, schedule: "* * * * *", duration: 1h, reason: maintenance}]`))
	require.NoError(t, err)
	now := t0.Add(30 * time.Second)
	c := &Client{}
	c.SetFreezeWindows(ws)

	cur := c.withWindows(nil, "staging", record.PolicyNewest, now)
	require.NotNil(t, cur, "a new lock, frozen by the window")
	d := record.Decide(cur, claim("me", "web", "main", "1"), record.PolicyNewest, now, true, waiterTTL)
	assert.Equal(t, record.Waiting, d.Outcome)
	require.NotNil(t, d.Record, "created frozen, with me queued")
	require.NotNil(t, d.Record.Freeze)
	assert.Equal(t, "always", d.Record.Freeze.By.Branch)
	assert.True(t, d.Record.Unheld())

	d = record.Decide(c.withWindows(nil, "staging", record.PolicyNewest, now), ignoring(claim("me", "web", "main", "1")), record.PolicyNewest, now, true, waiterTTL)
	assert.Equal(t, record.Acquired, d.Outcome, "--ignore-freeze takes it")
	assert.NotEmpty(t, d.Record.Holder.IgnoredFreeze)

	none := &Client{}
	none.SetFreezeWindows(nil)
	frozenRec := freeRecord(queued(claim("w", "db", "main", "1"), now))
	frozenRec.Freeze = record.WindowFreeze(ws, "staging", now)
	rec := none.withWindows(frozenRec, "staging", record.PolicyNewest, now)
	assert.Nil(t, rec.Freeze, "the window was removed: its freeze goes")
	assert.NotNil(t, frozenRec.Freeze, "the record read is left as it was")

	notLoaded := &Client{}
	assert.Same(t, frozenRec, notLoaded.withWindows(frozenRec, "staging", record.PolicyNewest, now), "windows not loaded: the record as it is")
}

// TestFreezeWindowsRefreshedWhileInUse: the windows may be loaded again
// (LoadFreezeWindows, SetFreezeWindows) while views and decisions read
// them; run with -race, which reported the unguarded field this replaced.
func TestFreezeWindowsRefreshedWhileInUse(t *testing.T) {
	t.Parallel()
	now := t0.Add(30 * time.Second)
	c, _ := newTestClient(t, now, nil, lockObject(t, freeRecord()),
		windowsObject(`windows: [{name: always, schedule: "* * * * *", duration: 1h, reason: maintenance}]`))
	ws, err := record.ParseFreezeWindows([]byte(`windows: [{name: always, schedule: "* * * * *", duration: 1h, reason: maintenance}]`))
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
	var we *WindowError
	require.ErrorAs(t, err, &we)
	assert.Equal(t, windowEnd, we.Freeze.Until.UTC(), "unfreeze's refusal")
}
