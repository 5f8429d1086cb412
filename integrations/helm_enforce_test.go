package integrations_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/deploytools"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// TestIntegrationHelmEnforced runs real Helm 3 and Helm 4 against a lock
// enforced in deny mode and in strict mode, as docs/helm.md tells users
// to: two pipeline runs of one service account (each with a token of its
// own) and another user. The holder's install, upgrade, rollback and
// uninstall are admitted; another user's upgrade is refused at Helm's
// first write (its release record), so the release is untouched; in
// strict mode the stale run's upgrade after the hand-over is refused the
// same way. After every refusal `helm history` shows no pending-*
// release, and the next holder's upgrade works.
func TestIntegrationHelmEnforced(t *testing.T) {
	env := testenv.Get(t)
	for _, major := range []int{3, 4} {
		for _, strict := range []bool{false, true} {
			t.Run(fmt.Sprintf("helm %d, strict %t", major, strict), func(t *testing.T) {
				t.Parallel()
				helmEnforced(t, env, major, strict)
			})
		}
	}
}

func helmEnforced(t *testing.T, env *testenv.Env, major int, strict bool) {
	ctx := t.Context()
	target, lockNS := env.Namespace(t), env.Namespace(t)
	_, err := env.Client.CoreV1().ServiceAccounts(lockNS).Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	deploy := []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/scale", "replicasets"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"configmaps", "secrets", "services", "serviceaccounts", "pods"}, Verbs: all},
		{APIGroups: []string{"autoscaling"}, Resources: []string{"horizontalpodautoscalers"}, Verbs: all},
		{APIGroups: []string{"networking.k8s.io"}, Resources: []string{"ingresses"}, Verbs: all},
	}
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: lockNS, Name: "deployer"}
	mallory := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: "mallory"}
	env.Grant(t, target, "deployer", sa, deploy)
	env.Grant(t, target, "mallory", mallory, deploy)
	env.Grant(t, lockNS, "deployer", sa, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}},
	})

	lockctl := func(kubeconfig string, args ...string) clitest.Outcome {
		t.Helper()
		return clitest.Run(t, time.Minute, t.TempDir(), []string{"KUBECONFIG=" + kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + lockNS}, args...)
	}
	args := []string{"enforce", target, "--mode", "deny"}
	if strict {
		args = append(args, "--strict")
	}
	o := lockctl(env.Kubeconfig, args...)
	require.Zero(t, o.Code, o.Stderr)

	runs := []string{tokenKubeconfig(t, env, lockNS, "deployer"), tokenKubeconfig(t, env, lockNS, "deployer")}
	base := deploytools.NewHelm(t, major, env.Kubeconfig, deploytools.LockctlPath(t))
	if major == 4 {
		require.NoError(t, base.InstallStampPlugin(ctx))
	}
	chart, err := base.Create(ctx, t.TempDir(), "web")
	require.NoError(t, err)
	hold := func(run int) *deploytools.Helm {
		t.Helper()
		o := lockctl(runs[run], "acquire", target, "--owner", "acme", "--repo", "web", "--branch", "main", "--build", fmt.Sprint(run+1))
		require.Zero(t, o.Code, o.Stderr)
		token := strings.TrimSpace(o.Stdout)
		return base.As(runs[run], deploytools.LockctlPath(t), "LOCKCTL_FENCING_TOKEN="+token)
	}
	upgrade := func(h *deploytools.Helm, replicas int) (string, error) {
		return h.Run(ctx, append([]string{"upgrade", "--install", "web", chart, "-n", target, "--set", fmt.Sprintf("replicaCount=%d", replicas)}, h.StampArgs()...)...)
	}
	statuses := func() []string {
		t.Helper()
		revs, err := base.History(ctx, "web", target)
		require.NoError(t, err)
		assert.Empty(t, deploytools.Pending(revs), "no release is left pending")
		return deploytools.Statuses(revs)
	}

	first := hold(0)
	out, err := upgrade(first, 1)
	require.NoError(t, err, "the holder's install: %s", out)
	out, err = upgrade(first, 2)
	require.NoError(t, err, "the holder's upgrade: %s", out)
	out, err = first.Run(ctx, "rollback", "web", "1", "-n", target)
	require.NoError(t, err, "the holder's rollback: %s", out)
	assert.Equal(t, []string{"superseded", "superseded", "deployed"}, statuses())

	other := base.As(deploytools.KubeconfigAs(t, env.Kubeconfig, "mallory"), deploytools.LockctlPath(t), "LOCKCTL_FENCING_TOKEN=0")
	out, err = upgrade(other, 3)
	require.Error(t, err, "another user's upgrade: %s", out)
	assert.Contains(t, out, "lockctl refused this write")
	assert.Equal(t, []string{"superseded", "superseded", "deployed"}, statuses(), "refused before Helm wrote anything")

	o = lockctl(runs[0], "release", target, "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1")
	require.Zero(t, o.Code, o.Stderr)
	second := hold(1)
	if strict {
		out, err = upgrade(first, 4)
		require.Error(t, err, "the stale run's upgrade after the hand-over: %s", out)
		assert.Contains(t, out, "lockctl refused this write")
		assert.Equal(t, []string{"superseded", "superseded", "deployed"}, statuses(), "refused before Helm wrote anything")
	}
	out, err = upgrade(second, 5)
	require.NoError(t, err, "the next holder's upgrade: %s", out)
	out, err = second.Run(ctx, "rollback", "web", "3", "-n", target)
	require.NoError(t, err, "the next holder's rollback: %s", out)
	assert.Equal(t, []string{"superseded", "superseded", "superseded", "superseded", "deployed"}, statuses())
	out, err = second.Run(ctx, "uninstall", "web", "-n", target)
	require.NoError(t, err, "the holder's uninstall: %s", out)
	_, err = env.Client.AppsV1().Deployments(target).Get(ctx, "web", metav1.GetOptions{})
	assert.Error(t, err, "uninstalled")
	o = lockctl(runs[1], "release", target, "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "2")
	require.Zero(t, o.Code, o.Stderr)
	o = lockctl(env.Kubeconfig, "enforce", target, "--uninstall")
	require.Zero(t, o.Code, o.Stderr)
}
