package deploytools

import (
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
)

// The users the GitOps controllers act as, in their usual installations:
// their service accounts.
const (
	// FluxKustomizeController is Flux's kustomize-controller.
	FluxKustomizeController = "system:serviceaccount:flux-system:kustomize-controller"
	// FluxHelmController is Flux's helm-controller.
	FluxHelmController = "system:serviceaccount:flux-system:helm-controller"
	// ArgoCDApplicationController is Argo CD's application-controller.
	ArgoCDApplicationController = "system:serviceaccount:argocd:argocd-application-controller"
)

// KubeconfigAs writes a copy of kubeconfig whose every user authenticates
// as before and then acts as user, with groups when given (users[].user.as
// and as-groups, which clientcmd turns into impersonation headers), and
// returns its path. The API server adds the groups of a service account
// (system:serviceaccounts, system:serviceaccounts:NS) to one impersonated
// without groups; `kubectl auth whoami` shows who the copy acts as.
// (`kubectl config set-credentials --as` does not write these fields.)
func KubeconfigAs(t testing.TB, kubeconfig, user string, groups ...string) string {
	t.Helper()
	cfg, err := clientcmd.LoadFromFile(kubeconfig)
	require.NoError(t, err)
	for _, ai := range cfg.AuthInfos {
		ai.Impersonate = user
		ai.ImpersonateGroups = groups
	}
	path := filepath.Join(t.TempDir(), "kubeconfig-as")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}
