package cmd

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock/record"
)

// windowStartedNow returns a daily schedule that fired in the minute
// before now, and when.
func windowStartedNow(now time.Time) (string, time.Time) {
	start := now.UTC().Truncate(time.Minute).Add(-time.Minute)
	return fmt.Sprintf("%d %d * * *", start.Minute(), start.Hour()), start
}

// TestIntegrationFrozenUntilManualInWindow: a lock frozen by hand for ten
// minutes inside a two-hour freeze window is frozen until the window's
// end, and status, acquire and unfreeze all say so.
func TestIntegrationFrozenUntilManualInWindow(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	schedule, start := windowStartedNow(time.Now())
	windowEnd := start.Add(2 * time.Hour).Format(time.RFC3339)
	_, errOut, code := lockctlIn(t, env, ns, "freeze-windows", "add", "release", "--schedule", schedule, "--duration", "2h", "--reason", "release window")
	require.Zero(t, code, errOut)
	_, errOut, code = lockctlIn(t, env, ns, "freeze", "production", "--for", "10m", "--reason", "hotfix check")
	require.Zero(t, code, errOut)

	out, errOut, code := lockctlIn(t, env, ns, "status", "production", "-o", "jsonpath={.status.freeze.until}")
	require.Zero(t, code, errOut)
	until, err := time.Parse(time.RFC3339, out)
	require.NoError(t, err, out)
	assert.Equal(t, windowEnd, until.UTC().Format(time.RFC3339), "status: the window's end, not the manual freeze's")

	_, errOut, code = lockctlIn(t, env, ns, "acquire", "production", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1", "--no-wait")
	assert.Equal(t, 4, code, errOut)
	assert.Contains(t, errOut, "frozen until "+windowEnd, "acquire's message")

	_, errOut, code = lockctlIn(t, env, ns, "unfreeze", "production")
	assert.NotZero(t, code, errOut)
	assert.Contains(t, errOut, "frozen until "+windowEnd, "unfreeze's refusal")
}

// TestIntegrationFreezeWindowsCommand: windows added with the command
// freeze the lock; an entry broken by hand names itself in status (which
// still shows the locks) and in acquire, which refuses; removing it lets
// acquire through.
func TestIntegrationFreezeWindowsCommand(t *testing.T) {
	env := testenv.Get(t)
	ns := env.Namespace(t)
	schedule, _ := windowStartedNow(time.Now())
	_, errOut, code := lockctlIn(t, env, ns, "freeze-windows", "add", "now", "--schedule", schedule, "--duration", "1h", "--reason", "maintenance", "--target", "production")
	require.Zero(t, code, errOut)
	_, errOut, code = lockctlIn(t, env, ns, "freeze-windows", "add", "bad", "--schedule", "22:00", "--duration", "1h", "--reason", "r")
	assert.Equal(t, 2, code, "a bad schedule is refused before it is written")
	assert.Contains(t, errOut, `invalid --schedule "22:00"`)

	out, errOut, code := lockctlIn(t, env, ns, "freeze-windows", "list", "-o", "json")
	require.Zero(t, code, errOut)
	assert.Contains(t, out, `"name": "now"`)
	assert.Contains(t, out, `"active": true`)
	_, errOut, code = lockctlIn(t, env, ns, "acquire", "production", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1", "--no-wait")
	assert.Equal(t, 4, code, "the window freezes production: %s", errOut)
	_, errOut, code = lockctlIn(t, env, ns, "acquire", "staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1")
	require.Zero(t, code, errOut)

	// A typo written by hand.
	cms := env.Client.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(t.Context(), record.FreezeWindowsName, metav1.GetOptions{})
	require.NoError(t, err)
	cm.Data[record.FreezeWindowsKey] += "- {name: nightly, schedule: \"0 22 * * *\", duration: 8 hours, reason: nightly}\n"
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)

	named := `window 2 ("nightly"): duration "8 hours": want a positive duration such as 8h or 90m`
	out, errOut, code = lockctlIn(t, env, ns, "status")
	assert.Equal(t, 1, code, errOut)
	assert.Contains(t, out, "staging", "status still shows the locks")
	assert.Contains(t, errOut, "error: freeze windows "+ns+"/lockctl-freeze-windows, key windows.yaml: "+named)
	out, errOut, code = lockctlIn(t, env, ns, "freeze-windows", "list")
	assert.Zero(t, code, errOut)
	assert.Contains(t, out, "invalid: "+named, "list marks the entry")
	_, errOut, code = lockctlIn(t, env, ns, "acquire", "qa", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "2", "--no-wait")
	assert.Equal(t, 1, code, "acquire refuses while the windows cannot be read")
	assert.Contains(t, errOut, named)

	_, errOut, code = lockctlIn(t, env, ns, "freeze-windows", "remove", "nightly")
	require.Zero(t, code, errOut)
	_, errOut, code = lockctlIn(t, env, ns, "acquire", "qa", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "2", "--no-wait")
	assert.Zero(t, code, errOut)
	got, err := cms.Get(t.Context(), record.FreezeWindowsName, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Contains(t, got.Data[record.FreezeWindowsKey], "name: now", "the good window stays")
	assert.False(t, strings.Contains(got.Data[record.FreezeWindowsKey], "nightly"))
}
