package e2e

import (
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock/record"
)

// lockRecord reads target's lock record and its resourceVersion.
func lockRecord(t *testing.T, c *cli, target string) (string, string) {
	t.Helper()
	cm, err := testenv.Get(t).Client.CoreV1().ConfigMaps(c.namespace).Get(t.Context(), record.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	return cm.Annotations[record.RecordAnnotation], cm.ResourceVersion
}

// TestIntegrationCLIReleaseByToken releases with the fencing token acquire
// printed, from another identity: a wrong token changes nothing.
func TestIntegrationCLIReleaseByToken(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	o := c.run(t, append([]string{"acquire", "staging"}, id("web", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	token := strings.TrimSpace(o.stdout)
	n, err := strconv.ParseUint(token, 10, 64)
	require.NoError(t, err, "acquire prints the token: %q", o.stdout)
	before, rv := lockRecord(t, c, "staging")

	wrong := strconv.FormatUint(n+1, 10)
	o = c.run(t, append([]string{"release", "staging", "--token", wrong}, id("other", 9)...)...)
	assert.Equal(t, 1, o.code, "a wrong token is refused: %s", o.stderr)
	assert.Contains(t, o.stderr, `error: release lock "staging": lock on "staging" is held by acme/web@main#1 under fencing token `+token+", not "+wrong+"; nothing released")
	assert.Contains(t, o.stderr, "hint: give the token `lockctl acquire` printed")
	after, rvAfter := lockRecord(t, c, "staging")
	assert.Equal(t, before, after, "nothing changed")
	assert.Equal(t, rv, rvAfter, "nothing written")

	o = c.run(t, append([]string{"release", "staging", "--token", token}, id("other", 9)...)...)
	require.Equal(t, 0, o.code, "the right token releases whoever asks: %s", o.stderr)
	assert.Contains(t, o.stderr, `lock "staging" released (held by acme/web@main#1 under fencing token `+token+")")
	assert.True(t, lockGone(t, c, "staging"))

	// After a re-entrant acquire and a waiter's renewal, the token recorded
	// in the lock still releases it.
	o = c.run(t, append([]string{"acquire", "staging"}, id("web", 2)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	token = strings.TrimSpace(o.stdout)
	o = c.run(t, append([]string{"acquire", "staging", "--timeout", "2s"}, id("api", 1)...)...)
	require.Equal(t, 4, o.code, "the waiter times out: %s", o.stderr)
	o = c.run(t, "release", "staging", "--token", token)
	require.Equal(t, 0, o.code, "released by token after other writes: %s", o.stderr)
	assert.True(t, lockGone(t, c, "staging"))
}

// TestIntegrationCLIAcquireNoWait: --no-wait takes a free lock, and on a
// held one says who holds it and exits 4 without queueing.
func TestIntegrationCLIAcquireNoWait(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	o := c.run(t, append([]string{"acquire", "staging", "--no-wait"}, id("web", 1)...)...)
	require.Equal(t, 0, o.code, "a free lock is taken: %s", o.stderr)
	before, rv := lockRecord(t, c, "staging")

	o = c.run(t, append([]string{"acquire", "staging", "--no-wait"}, id("api", 1)...)...)
	assert.Equal(t, 4, o.code, "held: exit 4: %s", o.stderr)
	assert.Contains(t, o.stderr, `error: acquire lock "staging": lock on "staging" is held by acme/web@main#1 since `)
	assert.Contains(t, o.stderr, "hint: try again later")
	assert.NotContains(t, o.stderr, "waiting for lock", "no progress: it never waited")
	after, rvAfter := lockRecord(t, c, "staging")
	assert.Equal(t, before, after, "not queued")
	assert.Equal(t, rv, rvAfter, "nothing written")

	o = c.run(t, append([]string{"acquire", "staging", "--no-wait", "--timeout", "1m"}, id("api", 1)...)...)
	assert.Equal(t, 2, o.code, "--no-wait with --timeout is a usage error: %s", o.stderr)
}

// TestIntegrationCLITimeouts: a wait that times out exits 4 with a message
// saying so, even when the deadline passes before the first request.
func TestIntegrationCLITimeouts(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	o := c.run(t, append([]string{"acquire", "staging", "--timeout", "1ns"}, id("web", 1)...)...)
	assert.Equal(t, 4, o.code, "timed out: %s", o.stderr)
	assert.Contains(t, o.stderr, `error: acquire lock "staging": timed out after `)
	assert.Contains(t, o.stderr, `waiting for lock on "staging", before the lock could be read`)
	assert.NotContains(t, o.stderr, "deadline exceeded")
	assert.True(t, lockGone(t, c, "staging"), "the lock is left as it was found")

	require.Equal(t, 0, c.run(t, append([]string{"acquire", "staging"}, id("web", 1)...)...).code)
	o = c.run(t, append([]string{"acquire", "staging", "--timeout", "1s"}, id("api", 1)...)...)
	assert.Equal(t, 4, o.code, "timed out: %s", o.stderr)
	assert.Regexp(t, `timed out after \d+s waiting for lock on "staging", held by acme/web@main#1 since `, o.stderr)
	assert.NotContains(t, o.stderr, "deadline exceeded")
	cm, err := testenv.Get(t).Client.CoreV1().ConfigMaps(c.namespace).Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	rec, err := record.Decode(cm)
	require.NoError(t, err)
	assert.Empty(t, rec.Waiters, "the waiter left the queue")
	assert.Equal(t, "1", rec.Holder.Build, "the holder is unchanged")
}
