package e2e

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// gitCheckout makes a directory that looks like a clone of acme/shop on
// branch feature, without a git binary.
func gitCheckout(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(dir, ".git"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "HEAD"), []byte("ref: refs/heads/feature\n"), 0o644))
	require.NoError(t, os.WriteFile(filepath.Join(dir, ".git", "config"),
		[]byte("[remote \"origin\"]\n\turl = git@git.example:acme/shop.git\n"), 0o644))
	return dir
}

// TestIntegrationCLILocalIdentity runs the README's first example from a
// clean environment (no CI variables, no identity flags) in a git
// checkout: acquire, wait, release from the same shell works; another
// terminal session is another holder.
func TestIntegrationCLILocalIdentity(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	dir := gitCheckout(t)
	host, err := os.Hostname()
	require.NoError(t, err)

	script := fmt.Sprintf("%[1]s acquire staging && sleep 1.2; %[1]s status staging; %[1]s release staging", lockctlBin)
	cmd := c.command(t.Context(), "unused")
	cmd.Path, cmd.Args, cmd.Dir = "/bin/sh", []string{"sh", "-c", script}, dir
	o := c.runCmd(t, cmd)
	require.Equal(t, 0, o.code, "acquire; sleep; release from one shell: %s", o.stderr)
	assert.Regexp(t, `^\d+\n`, o.stdout, "acquire prints the fencing token")
	assert.Regexp(t, fmt.Sprintf(`lock "staging" acquired by [^/]+@%s/shop@feature#\d+`, host), o.stderr, "local identity from user, host and the checkout")
	assert.Contains(t, o.stderr, `lock "staging" released`)
	assert.True(t, lockGone(t, c, "staging"))

	// The lock taken in this session is not another terminal's to release.
	acq := c.command(t.Context(), "acquire", "staging")
	acq.Dir = dir
	o = c.runCmd(t, acq)
	require.Equal(t, 0, o.code, o.stderr)
	other := c.command(t.Context(), "release", "staging")
	other.Dir = dir
	other.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	o = c.runCmd(t, other)
	assert.Equal(t, 1, o.code, "another terminal session is another holder: %s", o.stderr)
	assert.Contains(t, o.stderr, "/shop@feature#", "the message names the holder")
	rel := c.command(t.Context(), "release", "staging")
	rel.Dir = dir
	o = c.runCmd(t, rel)
	require.Equal(t, 0, o.code, o.stderr)
	assert.True(t, lockGone(t, c, "staging"))

	// In a PID namespace whose session leader is outside it (containers,
	// sandboxed CI jobs) getsid reports 0; the shell stands in for the
	// session there.
	sandboxed := c.command(t.Context(), "unused")
	sandboxed.Path, sandboxed.Args, sandboxed.Dir = "/bin/sh", []string{"sh", "-c", script}, dir
	sandboxed.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWPID}
	var stderr strings.Builder
	sandboxed.Stderr = &stderr
	err = sandboxed.Run()
	if errors.Is(err, syscall.EPERM) {
		t.Log("no permission for a PID namespace here; the sandboxed case is not run")
		return
	}
	require.NoError(t, err, "acquire; sleep; release from one shell in a PID namespace: %s", stderr.String())
	assert.True(t, lockGone(t, c, "staging"))
}

// TestIntegrationRunLocalFirstComeFirstServed starts three runs of one
// developer on one lock at once, without identity flags: they queue and
// all run, none superseded.
func TestIntegrationRunLocalFirstComeFirstServed(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	dir := gitCheckout(t)
	var wg sync.WaitGroup
	outcomes := make([]outcome, 3)
	for i := range outcomes {
		wg.Go(func() {
			cmd := c.command(t.Context(), "run", "--lock", "two", "--progress", "plain", "--", "sh", "-c", "sleep 0.5")
			cmd.Dir = dir
			outcomes[i] = c.runCmd(t, cmd)
		})
	}
	wg.Wait()
	for i, o := range outcomes {
		assert.Equal(t, 0, o.code, "run %d is served in turn, not superseded: %s", i, o.stderr)
		assert.NotContains(t, o.stderr, "superseded", "run %d", i)
	}
	assert.True(t, lockGone(t, c, "two"))
}
