package kube

import (
	"maps"
	"slices"
	"sync"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/client-go/transport"
)

// Loader builds clientsets from the kubeconfig that the flags pick:
// the current context's once, on first use, and those of other contexts
// (build clusters) on every call. A missing kubeconfig is a
// *NoKubeconfigError rather than client-go's quiet fallback to
// localhost:8080, and a certificate the context does not trust is an
// *UntrustedServerError.
type Loader struct {
	// Flags are the kubeconfig flags (--kubeconfig, --context, -n, ...).
	Flags *ConfigFlags
	// Getenv reads KUBECONFIG, HOME and the in-cluster variables.
	Getenv func(string) string
	// Tune adjusts every REST config (rate limit, user agent); nil leaves
	// client-go's defaults.
	Tune func(*rest.Config)
	// WrapCurrent wraps the transport of the current context's clientset
	// only; nil wraps nothing.
	WrapCurrent transport.WrapperFunc

	once   sync.Once
	cfg    *rest.Config
	cs     Interface
	cfgErr error
}

// Clientset returns the clientset of the current context (or --context),
// built on first use.
func (l *Loader) Clientset() (Interface, error) {
	l.once.Do(func() {
		if l.cfgErr = FindKubeconfig(l.Flags.KubeConfig, l.Getenv); l.cfgErr != nil {
			return
		}
		if l.cfgErr = CheckContext(l.Flags); l.cfgErr != nil {
			return
		}
		cfg, err := l.Flags.ToRESTConfig()
		if err != nil {
			l.cfgErr = err
			return
		}
		l.tune(cfg)
		TrustHint(cfg, l.ContextName())
		if l.WrapCurrent != nil {
			cfg.Wrap(l.WrapCurrent)
		}
		l.cfg = cfg
		l.cs, l.cfgErr = NewForConfig(cfg)
	})
	return l.cs, l.cfgErr
}

// SeparateClientset returns a new clientset of the current context, as
// Clientset's but with a client-side rate limiter of its own (the same
// settings, another token bucket), as Kubernetes components give their
// Events: its requests never wait behind Clientset's, nor Clientset's
// behind them. Both share client-go's cached transport (one HTTP/2
// connection, multiplexed).
func (l *Loader) SeparateClientset() (Interface, error) {
	if _, err := l.Clientset(); err != nil {
		return nil, err
	}
	return NewForConfig(rest.CopyConfig(l.cfg))
}

// ClientsetFor returns a new clientset of the kubeconfig context name; ""
// is Clientset. A context the kubeconfig does not have is an
// *UnknownContextError.
func (l *Loader) ClientsetFor(name string) (Interface, error) {
	if name == "" {
		return l.Clientset()
	}
	return l.clientsetOf(name, "--build-cluster", nil)
}

// ClientsetOfContext returns a new clientset of the kubeconfig context
// name, one of those --contexts names (a lock held in several clusters),
// whose transport wrap wraps (nil: none), as WrapCurrent wraps the
// current context's. A context the kubeconfig does not have is an
// *UnknownContextError of --contexts.
func (l *Loader) ClientsetOfContext(name string, wrap transport.WrapperFunc) (Interface, error) {
	if err := FindKubeconfig(l.Flags.KubeConfig, l.Getenv); err != nil {
		return nil, err
	}
	return l.clientsetOf(name, "--contexts", wrap)
}

// ContextNamespace returns the namespace the kubeconfig context name
// sets, "default" when it sets none; -n is not applied.
func (l *Loader) ContextNamespace(name string) (string, error) {
	raw, err := l.Flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return "", err
	}
	c, ok := raw.Contexts[name]
	switch {
	case !ok:
		return "", &UnknownContextError{Flag: "--contexts", Context: name, Available: slices.Sorted(maps.Keys(raw.Contexts))}
	case c.Namespace == "":
		return "default", nil
	}
	return c.Namespace, nil
}

func (l *Loader) clientsetOf(name, flag string, wrap transport.WrapperFunc) (Interface, error) {
	raw, err := l.Flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return nil, err
	}
	if _, ok := raw.Contexts[name]; !ok {
		return nil, &UnknownContextError{Flag: flag, Context: name, Available: slices.Sorted(maps.Keys(raw.Contexts))}
	}
	cfg, err := clientcmd.NewNonInteractiveClientConfig(raw, name, &clientcmd.ConfigOverrides{}, nil).ClientConfig()
	if err != nil {
		return nil, err
	}
	l.tune(cfg)
	TrustHint(cfg, name)
	if wrap != nil {
		cfg.Wrap(wrap)
	}
	return NewForConfig(cfg)
}

// ContextName is the kubeconfig context the current clientset uses:
// --context, else the kubeconfig's current context; "" when the
// kubeconfig cannot be read.
func (l *Loader) ContextName() string {
	if l.Flags.Context != "" {
		return l.Flags.Context
	}
	raw, err := l.Flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil {
		return ""
	}
	return raw.CurrentContext
}

// tune adjusts every REST config the Loader builds: Tune, one connection
// at start (OneConnAtStart), and a bound on every request
// (BoundRequests, DefaultRequestTimeout).
func (l *Loader) tune(cfg *rest.Config) {
	if l.Tune != nil {
		l.Tune(cfg)
	}
	cfg.Wrap(OneConnAtStart)
	cfg.Wrap(BoundRequests(DefaultRequestTimeout))
}
