package integrations_test

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/deploytools"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// acquired takes target's lock as a pipeline would, in lockNS, and returns
// the fencing token acquire printed.
func acquired(t *testing.T, env *testenv.Env, target, lockNS string, args ...string) string {
	t.Helper()
	o := clitest.Run(t, time.Minute, t.TempDir(), []string{"KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + lockNS},
		append([]string{"acquire", target, "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1"}, args...)...)
	require.Zero(t, o.Code, o.Stderr)
	return strings.TrimSpace(o.Stdout)
}

// assertStamped checks that the objects `helm create`'s chart installs as
// release web (its Deployment, Service and ServiceAccount, all named web)
// carry token.
func assertStamped(t *testing.T, env *testenv.Env, ns, token string) {
	t.Helper()
	ctx := t.Context()
	d, err := env.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, token, d.Annotations[enforce.TokenAnnotation], "the Deployment carries the token")
	s, err := env.Client.CoreV1().Services(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, token, s.Annotations[enforce.TokenAnnotation], "the Service carries the token")
	sa, err := env.Client.CoreV1().ServiceAccounts(ns).Get(ctx, "web", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, token, sa.Annotations[enforce.TokenAnnotation], "the ServiceAccount carries the token")
}

// TestIntegrationHelm3PostRenderer runs Helm 3's contract as docs/helm.md
// gives it, with real Helm 3: `helm upgrade --install … --post-renderer
// lockctl --post-renderer-args stamp` with $LOCKCTL_FENCING_TOKEN set
// stamps every object of the release with the hold's token. Without a
// token, lockctl stamp fails and Helm writes nothing: no release, no
// object.
func TestIntegrationHelm3PostRenderer(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ctx := t.Context()
	ns, lockNS := env.Namespace(t), env.Namespace(t)
	helm := deploytools.NewHelm(t, 3, env.Kubeconfig, deploytools.LockctlPath(t))
	chart, err := helm.Create(ctx, t.TempDir(), "web")
	require.NoError(t, err)
	upgrade := append([]string{"upgrade", "--install", "web", chart, "-n", ns}, helm.StampArgs()...)

	out, err := helm.Run(ctx, upgrade...)
	require.Error(t, err, "no token, no release: %s", out)
	assert.Contains(t, out, "no fencing token: pass --token TOKEN, or run under lockctl run, which sets $LOCKCTL_FENCING_TOKEN")
	_, err = helm.History(ctx, "web", ns)
	require.Error(t, err, "no release was written")
	_, err = env.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	require.Error(t, err, "no object was written")

	token := acquired(t, env, ns, lockNS)
	helm = helm.As(env.Kubeconfig, deploytools.LockctlPath(t), "LOCKCTL_FENCING_TOKEN="+token)
	out, err = helm.Run(ctx, upgrade...)
	require.NoError(t, err, out)
	assertStamped(t, env, ns, token)
	revs, err := helm.History(ctx, "web", ns)
	require.NoError(t, err)
	assert.Equal(t, []string{"deployed"}, deploytools.Statuses(revs))
}

// TestIntegrationHelm4Plugin installs the post-renderer plugin shipped in
// plugins/helm/lockctl-stamp with real Helm 4, from the repository and
// from the release's archive (hack/helm-plugin, as a release writes it),
// and deploys with `--post-renderer lockctl-stamp`: every object of the
// release carries the hold's token.
func TestIntegrationHelm4Plugin(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ctx := t.Context()
	ns, lockNS := env.Namespace(t), env.Namespace(t)
	token := acquired(t, env, ns, lockNS)

	t.Run("from the repository", func(t *testing.T) {
		helm := deploytools.NewHelm(t, 4, env.Kubeconfig, deploytools.LockctlPath(t), "LOCKCTL_FENCING_TOKEN="+token)
		require.NoError(t, helm.InstallStampPlugin(ctx))
		out, err := helm.Run(ctx, "plugin", "list")
		require.NoError(t, err, out)
		assert.Regexp(t, `(?m)^lockctl-stamp\s+0\.0\.0-dev\s+postrenderer/v1\b`, out)
		chart, err := helm.Create(ctx, t.TempDir(), "web")
		require.NoError(t, err)
		out, err = helm.Run(ctx, append([]string{"upgrade", "--install", "web", chart, "-n", ns}, helm.StampArgs()...)...)
		require.NoError(t, err, out)
		assertStamped(t, env, ns, token)
	})

	t.Run("from the release archive", func(t *testing.T) {
		archive := filepath.Join(t.TempDir(), "lockctl-stamp-1.2.3.tgz")
		gen := exec.CommandContext(ctx, "go", "run", "./hack/helm-plugin", "-version", "v1.2.3", "-o", archive)
		gen.Dir = repoRoot()
		out, err := gen.CombinedOutput()
		require.NoError(t, err, "hack/helm-plugin: %s", out)

		helm := deploytools.NewHelm(t, 4, env.Kubeconfig, deploytools.LockctlPath(t), "LOCKCTL_FENCING_TOKEN="+token)
		o, err := helm.Run(ctx, "plugin", "install", archive)
		require.Error(t, err, "an archive without a signature is refused by default: %s", o)
		o, err = helm.Run(ctx, "plugin", "install", archive, "--verify=false")
		require.NoError(t, err, o)
		o, err = helm.Run(ctx, "plugin", "list")
		require.NoError(t, err, o)
		assert.Regexp(t, `(?m)^lockctl-stamp\s+1\.2\.3\s+postrenderer/v1\b`, o)
		chart, err := helm.Create(ctx, t.TempDir(), "web")
		require.NoError(t, err)
		o, err = helm.Run(ctx, "upgrade", "--install", "web", chart, "-n", ns, "--post-renderer", "lockctl-stamp", "--set", "replicaCount=2")
		require.NoError(t, err, o)
		assertStamped(t, env, ns, token)
		revs, err := helm.History(ctx, "web", ns)
		require.NoError(t, err)
		assert.Equal(t, []string{"superseded", "deployed"}, deploytools.Statuses(revs))
	})
}

// TestIntegrationHelmAsUser runs a release's whole life with Helm 3 and
// Helm 4 as a user of their own (deploytools.KubeconfigAs), as the tests of
// the fence do: install, upgrade, rollback and uninstall succeed, and
// `helm history` shows every revision settled, none pending.
func TestIntegrationHelmAsUser(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	for _, major := range []int{3, 4} {
		t.Run(fmt.Sprintf("helm %d", major), func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			ns := env.Namespace(t)
			user := fmt.Sprintf("alice-%d@example.com", major)
			helm := deploytools.NewHelm(t, major, deploytools.KubeconfigAs(t, env.Kubeconfig, user))

			out, err := helm.Run(ctx, "list", "-n", ns)
			require.Error(t, err, "before any grant the user may not read releases: %s", out)
			assert.Contains(t, out, fmt.Sprintf(`User "%s" cannot list resource "secrets"`, user), "Helm acts as the user")
			env.Grant(t, ns, "deployer", rbacv1.Subject{Kind: rbacv1.UserKind, Name: user},
				[]rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}})

			chart, err := helm.Create(ctx, t.TempDir(), "web")
			require.NoError(t, err)
			history := func(want ...string) {
				t.Helper()
				revs, err := helm.History(ctx, "web", ns)
				require.NoError(t, err)
				assert.Equal(t, want, deploytools.Statuses(revs))
				assert.Empty(t, deploytools.Pending(revs))
			}
			run := func(args ...string) {
				t.Helper()
				out, err := helm.Run(ctx, append(args, "-n", ns)...)
				require.NoError(t, err, out)
			}
			run("install", "web", chart)
			history("deployed")
			run("upgrade", "web", chart, "--set", "replicaCount=2")
			history("superseded", "deployed")
			run("rollback", "web", "1")
			history("superseded", "superseded", "deployed")
			d, err := env.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, int32(1), *d.Spec.Replicas, "rolled back to revision 1")
			run("uninstall", "web")
			secrets, err := env.Client.CoreV1().Secrets(ns).List(ctx, metav1.ListOptions{LabelSelector: "owner=helm,name=web"})
			require.NoError(t, err)
			assert.Empty(t, secrets.Items, "the release's Secrets are gone")
			_, err = env.Client.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
			require.Error(t, err, "the release's objects are gone")
		})
	}
}

// TestHelmBuiltVersions: the Helms hack/integration-tools.sh builds say
// the versions it pins, as Helm's own Makefile stamps them.
func TestHelmBuiltVersions(t *testing.T) {
	t.Parallel()
	for major, want := range map[int]string{3: "v3.21.4", 4: "v4.3.2"} {
		out, err := exec.CommandContext(t.Context(), tool(t, fmt.Sprintf("helm%d", major)), "version", "--short").CombinedOutput()
		require.NoError(t, err, "%s", out)
		assert.Equal(t, want, strings.TrimSpace(string(out)), "helm %d", major)
	}
}
