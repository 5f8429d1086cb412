package kube

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"maps"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// NoKubeconfigError says that lockctl found no cluster to talk to: no
// kubeconfig file where it looked, and not in a pod.
type NoKubeconfigError struct {
	// Looked lists where lockctl looked, each with what it found there.
	Looked []string
}

func (e *NoKubeconfigError) Error() string {
	return "no kubeconfig found: looked at " + strings.Join(e.Looked, ", ")
}

// FindKubeconfig returns a *NoKubeconfigError when no kubeconfig is named
// by --kubeconfig, $KUBECONFIG holds no existing file, ~/.kube/config does
// not exist (home is $HOME) and lockctl does not run in a pod: client-go
// would then quietly talk to http://localhost:8080. getenv reads the
// environment.
func FindKubeconfig(flag string, getenv func(string) string) error {
	if flag != "" {
		return nil // a named file that is missing is reported by clientcmd
	}
	if getenv("KUBERNETES_SERVICE_HOST") != "" && getenv("KUBERNETES_SERVICE_PORT") != "" {
		return nil
	}
	var looked []string
	if env := getenv(clientcmd.RecommendedConfigPathEnvVar); env != "" {
		var files []string
		for _, p := range filepath.SplitList(env) {
			if p == "" {
				continue
			}
			if _, err := os.Stat(p); err == nil {
				return nil
			}
			files = append(files, p)
		}
		looked = append(looked, fmt.Sprintf("$KUBECONFIG (%s: not found)", strings.Join(files, ", ")))
	} else {
		looked = append(looked, "$KUBECONFIG (not set)")
		home := getenv("HOME")
		if home == "" {
			looked = append(looked, "~/.kube/config ($HOME not set)")
		} else {
			p := filepath.Join(home, clientcmd.RecommendedHomeDir, clientcmd.RecommendedFileName)
			if _, err := os.Stat(p); err == nil {
				return nil
			}
			looked = append(looked, fmt.Sprintf("~/.kube/config (%s: not found)", p))
		}
	}
	looked = append(looked, "the in-cluster config (not in a pod: KUBERNETES_SERVICE_HOST not set)")
	return &NoKubeconfigError{Looked: looked}
}

// UntrustedServerError is an API server whose certificate the kubeconfig
// context does not trust.
type UntrustedServerError struct {
	// Context is the kubeconfig context, Server its cluster's URL.
	Context, Server string
	Err             error
}

func (e *UntrustedServerError) Error() string {
	return fmt.Sprintf("the API server %s of context %q is not trusted: %s", e.Server, e.Context, RootCause(e.Err))
}

func (e *UntrustedServerError) Unwrap() error { return e.Err }

// TrustHint wraps cfg's transport so that a certificate the context does
// not trust is reported as an *UntrustedServerError naming the context.
func TrustHint(cfg *rest.Config, context string) {
	server := cfg.Host
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(req *http.Request) (*http.Response, error) {
			resp, err := rt.RoundTrip(req)
			if err != nil && isCertificateError(err) {
				return resp, &UntrustedServerError{Context: context, Server: server, Err: err}
			}
			return resp, err
		})
	})
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }

func isCertificateError(err error) bool {
	var (
		verify    *tls.CertificateVerificationError
		authority x509.UnknownAuthorityError
		invalid   x509.CertificateInvalidError
		hostname  x509.HostnameError
	)
	return errors.As(err, &verify) || errors.As(err, &authority) || errors.As(err, &invalid) || errors.As(err, &hostname)
}

// UnknownContextError is a kubeconfig context, named by --context or for a
// build cluster, that the kubeconfig does not have.
type UnknownContextError struct {
	// Flag is where the name came from: "--context" or "--build-cluster".
	Flag    string
	Context string
	// Available are the kubeconfig's contexts, sorted.
	Available []string
}

func (e *UnknownContextError) Error() string {
	avail := "the kubeconfig has no contexts"
	if len(e.Available) > 0 {
		avail = "available: " + strings.Join(e.Available, ", ")
	}
	return fmt.Sprintf("context %q not found in the kubeconfig (%s)", e.Context, avail)
}

// RootCause returns the innermost error's message.
func RootCause(err error) string {
	for {
		next := errors.Unwrap(err)
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// CheckContext returns an *UnknownContextError naming the contexts there
// are when flags' --context names one the kubeconfig does not have.
// Without a kubeconfig to read it returns nil and leaves the error to the
// loader.
func CheckContext(flags *ConfigFlags) error {
	name := flags.Context
	if name == "" {
		return nil
	}
	raw, err := flags.ToRawKubeConfigLoader().RawConfig()
	if err != nil || len(raw.Contexts) == 0 {
		return nil
	}
	if _, ok := raw.Contexts[name]; ok {
		return nil
	}
	return &UnknownContextError{Flag: "--context", Context: name, Available: slices.Sorted(maps.Keys(raw.Contexts))}
}
