package integrations_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// tokenKubeconfig writes a kubeconfig of env's cluster whose user is a
// new token of service account ns/name (TokenRequest, as `kubectl create
// token` makes one per pipeline run), and returns its path.
func tokenKubeconfig(t *testing.T, env *testenv.Env, ns, name string) string {
	t.Helper()
	tok, err := env.Client.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), name, &authenticationv1.TokenRequest{}, metav1.CreateOptions{})
	require.NoError(t, err)
	cfg, err := clientcmd.LoadFromFile(env.Kubeconfig)
	require.NoError(t, err)
	ctx := cfg.Contexts[cfg.CurrentContext]
	cfg.AuthInfos = map[string]*clientcmdapi.AuthInfo{"pipeline": {Token: tok.Status.Token}}
	ctx.AuthInfo = "pipeline"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// TestKubectlStrictStalePipeline: two pipeline runs of one service
// account, each with a token of its own, take a strict lock in turn.
// After the hand-over, the first run's kubectl set image, patch, label,
// scale and rollout restart are refused, though the objects carry the
// new hold's token from the second run's apply; the second run's are
// admitted: the hold recorded the credential it was taken with.
func TestKubectlStrictStalePipeline(t *testing.T) {
	kubectl := tool(t, "kubectl")
	env := testenv.Get(t)
	target, lockNS := env.Namespace(t), env.Namespace(t)
	_, err := env.Client.CoreV1().ServiceAccounts(lockNS).Create(t.Context(), &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "deployer"}}, metav1.CreateOptions{})
	require.NoError(t, err)
	sa := rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: lockNS, Name: "deployer"}
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	env.Grant(t, target, "deployer", sa, []rbacv1.PolicyRule{
		{APIGroups: []string{"apps"}, Resources: []string{"deployments", "deployments/scale"}, Verbs: all},
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
	})
	env.Grant(t, lockNS, "deployer", sa, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all},
		{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}},
	})
	run := func(kubeconfig string) (func(args ...string) clitest.Outcome, func(args ...string) (string, error)) {
		home := t.TempDir()
		vars := []string{"KUBECONFIG=" + kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + lockNS}
		lockctl := func(args ...string) clitest.Outcome {
			t.Helper()
			return clitest.Run(t, time.Minute, home, vars, args...)
		}
		kc := func(args ...string) (string, error) {
			t.Helper()
			cmd := exec.CommandContext(t.Context(), kubectl, append([]string{"--kubeconfig", kubeconfig, "-n", target}, args...)...)
			out, err := cmd.CombinedOutput()
			return string(out), err
		}
		return lockctl, kc
	}
	admin, _ := run(env.Kubeconfig)
	o := admin("enforce", target, "--mode", "deny", "--strict")
	require.Zero(t, o.Code, o.Stderr)

	first, firstKubectl := run(tokenKubeconfig(t, env, lockNS, "deployer"))
	second, secondKubectl := run(tokenKubeconfig(t, env, lockNS, "deployer"))
	manifest := "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: web, image: nginx:1}]\n"
	apply := func(kc func(args ...string) (string, error), token string) (string, error) {
		cmd := exec.CommandContext(t.Context(), clitest.Binary(t), "stamp", "--token", token)
		cmd.Stdin = strings.NewReader(manifest)
		stamped, err := cmd.Output()
		require.NoError(t, err)
		path := filepath.Join(t.TempDir(), "web.yaml")
		require.NoError(t, os.WriteFile(path, stamped, 0o600))
		return kc("apply", "-f", path)
	}
	id := func(build string) []string {
		return []string{"--owner", "acme", "--repo", "web", "--branch", "main", "--build", build}
	}

	o = first(append([]string{"acquire", target}, id("1")...)...)
	require.Zero(t, o.Code, o.Stderr)
	out, err := apply(firstKubectl, strings.TrimSpace(o.Stdout))
	require.NoError(t, err, "the first run's stamped apply: %s", out)
	o = first(append([]string{"release", target}, id("1")...)...)
	require.Zero(t, o.Code, o.Stderr)
	o = second(append([]string{"acquire", target}, id("2")...)...)
	require.Zero(t, o.Code, o.Stderr)
	out, err = apply(secondKubectl, strings.TrimSpace(o.Stdout))
	require.NoError(t, err, "the second run's stamped apply: %s", out)

	stale := [][]string{
		{"set", "image", "deployment/web", "web=nginx:2"},
		{"patch", "deployment", "web", "--type=merge", "-p", `{"spec":{"minReadySeconds":5}}`},
		{"label", "deployment", "web", "tier=front"},
		{"scale", "deployment", "web", "--replicas=3"},
		{"rollout", "restart", "deployment/web"},
	}
	for _, args := range stale {
		out, err := firstKubectl(args...)
		assert.Error(t, err, "the stale run's kubectl %s: %s", args[0], out)
		assert.Contains(t, out, "lockctl refused this write", "kubectl %s", args[0])
	}
	for _, args := range stale {
		out, err := secondKubectl(args...)
		assert.NoError(t, err, "the holder's kubectl %s: %s", args[0], out)
	}
	o = second(append([]string{"release", target}, id("2")...)...)
	require.Zero(t, o.Code, o.Stderr)
	o = admin("enforce", target, "--uninstall")
	require.Zero(t, o.Code, o.Stderr)
}
