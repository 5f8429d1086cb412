package integrations_test

import (
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// TestKubectlApplyStamped runs what docs/enforcement.md tells a strict
// lock's users to run, with real kubectl: `lockctl stamp | kubectl apply
// -f -`. Under the hold the stamped apply is admitted, the unstamped one
// refused with the policy's message; after the lock changed hands, the old
// token is refused too.
func TestKubectlApplyStamped(t *testing.T) {
	kubectl := tool(t, "kubectl")
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	home := t.TempDir()
	vars := []string{"KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + lockNS}
	lockctl := func(args ...string) clitest.Outcome {
		t.Helper()
		return clitest.Run(t, time.Minute, home, vars, args...)
	}
	manifest := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n  namespace: " + target + "\ndata:\n  build: \"1\"\n---\napiVersion: v1\nkind: Service\nmetadata:\n  name: web\n  namespace: " + target + "\nspec:\n  ports: [{port: 80}]\n"
	apply := func(stdin string) (string, error) {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), kubectl, "--kubeconfig", env.Kubeconfig, "apply", "-f", "-")
		cmd.Stdin = strings.NewReader(stdin)
		out, err := cmd.CombinedOutput()
		return string(out), err
	}
	stamp := func(token string) string {
		t.Helper()
		cmd := exec.CommandContext(t.Context(), clitest.Binary(t), "stamp", "--token", token)
		cmd.Stdin = strings.NewReader(manifest)
		out, err := cmd.Output()
		require.NoError(t, err)
		return string(out)
	}

	o := lockctl("enforce", target, "--mode", "deny", "--strict")
	require.Zero(t, o.Code, o.Stderr)
	o = lockctl("acquire", target, "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1")
	require.Zero(t, o.Code, o.Stderr)
	first := strings.TrimSpace(o.Stdout)

	out, err := apply(manifest)
	require.Error(t, err, "an unstamped apply is refused: %s", out)
	assert.Contains(t, out, "lockctl refused this write")
	assert.Contains(t, out, "does not carry the fencing token "+first)

	out, err = apply(stamp(first))
	require.NoError(t, err, "the stamped apply is admitted: %s", out)
	assert.Contains(t, out, "configmap/app created")
	assert.Contains(t, out, "service/web created")

	o = lockctl("release", target, "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1")
	require.Zero(t, o.Code, o.Stderr)
	o = lockctl("acquire", target, "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "2")
	require.Zero(t, o.Code, o.Stderr)
	second := strings.TrimSpace(o.Stdout)
	require.NotEqual(t, first, second)

	out, err = apply(strings.ReplaceAll(stamp(first), `build: "1"`, `build: "2"`))
	require.Error(t, err, "the old hold's token is refused: %s", out)
	assert.Contains(t, out, "does not carry the fencing token "+second)
	out, err = apply(strings.ReplaceAll(stamp(second), `build: "1"`, `build: "2"`))
	require.NoError(t, err, "the new hold's token is admitted: %s", out)
	assert.Contains(t, out, "configmap/app configured")

	o = lockctl("release", target, "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "2")
	require.Zero(t, o.Code, o.Stderr)
	o = lockctl("enforce", target, "--uninstall")
	require.Zero(t, o.Code, o.Stderr)
}
