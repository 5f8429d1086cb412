package lock

import (
	"sync"
	"testing"
	"time"

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
		{name: "unknown field", in: `windows: [{name: a, schedule: "@daily", duration: 1h, reason: r, until: x}]`, wantErr: `unknown field "until"`},
		{name: "bad schedule", in: `windows: [{name: a, schedule: "at night", duration: 1h, reason: r}]`, wantErr: `window "a": schedule "at night"`},
		{name: "no duration", in: `windows: [{name: a, schedule: "@daily", reason: r}]`, wantErr: `window "a": duration must be positive, such as 8h`},
		{name: "no name", in: `windows: [{schedule: "@daily", duration: 1h, reason: r}]`, wantErr: "window 1: name is missing"},
		{name: "name twice", in: `windows: [{name: a, schedule: "@daily", duration: 1h, reason: r}, {name: a, schedule: "@daily", duration: 1h, reason: r}]`, wantErr: `window "a": the name is used twice`},
		{name: "no reason", in: `windows: [{name: a, schedule: "@daily", duration: 1h}]`, wantErr: `window "a": the reason is empty`},
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
				free := c.Free("staging")
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
