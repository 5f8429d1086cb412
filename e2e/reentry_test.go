package e2e

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/lock/record"
)

// queued waits until target's lock has n waiters.
func queued(t *testing.T, c *cli, target string, n int) {
	t.Helper()
	require.Eventually(t, func() bool { return len(decodedLock(t, c, target).Waiters) == n }, time.Minute, 50*time.Millisecond,
		"%d waiter(s) queue for %q", n, target)
}

// TestIntegrationRunReentersAPipelineHold is the pipeline of
// docs/locks.md's re-entrance: acquire --ttl 1h, two runs of the same
// build that re-enter the hold, then release. The hold stays through both
// runs with its claim and token and an expiry never shortened, and a
// contender waiting all along gets the lock only after the release.
func TestIntegrationRunReentersAPipelineHold(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	web812 := id("web", 812)

	a := c.run(t, append([]string{"acquire", "production", "--ttl", "1h"}, web812...)...)
	require.Equal(t, 0, a.code, a.stderr)
	token := strings.TrimSpace(a.stdout)

	other := startRun(t, c, append([]string{"acquire", "production", "--timeout", "100s", "--progress", "plain"}, id("api", 7)...)...)
	queued(t, c, "production", 1)
	before := decodedLock(t, c, "production")
	require.NotNil(t, before.Holder.Expires)
	require.Equal(t, token, before.Holder.Token, "the contender's write recorded the hold's token")

	for _, step := range []string{"migrate", "deploy"} {
		o := c.run(t, append(append([]string{"run", "--lock", "production"}, web812...), "--", "sh", "-c", "echo "+step)...)
		require.Equal(t, 0, o.code, "%s: %s", step, o.stderr)
		assert.Equal(t, step+"\n", o.stdout, step)
		assert.Contains(t, o.stderr, `lock "production" already held by acme/web@main#812 since `, step)
		assert.Contains(t, o.stderr, "fencing token "+token+"; this run re-enters the hold and leaves it held", step)
		assert.Contains(t, o.stderr, `lock "production" still held by acme/web@main#812: it was held before this run`, step)
		assert.NotContains(t, o.stderr, `lock "production" released`, step)

		rec := decodedLock(t, c, "production")
		assert.Equal(t, before.Holder.ClaimID, rec.Holder.ClaimID, "%s: still acquire's hold", step)
		assert.Equal(t, token, rec.Holder.Token, "%s: its token", step)
		require.NotNil(t, rec.Holder.Expires, step)
		assert.False(t, rec.Holder.Expires.Before(before.Holder.Expires), "%s: the expiry %s is not shortened (was %s)",
			step, rec.Holder.Expires.UTC(), before.Holder.Expires.UTC())
		assert.Len(t, rec.Waiters, 1, "%s: the contender still waits", step)
		select {
		case <-other.done:
			t.Fatalf("the contender got the lock after %s", step)
		default:
		}
	}

	rel := c.run(t, append([]string{"release", "production"}, web812...)...)
	require.Equal(t, 0, rel.code, rel.stderr)
	code, stderr := other.wait(t)
	require.Equal(t, 0, code, stderr)
	assert.Equal(t, "api", decodedLock(t, c, "production").Holder.Repo, "the contender holds it after the release")
}

// TestIntegrationRunRetriedAfterKilledRun: a run killed while it holds the
// lock leaves its hold until its TTL; a retried run of the same build
// re-enters it, runs, and leaves it as it was; the hold then ends at its
// expiry, and a contender waiting meanwhile takes the lock then.
func TestIntegrationRunRetriedAfterKilledRun(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	web813 := id("web", 813)

	dead := startRun(t, c, append(append([]string{"run", "--lock", "production", "--ttl", "20s", "--progress", "plain"}, web813...),
		"--", "sh", "-c", "exec sleep 25 </dev/null >/dev/null 2>&1")...)
	dead.waitFor(t, `lock "production" acquired by acme/web@main#813`)
	require.NoError(t, dead.cmd.Process.Kill())
	dead.wait(t)
	held := decodedLock(t, c, "production")
	require.Equal(t, "web", held.Holder.Repo)

	other := startRun(t, c, append([]string{"acquire", "production", "--timeout", "100s", "--progress", "plain"}, id("api", 8)...)...)
	queued(t, c, "production", 1)

	retry := c.run(t, append(append([]string{"run", "--lock", "production", "--ttl", "20s"}, web813...), "--", "true")...)
	require.Equal(t, 0, retry.code, retry.stderr)
	assert.Contains(t, retry.stderr, "this run re-enters the hold and leaves it held")
	assert.Contains(t, retry.stderr, `lock "production" still held by acme/web@main#813: it was held before this run`)
	rec := decodedLock(t, c, "production")
	assert.Equal(t, held.Holder.ClaimID, rec.Holder.ClaimID, "the killed run's hold lingers after the retry")
	assert.Len(t, rec.Waiters, 1, "the contender still waits")

	code, stderr := other.wait(t)
	require.Equal(t, 0, code, stderr)
	rec = decodedLock(t, c, "production")
	assert.Equal(t, "api", rec.Holder.Repo, "the contender takes the lock once the hold expired")
	require.NotEmpty(t, rec.History)
	last := rec.History[len(rec.History)-1]
	assert.Equal(t, "web", last.Repo, "the hold that ended is the killed run's")
	assert.Equal(t, held.Holder.Since, last.Since, "from the killed run's take")
	assert.Equal(t, record.EndExpired, last.Ended, "at its expiry")
}

// TestIntegrationRunReentersOneOfTwoLocks: run --lock a --lock b where the
// build holds a already: b, taken by the run, is released at its end; a
// is left held.
func TestIntegrationRunReentersOneOfTwoLocks(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	web814 := id("web", 814)
	a := c.run(t, append([]string{"acquire", "staging", "--ttl", "1h"}, web814...)...)
	require.Equal(t, 0, a.code, a.stderr)
	before := decodedLock(t, c, "staging")

	o := c.run(t, append(append([]string{"run", "--lock", "staging", "--lock", "qa"}, web814...), "--", "true")...)
	require.Equal(t, 0, o.code, o.stderr)
	assert.Contains(t, o.stderr, `lock "staging" still held by acme/web@main#814: it was held before this run`)
	assert.Contains(t, o.stderr, `lock "qa" released`)
	assert.True(t, lockGone(t, c, "qa"), "the lock the run took is released")
	rec := decodedLock(t, c, "staging")
	assert.Equal(t, before.Holder.ClaimID, rec.Holder.ClaimID, "the lock re-entered stays held")
	assert.False(t, rec.Holder.Expires.Before(before.Holder.Expires), "its expiry is not shortened")
}
