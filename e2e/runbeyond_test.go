package e2e

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
)

// TestIntegrationRunSeveralLocks: run holds two locks while its command
// runs, prints a fencing token per lock, and a run that names them in the
// other order waits (saying for which lock) and runs after it.
func TestIntegrationRunSeveralLocks(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	trace := filepath.Join(t.TempDir(), "trace")
	script := func(who string) string {
		return fmt.Sprintf("echo start %[1]s >> %[2]s; sleep 1; echo end %[1]s >> %[2]s", who, trace)
	}
	first := startRun(t, c, append(append([]string{"run", "--lock", "staging", "--lock", "db-migrations"}, id("web", 1)...), "--", "sh", "-c", script("web"))...)
	first.waitFor(t, "running sh -c")
	o := c.run(t, append(append([]string{"run", "--lock", "db-migrations", "--lock", "staging"}, id("api", 1)...), "--", "sh", "-c", script("api"))...)
	code, stderr := first.wait(t)
	require.Equal(t, 0, code, stderr)
	require.Equal(t, 0, o.code, o.stderr)

	for _, target := range []string{"db-migrations", "staging"} {
		assert.Regexp(t, regexp.MustCompile(fmt.Sprintf(`lock %q acquired by acme/web@main#1 after .*, fencing token \d+`, target)), stderr)
		assert.Contains(t, stderr, fmt.Sprintf("lock %q released", target))
	}
	assert.Contains(t, o.stderr, `waiting for lock "db-migrations": held by acme/web@main#1`, "the waiting line names the lock")
	data, err := os.ReadFile(trace)
	require.NoError(t, err)
	assert.Equal(t, "start web\nend web\nstart api\nend api\n", string(data), "one command at a time")
	assert.True(t, lockGone(t, c, "staging") && lockGone(t, c, "db-migrations"), "both released")
}

// TestIntegrationRunCancelInProgress: a newer build of the branch with
// --cancel-in-progress stops the older run's command (exit 3) and runs
// next; a lock taken with acquire is never interrupted.
func TestIntegrationRunCancelInProgress(t *testing.T) {
	t.Parallel()
	const ttl = "3s" // renewals, and so the stop, every second
	t.Run("an older run is stopped", func(t *testing.T) {
		t.Parallel()
		c := newCLI(t)
		marker := filepath.Join(t.TempDir(), "terminated")
		older := startRun(t, c, append(append([]string{"run", "--lock", "staging", "--ttl", ttl}, id("web", 41)...),
			"--", "sh", "-c", fmt.Sprintf("trap 'echo TERM > %s; exit 143' TERM; sleep 600 & wait", marker))...)
		older.waitFor(t, "running sh -c")
		o := c.run(t, append(append([]string{"run", "--lock", "staging", "--ttl", ttl, "--cancel-in-progress"}, id("web", 42)...), "--", "echo", "deployed 42")...)
		code, stderr := older.wait(t)
		assert.Equal(t, 3, code, "the older run exits 3 (superseded): %s", stderr)
		assert.Contains(t, stderr, `build acme/web@main#42 asked this run to stop (cancel-in-progress)`)
		assertInOrder(t, stderr, []string{"stopping the command with SIGTERM", `lock "staging" released`})
		data, err := os.ReadFile(marker)
		require.NoError(t, err, "the command got SIGTERM")
		assert.Equal(t, "TERM\n", string(data))
		require.Equal(t, 0, o.code, o.stderr)
		assert.Equal(t, "deployed 42\n", o.stdout, "the newer build ran next")
	})
	t.Run("an older run's job is aborted", func(t *testing.T) {
		t.Parallel()
		c := newCLI(t)
		older := startRun(t, c, append([]string{"run", "--lock", "staging", "--ttl", ttl, "-f", testenv.WriteJob(t, "deploy-41", "")}, id("web", 41)...)...)
		older.waitFor(t, `container "main" is running`)
		o := c.run(t, append(append([]string{"run", "--lock", "staging", "--ttl", ttl, "--cancel-in-progress"}, id("web", 42)...), "--", "echo", "deployed 42")...)
		code, stderr := older.wait(t)
		assert.Equal(t, 3, code, "the older run exits 3 (superseded): %s", stderr)
		assertInOrder(t, stderr, []string{
			`build acme/web@main#42 asked this run to stop (cancel-in-progress): aborting job "deploy-41"`,
			`job "deploy-41" aborted, pod "deploy-41" deleted`,
			`lock "staging" released`,
		})
		j := getJob(t, c, "deploy-41")
		assert.Equal(t, job.Aborted, j.Status.State)
		assert.Equal(t, job.ReasonSuperseded, j.Status.Reason)
		assertPodDeleted(t, c, "deploy-41")
		require.Equal(t, 0, o.code, o.stderr)
		assert.Equal(t, "deployed 42\n", o.stdout, "the newer build ran next")
	})
	t.Run("an acquire holder is not interrupted", func(t *testing.T) {
		t.Parallel()
		c := newCLI(t)
		o := c.run(t, append([]string{"acquire", "staging"}, id("web", 41)...)...)
		require.Equal(t, 0, o.code, o.stderr)
		p := startRun(t, c, append(append([]string{"run", "--lock", "staging", "--ttl", ttl, "--cancel-in-progress"}, id("web", 42)...), "--", "echo", "deployed 42")...)
		p.waitFor(t, `waiting for lock "staging": held by acme/web@main#41`)
		o = c.run(t, "status", "staging", "-o", "json")
		require.Equal(t, 0, o.code, o.stderr)
		assert.NotContains(t, o.stdout, "cancelRequest", "the acquire holder is not asked to stop")
		o = c.run(t, append([]string{"release", "staging"}, id("web", 41)...)...)
		require.Equal(t, 0, o.code, o.stderr)
		code, stderr := p.wait(t)
		require.Equal(t, 0, code, stderr)
		assert.Contains(t, stderr, `lock "staging" acquired by acme/web@main#42`)
	})
}
