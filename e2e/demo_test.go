package e2e

import (
	"bytes"
	"context"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestIntegrationDemo runs hack/demo.sh (make demo) against the test's
// control plane, its output going to pipes as in a CI log: it exits 0,
// writes no escape codes, says what the numbers it prints are, and tells
// the lock holder's CI build from the job's build ID, and ends with a
// write the API server admits before lockctl enforce and refuses after it.
func TestIntegrationDemo(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	_, file, _, _ := runtime.Caller(0)
	root := filepath.Join(filepath.Dir(file), "..")
	script := filepath.Join(root, "hack", "demo.sh")
	writer := filepath.Join(t.TempDir(), "localcluster")
	build := exec.CommandContext(t.Context(), "go", "build", "-o", writer, "./hack/localcluster")
	build.Dir = root
	out, err := build.CombinedOutput()
	require.NoError(t, err, "build hack/localcluster: %s", out)

	ctx, cancel := context.WithTimeout(t.Context(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, "bash", script)
	cmd.Env = slices.Concat(c.command(ctx).Env, []string{
		"LOCKCTL_DEMO_KUBECONFIG=" + c.kubeconfig,
		"LOCKCTL_BIN=" + lockctlBin,
		"LOCKCTL_DEMO_DIR=" + t.TempDir(),
		"LOCKCTL_LOCALCLUSTER_BIN=" + writer,
	})
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Run(), "demo:\n%s\n%s", stdout.String(), stderr.String())

	all := stdout.String() + stderr.String()
	assert.NotContains(t, all, "\033", "no escape codes when the output is not a terminal")
	assert.Regexp(t, `(?m)^acme/web#41 holds the lock with fencing token \d+: acquire prints it on stdout`, stdout.String(), "tokens are explained")
	assert.Regexp(t, `(?m)^acme/api#7 holds the lock with fencing token \d+$`, stdout.String(), "the waiter's token says whose it is")
	assert.NotRegexp(t, `(?m)^\d+$`, stdout.String(), "no bare numbers")
	assert.Contains(t, all, `lock "staging" acquired by acme/web@main#45`, "the holder's CI build is #45")
	assert.Regexp(t, `job "deploy-web-\w+" \(build ID 1 of job deploy-web\) succeeded`, all, "the job's build ID is named as such")
	assert.Contains(t, stdout.String(), "acme/web#42 exited with status 3 (3 = superseded)")
	assert.Contains(t, stdout.String(), "lockctl run exited with status 130 (130 = interrupted)")
	assert.Contains(t, stdout.String(), "mallory's write of configmap staging/app-config was admitted", "before lockctl enforce")
	assert.Regexp(t, `mallory's write of configmap staging/app-config was refused: .*lockctl refused this write: namespace staging is locked by acme/web@main#47`, stdout.String(), "after lockctl enforce")
}
