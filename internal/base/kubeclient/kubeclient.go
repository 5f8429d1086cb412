// Package kubeclient finds the kubeconfig, builds the clientsets of its
// contexts for lockctl's commands (Loader), names what is wrong with them
// (no kubeconfig, an untrusted server, an unknown context), and adapts
// the Kubernetes API to lockctl's packages with its own clients of the
// three API groups it uses.
package kubeclient

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
