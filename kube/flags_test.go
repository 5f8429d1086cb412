package kube

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/spf13/pflag"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// writeKubeconfig writes a kubeconfig with the contexts dev (current,
// namespace team-dev, server https://dev:6443) and prod (no namespace,
// server https://prod:6443), and returns its path.
func writeKubeconfig(t *testing.T) string {
	t.Helper()
	cfg := clientcmdapi.NewConfig()
	for _, name := range []string{"dev", "prod"} {
		cfg.Clusters[name] = &clientcmdapi.Cluster{Server: "https://" + name + ":6443"}
		cfg.AuthInfos[name] = &clientcmdapi.AuthInfo{Token: name + "-token"}
		cfg.Contexts[name] = &clientcmdapi.Context{Cluster: name, AuthInfo: name}
	}
	cfg.Contexts["dev"].Namespace = "team-dev"
	cfg.CurrentContext = "dev"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*cfg, path))
	return path
}

// TestConfigFlagsAdded: the flags are kubectl's three, no more, with -n.
func TestConfigFlagsAdded(t *testing.T) {
	fs := pflag.NewFlagSet("lockctl", pflag.ContinueOnError)
	(&ConfigFlags{}).AddFlags(fs)
	var names []string
	fs.VisitAll(func(f *pflag.Flag) { names = append(names, f.Name) })
	assert.ElementsMatch(t, []string{"kubeconfig", "namespace", "context"}, names)
	assert.Equal(t, "namespace", fs.ShorthandLookup("n").Name)
}

func TestConfigFlagsLoad(t *testing.T) {
	path := writeKubeconfig(t)
	tests := []struct {
		name                     string
		args                     []string
		env                      string // $KUBECONFIG
		wantHost, wantNS, wantCx string
	}{
		{name: "--kubeconfig, current context", args: []string{"--kubeconfig", path}, wantHost: "https://dev:6443", wantNS: "team-dev", wantCx: "dev"},
		{name: "--context", args: []string{"--kubeconfig", path, "--context", "prod"}, wantHost: "https://prod:6443", wantNS: "default", wantCx: "prod"},
		{name: "-n over the context's", args: []string{"--kubeconfig=" + path, "-n", "ci"}, wantHost: "https://dev:6443", wantNS: "ci", wantCx: "dev"},
		{name: "$KUBECONFIG, a missing file skipped", env: filepath.Join(t.TempDir(), "nope") + string(os.PathListSeparator) + path,
			args: []string{"--namespace", "x"}, wantHost: "https://dev:6443", wantNS: "x", wantCx: "dev"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv(clientcmd.RecommendedConfigPathEnvVar, tt.env)
			t.Setenv("HOME", t.TempDir())
			c := &ConfigFlags{}
			fs := pflag.NewFlagSet("lockctl", pflag.ContinueOnError)
			c.AddFlags(fs)
			require.NoError(t, fs.Parse(tt.args))
			cfg, err := c.ToRESTConfig()
			require.NoError(t, err)
			assert.Equal(t, tt.wantHost, cfg.Host)
			ns, _, err := c.ToRawKubeConfigLoader().Namespace()
			require.NoError(t, err)
			assert.Equal(t, tt.wantNS, ns)
			assert.Equal(t, tt.wantCx, (&Loader{Flags: c}).ContextName())
		})
	}
}

// TestConfigFlagsMissingFile: a --kubeconfig that does not exist is
// client-go's error naming it, not a fall-back to another file.
func TestConfigFlagsMissingFile(t *testing.T) {
	t.Setenv(clientcmd.RecommendedConfigPathEnvVar, writeKubeconfig(t))
	missing := filepath.Join(t.TempDir(), "missing")
	_, err := (&ConfigFlags{KubeConfig: missing}).ToRESTConfig()
	require.Error(t, err)
	assert.Contains(t, err.Error(), missing)
}

// TestConfigFlagsUnknownContext: CheckContext lists the contexts there are.
func TestConfigFlagsUnknownContext(t *testing.T) {
	err := CheckContext(&ConfigFlags{KubeConfig: writeKubeconfig(t), Context: "nosuch"})
	assert.EqualError(t, err, `context "nosuch" not found in the kubeconfig (available: dev, prod)`)
	assert.NoError(t, CheckContext(&ConfigFlags{KubeConfig: writeKubeconfig(t), Context: "prod"}))
}
