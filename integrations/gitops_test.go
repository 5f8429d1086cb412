package integrations_test

import (
	"encoding/json"
	"os/exec"
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
	"github.com/lockctl/lockctl/lock/record"
)

// everything is every verb on every resource, as GitOps controllers are
// usually granted in the namespaces they deploy to.
var everything = []rbacv1.PolicyRule{{APIGroups: []string{"*"}, Resources: []string{"*"}, Verbs: []string{"*"}}}

// serviceAccount is the RBAC subject of a service account's user name
// (system:serviceaccount:NS:NAME).
func serviceAccount(user string) rbacv1.Subject {
	parts := strings.Split(user, ":")
	return rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Namespace: parts[2], Name: parts[3]}
}

// whoami is the user and groups kubeconfig acts as, as `kubectl auth
// whoami` tells them.
func whoami(t *testing.T, kubeconfig string) (string, []string) {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), tool(t, "kubectl"), "--kubeconfig", kubeconfig, "auth", "whoami", "-o", "json").Output()
	require.NoError(t, err, "kubectl auth whoami")
	var review struct {
		Status struct {
			UserInfo struct {
				Username string
				Groups   []string
			} `json:"userInfo"`
		}
	}
	require.NoError(t, json.Unmarshal(out, &review), "%s", out)
	return review.Status.UserInfo.Username, review.Status.UserInfo.Groups
}

// configMap is a ConfigMap manifest in ns.
func configMap(ns, name, value string) string {
	return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + name + "\n  namespace: " + ns + "\ndata:\n  value: \"" + value + "\"\n"
}

// managers are the field managers of obj and their operations.
func managers(fields []metav1.ManagedFieldsEntry) map[string]metav1.ManagedFieldsOperationType {
	out := map[string]metav1.ManagedFieldsOperationType{}
	for _, f := range fields {
		out[f.Manager] = f.Operation
	}
	return out
}

// TestIntegrationFluxApplyAsKustomizeController applies two
// Kustomizations' manifests with Flux's own apply library (hack/fluxapply)
// as Flux's kustomize-controller service account: each object carries its
// Kustomization's labels and is applied server-side by the field manager
// kustomize-controller; a second apply changes nothing; garbage collection
// prunes only its own Kustomization's objects.
func TestIntegrationFluxApplyAsKustomizeController(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	kc := deploytools.KubeconfigAs(t, env.Kubeconfig, deploytools.FluxKustomizeController)
	user, groups := whoami(t, kc)
	assert.Equal(t, deploytools.FluxKustomizeController, user)
	assert.Contains(t, groups, "system:serviceaccounts:flux-system", "impersonated as a service account")
	env.Grant(t, ns, "flux", serviceAccount(deploytools.FluxKustomizeController), everything)
	flux := deploytools.NewFlux(t, kc)

	web, api := configMap(ns, "web", "1"), configMap(ns, "api", "1")
	out, err := flux.Apply(ctx, "flux-system/web", web)
	require.NoError(t, err, out)
	assert.Equal(t, "ConfigMap/"+ns+"/web created\n", out)
	out, err = flux.Apply(ctx, "apps/api", api)
	require.NoError(t, err, out)
	assert.Equal(t, "ConfigMap/"+ns+"/api created\n", out)

	for name, want := range map[string][2]string{"web": {"web", "flux-system"}, "api": {"api", "apps"}} {
		cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, want[0], cm.Labels["kustomize.toolkit.fluxcd.io/name"], name)
		assert.Equal(t, want[1], cm.Labels["kustomize.toolkit.fluxcd.io/namespace"], name)
		assert.Equal(t, metav1.ManagedFieldsOperationApply, managers(cm.ManagedFields)["kustomize-controller"], "%s: applied server-side by kustomize-controller", name)
	}

	out, err = flux.Apply(ctx, "flux-system/web", web)
	require.NoError(t, err, out)
	assert.Equal(t, "ConfigMap/"+ns+"/web unchanged\n", out)
	out, err = flux.Apply(ctx, "flux-system/web", configMap(ns, "web", "2"))
	require.NoError(t, err, out)
	assert.Equal(t, "ConfigMap/"+ns+"/web configured\n", out)

	out, err = flux.Prune(ctx, "flux-system/web", api)
	require.NoError(t, err, out)
	_, err = env.Client.CoreV1().ConfigMaps(ns).Get(ctx, "api", metav1.GetOptions{})
	require.NoError(t, err, "another Kustomization's object is not pruned: %s", out)
	out, err = flux.Prune(ctx, "flux-system/web", web)
	require.NoError(t, err, out)
	assert.Equal(t, "ConfigMap/"+ns+"/web deleted\n", out)
}

// TestIntegrationArgoCDWriteAsApplicationController writes two
// Applications' objects as Argo CD's application-controller service
// account syncs them (kubectl's apply, each object marked with Argo CD's
// tracking annotation APP:GROUP/KIND:NS/NAME, or with label tracking the
// instance label).
func TestIntegrationArgoCDWriteAsApplicationController(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ctx := t.Context()
	ns := env.Namespace(t)
	kc := deploytools.KubeconfigAs(t, env.Kubeconfig, deploytools.ArgoCDApplicationController)
	user, _ := whoami(t, kc)
	assert.Equal(t, deploytools.ArgoCDApplicationController, user)
	env.Grant(t, ns, "argocd", serviceAccount(deploytools.ArgoCDApplicationController), everything)
	argo := deploytools.NewArgoCD(t, kc)

	out, err := argo.Apply(ctx, "web", ns, "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  value: \"1\"\n")
	require.NoError(t, err, out)
	assert.Contains(t, out, "configmap/web created")
	out, err = argo.Apply(ctx, "team-a_api", ns, configMap(ns, "api", "1"))
	require.NoError(t, err, out)
	argo.Tracking = deploytools.TrackLabel
	out, err = argo.Apply(ctx, "db", ns, configMap(ns, "db", "1"))
	require.NoError(t, err, out)

	get := func(name string) *corev1.ConfigMap {
		t.Helper()
		cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		return cm
	}
	assert.Equal(t, "web:/ConfigMap:"+ns+"/web", get("web").Annotations[deploytools.ArgoCDTrackingAnnotation])
	assert.Equal(t, "team-a_api:/ConfigMap:"+ns+"/api", get("api").Annotations[deploytools.ArgoCDTrackingAnnotation])
	db := get("db")
	assert.Equal(t, "db", db.Labels[deploytools.ArgoCDInstanceLabel])
	assert.NotContains(t, db.Annotations, deploytools.ArgoCDTrackingAnnotation)
	assert.Contains(t, managers(db.ManagedFields), "kubectl-client-side-apply", "written by kubectl's apply")
}

// TestIntegrationHolderApps: acquire and run record the applications
// --app names with the hold, status shows them (-o wide, -o yaml), the
// lock's summary names them for the admission policy, and a bad --app is
// refused with exit 2 before anything is written.
func TestIntegrationHolderApps(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ctx := t.Context()
	target, other, lockNS := env.Namespace(t), env.Namespace(t), env.Namespace(t)
	home := t.TempDir()
	vars := []string{"KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + lockNS}
	lockctl := func(args ...string) clitest.Outcome {
		t.Helper()
		return clitest.Run(t, time.Minute, home, vars, args...)
	}
	id := []string{"--owner", "acme", "--repo", "web", "--branch", "main", "--build", "7"}

	o := lockctl(append([]string{"acquire", target, "--app", "argocd/web", "--app", "flux/kustomization/apps/web"}, id...)...)
	require.Zero(t, o.Code, o.Stderr)
	cm, err := env.Client.CoreV1().ConfigMaps(lockNS).Get(ctx, record.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "argocd:web\nflux-kustomization:apps/web", cm.Annotations[record.SummaryHolderAppsAnnotation])
	o = lockctl("status", target, "-o", "wide")
	require.Zero(t, o.Code, o.Stderr)
	assert.Contains(t, o.Stdout, " APPS ")
	assert.Contains(t, o.Stdout, " argocd/web,flux/kustomization/apps/web ")
	o = lockctl("status", target, "-o", "yaml")
	require.Zero(t, o.Code, o.Stderr)
	assert.Contains(t, o.Stdout, "    apps:\n    - argocd/web\n    - flux/kustomization/apps/web\n")
	o = lockctl(append([]string{"release", target}, id...)...)
	require.Zero(t, o.Code, o.Stderr)

	o = lockctl(append([]string{"acquire", other, "--app", "flux/web"}, id...)...)
	assert.Equal(t, 2, o.Code, "a bad --app is a usage error")
	assert.Contains(t, o.Stderr, `application "flux/web" names Flux kind "web": use argocd/NAME, argocd/NAMESPACE/NAME, flux/kustomization/NAMESPACE/NAME or flux/helmrelease/NAMESPACE/NAME`)
	_, err = env.Client.CoreV1().ConfigMaps(lockNS).Get(ctx, record.Name(other), metav1.GetOptions{})
	require.Error(t, err, "nothing written")

	o = lockctl(append(append([]string{"run", "--lock", other, "--app", "argocd/team-a/api"}, id...), "--", clitest.Binary(t), "status", other, "-o", "yaml")...)
	require.Zero(t, o.Code, o.Stderr)
	assert.Contains(t, o.Stdout, "    apps:\n    - argocd/team-a/api\n", "run holds with its applications")
}
