// Package kube is lockctl's client of the Kubernetes API. It finds the
// kubeconfig and builds the clientsets of its contexts for the commands
// (Loader), names what is wrong with them (no kubeconfig, an untrusted
// server, an unknown context), and gives the library narrow clients of the
// API groups it uses (Interface, ConfigMapsGetter, PodsGetter …).
//
// The methods of the resource interfaces have exactly the signatures of
// client-go's typed clients, so a client-go corev1client.ConfigMapInterface
// is a ConfigMapInterface as it is; the getters return this package's types,
// so a program holding a client-go clientset wraps its getters (lockctl's
// tests do so with internal/testing/kubetest). lockctl does not link
// client-go's typed clients: each of them registers every API group
// client-go knows in one scheme when the process starts (docs/adr/0073).
package kube

import (
	"os"
	"strings"

	"k8s.io/client-go/util/watchlist"
)

// CoreV1 returns cs.CoreV1(), passing on what cs declares about streaming
// lists. Informers (watchtools.UntilWithSync) ask the client they are given;
// the core/v1 client of client-go's fake clientset (as tests adapt it) does
// not say that it cannot serve them, while the clientset does.
func CoreV1(cs Interface) CoreV1Interface {
	return coreV1{CoreV1Interface: cs.CoreV1(), cs: cs}
}

type coreV1 struct {
	CoreV1Interface
	cs Interface
}

// IsWatchListSemanticsUnSupported passes on the clientset's answer.
func (c coreV1) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.cs)
}

// inClusterNamespaceFile holds the namespace of the pod lockctl runs in.
const inClusterNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// InPod returns the namespace and name of the pod this process runs in,
// from the service account's namespace file and $POD_NAME (else the host
// name), and false outside a pod.
func InPod(getenv func(string) string) (namespace, name string, ok bool) {
	data, err := os.ReadFile(inClusterNamespaceFile)
	if err != nil {
		return "", "", false
	}
	name = getenv("POD_NAME")
	if name == "" {
		name, _ = os.Hostname()
	}
	return strings.TrimSpace(string(data)), name, name != ""
}
