package integrations_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/deploytools"
	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// TestIntegrationGitOpsPerApplication: with Argo CD's application
// controller and Flux's kustomize-controller as the holder's agents, each
// controller's write (Argo CD's tracking annotation, Flux's apply library
// with its labels, as their service accounts) is admitted only for the
// application the holder names with --app, refused for another
// application in the same namespace with one line naming the lock, and
// refused for every application during a freeze.
func TestIntegrationGitOpsPerApplication(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ctx := t.Context()
	target, lockNS := env.Namespace(t), env.Namespace(t)
	argoKC := deploytools.KubeconfigAs(t, env.Kubeconfig, deploytools.ArgoCDApplicationController)
	fluxKC := deploytools.KubeconfigAs(t, env.Kubeconfig, deploytools.FluxKustomizeController)
	env.Grant(t, target, "argocd", serviceAccount(deploytools.ArgoCDApplicationController), everything)
	env.Grant(t, target, "flux", serviceAccount(deploytools.FluxKustomizeController), everything)
	lockctl := func(args ...string) clitest.Outcome {
		t.Helper()
		return clitest.Run(t, time.Minute, t.TempDir(), []string{"KUBECONFIG=" + env.Kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + lockNS}, args...)
	}
	o := lockctl("enforce", target, "--mode", "deny",
		"--agent", deploytools.ArgoCDApplicationController, "--agent", deploytools.FluxKustomizeController)
	require.Zero(t, o.Code, o.Stderr)
	id := []string{"--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1"}
	o = lockctl(append([]string{"acquire", target, "--app", "argocd/web", "--app", "flux/kustomization/apps/web"}, id...)...)
	require.Zero(t, o.Code, o.Stderr)

	argo := deploytools.NewArgoCD(t, argoKC)
	flux := deploytools.NewFlux(t, fluxKC)
	out, err := argo.Apply(ctx, "web", target, configMap(target, "argo-web", "1"))
	require.NoError(t, err, "Argo CD syncs the holder's application: %s", out)
	out, err = argo.Apply(ctx, "billing", target, configMap(target, "argo-billing", "1"))
	require.Error(t, err, "Argo CD syncs another application: %s", out)
	assert.Contains(t, out, "lockctl refused this write")
	assert.Contains(t, out, "belongs to none of them")
	out, err = flux.Apply(ctx, "apps/web", configMap(target, "flux-web", "1"))
	require.NoError(t, err, "Flux applies the holder's Kustomization: %s", out)
	out, err = flux.Apply(ctx, "apps/shop", configMap(target, "flux-shop", "1"))
	require.Error(t, err, "Flux applies another Kustomization: %s", out)
	assert.Contains(t, out, "lockctl refused this write")

	o = lockctl("freeze", target, "--for", "1h", "--reason", "release party")
	require.Zero(t, o.Code, o.Stderr)
	require.Eventually(t, func() bool {
		out, err := argo.Apply(ctx, "web", target, configMap(target, "argo-web", "2"))
		return err != nil && assert.Contains(t, out, "is frozen")
	}, time.Minute, 100*time.Millisecond, "Argo CD is refused during the freeze, its own application too")
	out, err = flux.Apply(ctx, "apps/web", configMap(target, "flux-web", "2"))
	require.Error(t, err, "Flux is refused during the freeze: %s", out)
	assert.Contains(t, out, "is frozen")

	o = lockctl("unfreeze", target)
	require.Zero(t, o.Code, o.Stderr)
	o = lockctl(append([]string{"release", target}, id...)...)
	require.Zero(t, o.Code, o.Stderr)
	o = lockctl("enforce", target, "--uninstall")
	require.Zero(t, o.Code, o.Stderr)
}
