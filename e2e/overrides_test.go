package e2e

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// runWithEnv runs lockctl with extra environment variables.
func (c *cli) runWithEnv(t *testing.T, env []string, args ...string) outcome {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := c.command(ctx, args...)
	cmd.Env = append(cmd.Env, env...)
	return c.runCmd(t, cmd)
}

// TestIntegrationCLIOverridesNotFromEnvironment: overrides set in the
// environment, as a pipeline-level variable left behind would set them for
// every step, break nothing: LOCKCTL_FORCE=true and LOCKCTL_TOKEN do not
// release someone else's lock, LOCKCTL_IGNORE_FREEZE=true does not take a
// frozen one, and each says once that it was ignored (ADR 0054).
func TestIntegrationCLIOverridesNotFromEnvironment(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	o := c.run(t, append([]string{"acquire", "prod"}, id("web", 5)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	token := strings.TrimSpace(o.stdout)
	before, rv := lockRecord(t, c, "prod")

	o = c.runWithEnv(t, []string{"LOCKCTL_FORCE=true"}, append([]string{"release", "prod"}, id("api", 9)...)...)
	assert.Equal(t, 1, o.code, "not the holder, and --force not given: refused: %s", o.stderr)
	assert.Equal(t, 1, strings.Count(o.stderr, "warning: LOCKCTL_FORCE is ignored: --force is taken only from the command line; pass --force to mean it"),
		"reported once: %s", o.stderr)
	assert.NotContains(t, o.stderr, "broke lock")

	o = c.runWithEnv(t, []string{"LOCKCTL_TOKEN=" + token}, append([]string{"release", "prod"}, id("api", 9)...)...)
	assert.Equal(t, 1, o.code, "the token in the environment is not taken: %s", o.stderr)
	assert.Equal(t, 1, strings.Count(o.stderr, "warning: LOCKCTL_TOKEN is ignored"), "reported once: %s", o.stderr)

	after, rvAfter := lockRecord(t, c, "prod")
	assert.Equal(t, before, after, "the holder keeps the lock")
	assert.Equal(t, rv, rvAfter, "nothing written")

	o = c.run(t, "release", "prod", "--force")
	require.Equal(t, 0, o.code, "the flag on the command line still breaks it: %s", o.stderr)
	assert.Contains(t, o.stderr, `broke lock "prod" held by acme/web@main#5`)
	assert.NotContains(t, o.stderr, "warning:")

	o = c.run(t, append([]string{"freeze", "prod", "--for", "1h", "--reason", "release party"}, id("ops", 1)...)...)
	require.Equal(t, 0, o.code, o.stderr)
	o = c.runWithEnv(t, []string{"LOCKCTL_IGNORE_FREEZE=true"}, append([]string{"acquire", "prod", "--timeout", "2s"}, id("hotfix", 1)...)...)
	assert.Equal(t, 4, o.code, "frozen: waits, times out: %s", o.stderr)
	assert.Equal(t, 1, strings.Count(o.stderr, "warning: LOCKCTL_IGNORE_FREEZE is ignored: --ignore-freeze is taken only from the command line"),
		"reported once: %s", o.stderr)
	o = c.run(t, "status", "prod")
	require.Equal(t, 0, o.code, o.stderr)
	assert.NotContains(t, o.stdout, "acme/hotfix", "the freeze was not overridden")
	require.Equal(t, 0, c.run(t, "unfreeze", "prod").code)
}
