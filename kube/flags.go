package kube

import (
	"sync"

	"github.com/spf13/pflag"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// ConfigFlags are the kubeconfig flags lockctl offers, named and loaded as
// kubectl's: --kubeconfig, --context and -n/--namespace. kubectl's other
// flags (--cluster, --user, --server, --token, --as, ...) lockctl does
// not offer.
//
// NOTE: lockctl used k8s.io/cli-runtime's ConfigFlags, trimmed to these
// three; that module links kustomize and kubectl's printers into every
// lockctl process, for three flags.
type ConfigFlags struct {
	// KubeConfig is --kubeconfig: the one kubeconfig file to read instead
	// of $KUBECONFIG's files or ~/.kube/config.
	KubeConfig string
	// Context is --context: the kubeconfig context instead of the current
	// one.
	Context string
	// Namespace is -n: the namespace instead of the context's.
	Namespace string

	once   sync.Once
	loader clientcmd.ClientConfig
}

// AddFlags adds --kubeconfig, -n/--namespace and --context to fs, with
// kubectl's help texts.
func (c *ConfigFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&c.KubeConfig, "kubeconfig", c.KubeConfig, "Path to the kubeconfig file to use for CLI requests.")
	fs.StringVarP(&c.Namespace, "namespace", "n", c.Namespace, "If present, the namespace scope for this CLI request")
	fs.StringVar(&c.Context, "context", c.Context, "The name of the kubeconfig context to use")
}

// ToRawKubeConfigLoader returns the kubeconfig as the flags pick it:
// client-go's default loading rules (--kubeconfig, else $KUBECONFIG's
// files merged, else ~/.kube/config; in a pod the in-cluster config) with
// --context and -n over it. It is built on first use, once flags are
// parsed, and reads the files once.
func (c *ConfigFlags) ToRawKubeConfigLoader() clientcmd.ClientConfig {
	c.once.Do(func() {
		rules := clientcmd.NewDefaultClientConfigLoadingRules()
		rules.DefaultClientConfig = &clientcmd.DefaultClientConfig
		rules.ExplicitPath = c.KubeConfig
		overrides := &clientcmd.ConfigOverrides{ClusterDefaults: clientcmd.ClusterDefaults, CurrentContext: c.Context}
		overrides.Context.Namespace = c.Namespace
		c.loader = clientcmd.NewNonInteractiveDeferredLoadingClientConfig(rules, overrides)
	})
	return c.loader
}

// ToRESTConfig returns the REST config of the context the flags pick.
func (c *ConfigFlags) ToRESTConfig() (*rest.Config, error) {
	return c.ToRawKubeConfigLoader().ClientConfig()
}
