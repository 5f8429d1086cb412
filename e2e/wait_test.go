package e2e

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
)

// TestIntegrationCLIWaitAndLogsExitStatus waits for jobs driven by a
// reconcile loop as a pipeline would, with lockctl wait and lockctl logs
// -f: each exits with the job's status (0 succeeded, 5 failed, 1 aborted),
// wait exits 4 when its --timeout passes first, and 1 for a job that does
// not exist.
func TestIntegrationCLIWaitAndLogsExitStatus(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	loop := startRun(t, c, "reconcile")
	loop.waitFor(t, "reconciling jobs")
	for name, code := range map[string]string{"wait-ok": "0", "wait-bad": "3", "wait-forever": ""} {
		o := c.run(t, "submit", "-f", testenv.WriteJob(t, name, code))
		require.Equal(t, 0, o.code, "submit %s: %s", name, o.stderr)
	}

	o := c.run(t, "wait", "wait-ok")
	assert.Equal(t, 0, o.code, o.stderr)
	assert.Regexp(t, `^job "wait-ok" \(build ID \d+ of job deploy-web\) succeeded after \S+\n$`, o.stdout)

	o = c.run(t, "wait", "wait-bad")
	assert.Equal(t, 5, o.code, "a failed job: %s", o.stderr)
	assert.Regexp(t, `^job "wait-bad" \(build ID \d+ of job deploy-web\) failed after \S+: container "main" exited with code 3\n$`, o.stdout)

	o = c.run(t, "wait", "wait-ok", "wait-bad", "--for", "finished")
	assert.Equal(t, 0, o.code, "both ended: %s", o.stderr)

	o = c.run(t, "wait", "wait-bad", "-o", "json")
	assert.Equal(t, 5, o.code, o.stderr)
	var j job.Job
	require.NoError(t, json.Unmarshal([]byte(o.stdout), &j), o.stdout)
	assert.Equal(t, job.Failure, j.Status.State)

	o = c.run(t, "logs", "wait-bad", "-f")
	assert.Equal(t, 5, o.code, "logs -f of a failed job: %s", o.stderr)
	assert.Equal(t, kwokLog, o.stdout)
	assert.Regexp(t, `job "wait-bad" \(build ID \d+ of job deploy-web\) failed after`, o.stderr)
	o = c.run(t, "logs", "wait-ok", "-f")
	assert.Equal(t, 0, o.code, "logs -f of a job that succeeded: %s", o.stderr)

	o = c.run(t, "wait", "wait-forever", "--timeout", "2s")
	assert.Equal(t, 4, o.code, "the wait timed out: %s", o.stderr)
	assert.Contains(t, o.stderr, `error: job "wait-forever" did not end within 2s: timed out waiting`)
	assert.Empty(t, o.stdout)

	o = c.run(t, "wait", "nosuch")
	assert.Equal(t, 1, o.code, o.stderr)
	assert.Contains(t, o.stderr, `"nosuch"`)

	// Waiting while someone aborts the job: wait ends with it.
	waiting := startRun(t, c, "wait", "wait-forever")
	waiting.waitFor(t, `waiting for job "wait-forever" to end`)
	o = c.run(t, "abort", "wait-forever")
	require.Equal(t, 0, o.code, o.stderr)
	code, stderr := waiting.wait(t)
	assert.Equal(t, 1, code, "an aborted job: %s", stderr)
}
