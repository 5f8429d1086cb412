package e2e

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/clitest"
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
		{name: "reconcile once", args: []string{"reconcile", "--once", "-v", "1"}},
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
	// NOTE: at 40 columns the live line takes a short form that keeps
	// the holder.
	require.Eventually(t, func() bool { return strings.Contains(stderr.String(), clearLine+`"live": held by acme/web@main#1`) },
		time.Minute, 50*time.Millisecond, "the live line shows, naming the holder")
	time.Sleep(1500 * time.Millisecond) // a redraw or two
	o := c.run(t, append([]string{"release", "live"}, id("web", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	require.NoError(t, waiter.Wait(), stderr.String())

	out := stderr.String()
	debugOnClearedRows(t, out)
	assert.Contains(t, out, clearLine+"lock \"live\" acquired by acme/api@main#1", "the result line starts on a cleared row")
	for _, seg := range strings.Split(out, clearLine) {
		for _, row := range strings.SplitAfter(seg, "\n") {
			if strings.HasPrefix(row, `"live":`) || strings.HasPrefix(row, "waiting for lock") {
				assert.Less(t, utf8.RuneCountInString(strings.TrimSuffix(row, "\n")), 40, "the live line fits the terminal: %q", row)
				assert.NotContains(t, row, "\n", "the live line is never ended by another line: %q", row)
			}
		}
	}
}

// ttyColumns is the width of the pseudo-terminal lockctl runs on.
const ttyColumns = 40

// terminalRun is lockctl running on a pseudo-terminal.
type terminalRun struct {
	cmd  *exec.Cmd
	out  clitest.SyncBuffer // what the terminal received: stdout and stderr together
	done chan struct{}
	err  error // cmd.Wait's, once done is closed
}

// scriptWorks skips t unless script(1) (util-linux; bsdutils on Debian)
// can give a command a pseudo-terminal here.
func scriptWorks(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("script"); err != nil {
		t.Skip("needs script(1) from util-linux (bsdutils on Debian) to give lockctl a pseudo-terminal: " + err.Error())
	}
	ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
	defer cancel()
	if out, err := exec.CommandContext(ctx, "script", "-qfec", "true", "/dev/null").CombinedOutput(); err != nil {
		t.Skipf("script(1) cannot run a command on a pseudo-terminal here (script -qfec true /dev/null: %v: %s)", err, out)
	}
}

// startOnTerminal starts lockctl args on a pseudo-terminal ttyColumns wide
// (with script(1)), as a developer's shell does. The shell prints its
// process ID, which lockctl takes over with exec, so a hang can be
// diagnosed (see wait).
func (c *cli) startOnTerminal(t *testing.T, env []string, args ...string) *terminalRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	shell := fmt.Sprintf("stty cols %d rows 24 && echo lockctl-pid=$$ && exec %s", ttyColumns, shellQuote(lockctlBin))
	for _, a := range args {
		shell += " " + shellQuote(a)
	}
	cmd := exec.CommandContext(ctx, "script", "-qfec", shell, "/dev/null")
	cmd.Env = slices.Concat(c.command(ctx).Env, []string{"TERM=xterm"}, env)
	// NOTE: should the context end first, Wait returns soon after script
	// is killed even if lockctl still holds the terminal's output.
	cmd.WaitDelay = 10 * time.Second
	r := &terminalRun{cmd: cmd, done: make(chan struct{})}
	cmd.Stdout, cmd.Stderr = &r.out, &r.out
	require.NoError(t, cmd.Start())
	go func() {
		r.err = cmd.Wait()
		close(r.done)
	}()
	t.Cleanup(func() {
		cancel()
		<-r.done
	})
	return r
}

// waitFor waits until the terminal received text at least n times; it
// fails at once, with the terminal's output, if lockctl ends first.
func (r *terminalRun) waitFor(t *testing.T, text string, n int) {
	t.Helper()
	deadline := time.After(time.Minute)
	for strings.Count(r.out.String(), text) < n {
		select {
		case <-r.done:
			t.Fatalf("lockctl ended (%v) before the terminal showed %q %d times:\n%q", r.err, text, n, r.out.String())
		case <-deadline:
			r.dump()
			t.Fatalf("the terminal did not show %q %d times in a minute:\n%q", text, n, r.out.String())
		case <-time.After(50 * time.Millisecond):
		}
	}
}

// wait waits for lockctl to end and returns what the terminal received.
// Should it not end within a minute, it gets SIGQUIT, so the failure shows
// its goroutines, and the test fails instead of hanging.
func (r *terminalRun) wait(t *testing.T) string {
	t.Helper()
	select {
	case <-r.done:
	case <-time.After(time.Minute):
		r.dump()
		t.Fatalf("lockctl on a terminal did not end within a minute; the terminal received:\n%s", r.out.String())
	}
	require.NoError(t, r.err, "%q", r.out.String())
	return r.out.String()
}

// dump sends SIGQUIT to lockctl, which then writes its goroutines to the
// terminal and exits, and waits a little for script to pass that on.
func (r *terminalRun) dump() {
	_, rest, ok := strings.Cut(r.out.String(), "lockctl-pid=")
	if !ok {
		return
	}
	pid, err := strconv.Atoi(strings.TrimSpace(strings.SplitN(rest, "\n", 2)[0]))
	if err != nil {
		return
	}
	if p, err := os.FindProcess(pid); err == nil {
		_ = p.Signal(syscall.SIGQUIT)
	}
	select {
	case <-r.done:
	case <-time.After(15 * time.Second):
	}
}

// shellQuote quotes s for sh.
func shellQuote(s string) string {
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}

// TestIntegrationCLITerminal waits for a lock on a real (pseudo-)terminal
// 40 columns wide, without --progress: lockctl finds the terminal and its
// width itself, keeps the live line inside it in a short form that still
// names the holder whole, writes the -v 1 debug line on a row of its own,
// and colours the result unless NO_COLOR is set.
func TestIntegrationCLITerminal(t *testing.T) {
	t.Parallel()
	scriptWorks(t)
	c := newCLI(t)
	require.Equal(t, 0, c.run(t, append([]string{"acquire", "tty"}, id("web", 1)...)...).code)

	waiter := c.startOnTerminal(t, nil, append([]string{"acquire", "tty", "-v", "1"}, id("api", 1)...)...)
	// NOTE: two draws of the live line, so a redraw is checked too.
	// At 40 columns the live line takes a short form that keeps the holder.
	waiter.waitFor(t, clearLine+`"tty": held by acme/web@main#1`, 2)
	o := c.run(t, append([]string{"release", "tty"}, id("web", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	got := waiter.wait(t)

	debugOnClearedRows(t, got)
	assert.Contains(t, got, clearLine+"\033[32mlock \"tty\" acquired by acme/api@main#1", "the result in green, on a cleared row")
	assert.Regexp(t, `(?m)^\d+\r$`, got, "the fencing token on stdout")
	assert.NotRegexp(t, `(?m)^\d\d:\d\d:\d\d `, got, "no timestamps on a terminal")
	for _, seg := range strings.Split(got, clearLine) {
		if row, _, _ := strings.Cut(seg, "\r\n"); strings.HasPrefix(row, `"tty":`) || strings.HasPrefix(row, "waiting for lock") {
			assert.Less(t, utf8.RuneCountInString(row), ttyColumns, "the live line fits the terminal: %q", row)
			assert.Contains(t, row, "held by acme/web@main#1", "the live line names the holder whole")
		}
	}

	// NOTE: another lock: acme/api@main#1 keeps "tty", and a wait for it
	// would last the hour of its TTL.
	plain := c.startOnTerminal(t, []string{"NO_COLOR=1"}, append([]string{"acquire", "tty-plain"}, id("web", 2)...)...)
	got = plain.wait(t)
	assert.Contains(t, got, `lock "tty-plain" acquired by acme/web@main#2`)
	assert.NotRegexp(t, "\033\\[[0-9;]*m", got, "NO_COLOR: no colour")
}

// debugOnClearedRows asserts that out has debug lines of the waiter's
// acquisition (which ones depends on how it got the lock: a hand-over seen
// and confirmed, or a take) and that each starts on a cleared row.
func debugOnClearedRows(t *testing.T, out string) {
	t.Helper()
	n := strings.Count(out, "DEBUG: ")
	assert.Positive(t, n, "debug lines at -v 1")
	assert.Contains(t, out, "holder=acme/api@main#1", "a debug line names the new holder")
	assert.Equal(t, n, strings.Count(out, clearLine+"DEBUG: "), "every debug line starts on a cleared row")
}
