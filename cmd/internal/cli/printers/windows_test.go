package printers

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

func TestPrintWindows(t *testing.T) {
	t.Parallel()
	ws, err := record.ParseFreezeWindows([]byte(`windows:
- name: nightly
  schedule: "0 22 * * *"
  duration: 8h
  reason: nightly maintenance
  targets: [production, staging]
- name: lunch
  schedule: "0 12 * * *"
  duration: 1h
  reason: lunch
`))
	require.NoError(t, err)
	entries := []lock.WindowEntry{{Window: ws[0]}, {Window: ws[1]}, {Window: record.FreezeWindow{Name: "broken"}, Err: &record.WindowEntryError{Index: 3, Name: "broken", Field: "schedule", Reason: "want a cron schedule"}}}
	now := time.Date(2026, 12, 2, 12, 30, 0, 0, time.UTC)
	items, broken := WindowItems(entries, now)
	assert.Equal(t, 1, broken, "the broken entry is counted")
	require.Len(t, items, 3)
	assert.False(t, items[0].Active, "nightly is ahead")
	assert.True(t, items[1].Active, "lunch freezes now")
	assert.NotEmpty(t, items[2].Invalid, "the broken entry says why")

	var out bytes.Buffer
	require.NoError(t, PrintWindows(&out, "", items))
	assert.Equal(t, "NAME      SCHEDULE     DURATION   TARGETS              STATE                                                          REASON\n"+
		"nightly   0 22 * * *   8h0m0s     production,staging   next 2026-12-02T22:00:00Z                                      nightly maintenance\n"+
		"lunch     0 12 * * *   1h0m0s     *                    frozen until 2026-12-02T13:00:00Z                              lunch\n"+
		"broken    -            -          *                    invalid: window 3 (\"broken\"): schedule: want a cron schedule   -\n", out.String())

	out.Reset()
	require.NoError(t, PrintWindows(&out, "", nil))
	assert.Empty(t, out.String(), "no table without windows")
	require.NoError(t, PrintWindows(&out, "json", nil))
	assert.Contains(t, out.String(), `"kind": "List"`, "-o json prints a List, even empty")
}
