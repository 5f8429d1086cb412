package cli

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/kube"
)

func TestFindKubeconfig(t *testing.T) {
	t.Parallel()
	withConfig := t.TempDir()
	require.NoError(t, os.MkdirAll(filepath.Join(withConfig, ".kube"), 0o755))
	require.NoError(t, os.WriteFile(filepath.Join(withConfig, ".kube", "config"), []byte("{}"), 0o600))
	empty := t.TempDir()
	tests := []struct {
		name    string
		flag    string
		env     map[string]string
		wantErr string
	}{
		{name: "--kubeconfig given", flag: "/nowhere", env: map[string]string{"HOME": empty}},
		{name: "~/.kube/config", env: map[string]string{"HOME": withConfig}},
		{name: "$KUBECONFIG, one of several files exists", env: map[string]string{"HOME": empty,
			"KUBECONFIG": filepath.Join(empty, "a") + string(filepath.ListSeparator) + filepath.Join(withConfig, ".kube", "config")}},
		{name: "in a pod", env: map[string]string{"HOME": empty, "KUBERNETES_SERVICE_HOST": "10.0.0.1", "KUBERNETES_SERVICE_PORT": "443"}},
		{
			name: "nothing anywhere", env: map[string]string{"HOME": empty},
			wantErr: "no kubeconfig found: looked at $KUBECONFIG (not set), ~/.kube/config (" + filepath.Join(empty, ".kube", "config") +
				": not found), the in-cluster config (not in a pod: KUBERNETES_SERVICE_HOST not set)",
		},
		{
			name: "$KUBECONFIG names missing files", env: map[string]string{"HOME": withConfig, "KUBECONFIG": "/nowhere/a"},
			wantErr: "no kubeconfig found: looked at $KUBECONFIG (/nowhere/a: not found), the in-cluster config (not in a pod: KUBERNETES_SERVICE_HOST not set)",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			err := kube.FindKubeconfig(tt.flag, func(k string) string { return tt.env[k] })
			if tt.wantErr == "" {
				assert.NoError(t, err, "env %v", tt.env)
				return
			}
			var nk *kube.NoKubeconfigError
			require.ErrorAs(t, err, &nk)
			assert.Equal(t, tt.wantErr, err.Error())
			msg, hint := cmdutil.Explain(cmdutil.KubeconfigError(err))
			assert.Equal(t, tt.wantErr, msg, "explain says where it looked")
			assert.Contains(t, hint, "--kubeconfig or KUBECONFIG")
		})
	}
}

// TestTrustHint: a server whose certificate the context does not trust is
// reported naming the context and server, with a hint.
func TestTrustHint(t *testing.T) {
	t.Parallel()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {}))
	defer srv.Close()
	cfg := &rest.Config{Host: srv.URL}
	kube.TrustHint(cfg, "kind-dev")
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	_, err = cs.CoreV1().Namespaces().Get(t.Context(), "x", metav1.GetOptions{})
	var untrusted *kube.UntrustedServerError
	require.True(t, errors.As(err, &untrusted), "got %v", err)
	msg, hint := cmdutil.Explain(err)
	assert.Equal(t, `the API server `+srv.URL+` of context "kind-dev" is not trusted: x509: certificate signed by unknown authority`, msg)
	assert.Contains(t, hint, `certificate-authority (or certificate-authority-data) of the cluster of context "kind-dev"`)
	assert.Contains(t, hint, "no --insecure-skip-tls-verify")
}

// writeTwoContexts writes a kubeconfig with the contexts dev (current) and
// prod, and returns its path.
func writeTwoContexts(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:1"}
	cfg.AuthInfos["u"] = &clientcmdapi.AuthInfo{}
	for _, name := range []string{"prod", "dev"} {
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "u"}
	}
	cfg.CurrentContext = "dev"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// TestContextFlagUnknown: --context naming a context the kubeconfig does
// not have is a usage error (exit 2) listing the contexts there are.
func TestContextFlagUnknown(t *testing.T) {
	t.Parallel()
	path, ctx := writeTwoContexts(t), "nosuch"
	f := NewFactory(discardStreams(), "test")
	f.ConfigFlags.KubeConfig, f.ConfigFlags.Context = path, ctx
	_, err := f.Namespace()
	require.Error(t, err)
	assert.Equal(t, `context "nosuch" not found in the kubeconfig (available: dev, prod)`, err.Error())
	assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "a context that is not there is bad input")
	_, hint := cmdutil.Explain(err)
	assert.Equal(t, "give --context one of the contexts listed, or leave it out for the current context", hint)
	_, err = f.Clientset()
	require.Error(t, err)
	assert.Equal(t, `context "nosuch" not found in the kubeconfig (available: dev, prod)`, err.Error(), "the client says the same")
	assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "the client says the same")

	good := "prod"
	f = NewFactory(discardStreams(), "test")
	f.ConfigFlags.KubeConfig, f.ConfigFlags.Context = path, good
	ns, err := f.Namespace()
	require.NoError(t, err, "a context that is there")
	assert.Equal(t, "default", ns)
}

// TestClusterClientsUnknownContext: a build cluster naming a context the
// kubeconfig does not have is a usage error (exit 2) naming the context
// and the contexts there are.
func TestClusterClientsUnknownContext(t *testing.T) {
	t.Parallel()
	path := writeTwoContexts(t)
	f := NewFactory(discardStreams(), "test")
	f.ConfigFlags.KubeConfig = path
	clients, err := f.ClusterClients(map[string]string{"default": "", "gpu": "no-such-context", "ci": "prod"})
	require.Error(t, err)
	assert.Equal(t, `build cluster "gpu": context "no-such-context" not found in the kubeconfig (available: dev, prod)`, err.Error())
	assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "a context that is not there is bad input")
	assert.Contains(t, clients, "ci", "the other clusters still get their clients")
	_, hint := cmdutil.Explain(err)
	assert.Contains(t, hint, "--build-cluster")
	assert.Contains(t, hint, "kubectl config get-contexts")
}
