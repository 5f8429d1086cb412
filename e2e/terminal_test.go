package e2e

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/clitest"
)

// clearLine is what lockctl writes before redrawing or removing its live
// line.
const clearLine = "\r\033[K"

// stderrCases are commands that together write every kind of line lockctl
// has: status and results, the wait progress, debug log entries, errors
// with hints and usage errors. Each runs after the ones before it.
func stderrCases() []struct {
	name     string
	args     []string
	wantCode int
} {
	return []struct {
		name     string
		args     []string
		wantCode int
	}{
		{name: "acquire", args: append([]string{"acquire", "staging", "-v", "1"}, id("web", 1)...)},
		{name: "acquire again", args: append([]string{"acquire", "staging"}, id("web", 1)...)},
		{name: "wait and time out", args: append([]string{"acquire", "staging", "--timeout", "2s", "-v", "1"}, id("api", 1)...), wantCode: 4},
		{name: "release by another build", args: append([]string{"release", "staging"}, id("api", 1)...), wantCode: 1},
		{name: "release", args: append([]string{"release", "staging"}, id("web", 1)...)},
		{name: "release again", args: append([]string{"release", "staging"}, id("web", 1)...)},
		{name: "run a command", args: append([]string{"run", "--lock", "qa", "-v", "1", "--", "sh", "-c", "echo deployed"}, id("web", 2)...)},
		{name: "status", args: []string{"status", "staging"}},
		{name: "usage error", args: []string{"acquire"}, wantCode: 2},
		{name: "unknown flag", args: []string{"release", "staging", "--nope"}, wantCode: 2},
	}
}

// TestIntegrationCLIJSONLogFormat runs lockctl with JX_LOG_FORMAT=json: every
// line on stderr is one JSON object with a level, a message and a time, and
// stdout holds the results alone.
func TestIntegrationCLIJSONLogFormat(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	levels := map[string]bool{}
	for _, tt := range stderrCases() {
		ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
		cmd := c.command(ctx, tt.args...)
		cmd.Env = append(cmd.Env, "JX_LOG_FORMAT=json")
		o := c.runCmd(t, cmd)
		cancel()
		require.Equal(t, tt.wantCode, o.code, "%s: exit status; stderr:\n%s", tt.name, o.stderr)
		require.NotEmpty(t, o.stderr, "%s says something", tt.name)
		for _, line := range strings.Split(strings.TrimSuffix(o.stderr, "\n"), "\n") {
			var entry map[string]any
			if !assert.NoError(t, json.Unmarshal([]byte(line), &entry), "%s: stderr line is not one JSON object: %q", tt.name, line) {
				continue
			}
			assert.NotEmpty(t, entry["msg"], "%s: %q has a message", tt.name, line)
			assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ$`, entry["time"], "%s: %q has an RFC 3339 UTC time", tt.name, line)
			levels[entry["level"].(string)] = true
		}
		assert.NotContains(t, o.stderr, "\033", "%s: no escape codes", tt.name)
		switch tt.name {
		case "acquire":
			assert.Regexp(t, `^\d+\n$`, o.stdout, "stdout holds the fencing token alone")
			assert.Contains(t, o.stderr, `"token":`, "the acquired line carries the token as a field")
		case "wait and time out":
			assert.Empty(t, o.stdout)
			assert.Contains(t, o.stderr, `"msg":"waiting for lock \"staging\": held by acme/web@main#1`, "progress is JSON")
			assert.Contains(t, o.stderr, `"holder":"acme/web@main#1"`, "progress has its fields")
		case "release by another build":
			assert.Contains(t, o.stderr, `"hint":`, "the hint is a field of the error")
		case "run a command":
			assert.Equal(t, "deployed\n", o.stdout, "the command's output alone")
		case "unknown flag":
			assert.Contains(t, o.stderr, `"usage":"Run 'lockctl release --help' for usage."`)
		}
	}
	for _, level := range []string{"info", "debug", "error"} {
		assert.True(t, levels[level], "%s lines were seen", level)
	}
}

// TestIntegrationCLIPlainTimestamps runs lockctl outside a terminal: every
// line it writes to stderr starts with the UTC time of day, errors and the
// acquired line included.
func TestIntegrationCLIPlainTimestamps(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	for _, tt := range stderrCases() {
		o := c.run(t, tt.args...)
		require.Equal(t, tt.wantCode, o.code, "%s: exit status; stderr:\n%s", tt.name, o.stderr)
		for _, line := range strings.Split(strings.TrimSuffix(o.stderr, "\n"), "\n") {
			assert.Regexp(t, `^\d\d:\d\d:\d\d \S`, line, "%s: every line has the time", tt.name)
		}
		assert.NotContains(t, o.stderr, "\033", "%s: no escape codes in a log", tt.name)
		if tt.name == "release by another build" {
			assert.Regexp(t, `(?m)^\d\d:\d\d:\d\d error: release lock "staging"`, o.stderr)
			assert.Regexp(t, `(?m)^\d\d:\d\d:\d\d hint: `, o.stderr)
		}
		if tt.name == "acquire" {
			assert.Regexp(t, `(?m)^\d\d:\d\d:\d\d DEBUG: lock acquired holder=acme/web@main#1`, o.stderr, "debug lines keep their fields")
		}
	}
}

// TestIntegrationCLILiveLine waits for a lock with a live line on a
// 40-column terminal (--progress tty, COLUMNS=40) and -v 1: the live line
// never fills a row, and the debug line written when the lock comes is
// never written into it.
func TestIntegrationCLILiveLine(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	require.Equal(t, 0, c.run(t, append([]string{"acquire", "live"}, id("web", 1)...)...).code)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	waiter := c.command(ctx, append([]string{"acquire", "live", "--progress", "tty", "-v", "1"}, id("api", 1)...)...)
	waiter.Env = append(waiter.Env, "COLUMNS=40", "NO_COLOR=1")
	var stderr clitest.SyncBuffer
	waiter.Stderr = &stderr
	require.NoError(t, waiter.Start())
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), clearLine+"waiting for lock") },
		time.Minute, 50*time.Millisecond, "the live line shows")
	time.Sleep(1500 * time.Millisecond) // a redraw or two
	o := c.run(t, append([]string{"release", "live"}, id("web", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	require.NoError(t, waiter.Wait(), stderr.String())

	out := stderr.String()
	assert.Contains(t, out, clearLine+"DEBUG: lock acquired holder=acme/api@main#1 lock=", "the debug line starts on a cleared row")
	assert.Contains(t, out, clearLine+"lock \"live\" acquired by acme/api@main#1", "the result line starts on a cleared row")
	for _, seg := range strings.Split(out, clearLine) {
		for _, row := range strings.SplitAfter(seg, "\n") {
			if strings.HasPrefix(row, "waiting for lock") {
				assert.Less(t, utf8.RuneCountInString(strings.TrimSuffix(row, "\n")), 40, "the live line fits the terminal: %q", row)
				assert.NotContains(t, row, "\n", "the live line is never ended by another line: %q", row)
			}
		}
	}
}
