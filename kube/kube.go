// Package kube is the part of the Kubernetes API that lockctl's library
// takes: narrow clients of core/v1 (ConfigMaps, Pods, Nodes),
// events.k8s.io/v1 (Events), authorization/v1 (SelfSubjectAccessReviews),
// authentication/v1 (SelfSubjectReviews) and admissionregistration/v1
// (ValidatingAdmissionPolicies and their bindings), and NewForConfig, which builds them from a REST config.
//
// The methods of the resource interfaces (ConfigMapInterface, PodInterface …)
// have exactly the signatures of client-go's typed clients, so a client-go
// corev1client.ConfigMapInterface is a ConfigMapInterface as it is; the
// getters (ConfigMapsGetter, PodsGetter …) return these types, so a program
// holding a client-go clientset wraps its getters (lockctl's tests do so
// with internal/testing/kubetest).
//
// lockctl does not link client-go's typed clients: each of them registers
// every API group client-go knows in one scheme when the process starts
// (docs/adr/0073).
//
// The types are aliases of lockctl's internal kubeclient package, which
// builds the clients; programs outside this module name them here.
package kube

import (
	"k8s.io/client-go/rest"

	"github.com/lockctl/lockctl/internal/base/kubeclient"
)

type (
	// Interface is what lockctl uses of a clientset: CoreV1, EventsV1,
	// AuthorizationV1, AuthenticationV1 and AdmissionregistrationV1.
	Interface = kubeclient.Interface
	// CoreV1Interface is what lockctl uses of core/v1.
	CoreV1Interface = kubeclient.CoreV1Interface
	// ConfigMapsGetter returns the ConfigMaps of a namespace.
	ConfigMapsGetter = kubeclient.ConfigMapsGetter
	// ConfigMapInterface reads and writes the ConfigMaps of a namespace.
	ConfigMapInterface = kubeclient.ConfigMapInterface
	// PodsGetter returns the Pods of a namespace.
	PodsGetter = kubeclient.PodsGetter
	// PodInterface reads, creates and deletes the Pods of a namespace and
	// reads their logs.
	PodInterface = kubeclient.PodInterface
	// NodesGetter returns the Nodes.
	NodesGetter = kubeclient.NodesGetter
	// NodeInterface reads Nodes.
	NodeInterface = kubeclient.NodeInterface
	// NamespacesGetter returns the Namespaces.
	NamespacesGetter = kubeclient.NamespacesGetter
	// NamespaceInterface lists Namespaces.
	NamespaceInterface = kubeclient.NamespaceInterface
	// EventsV1Interface is what lockctl uses of events.k8s.io/v1.
	EventsV1Interface = kubeclient.EventsV1Interface
	// EventsGetter returns the Events of a namespace.
	EventsGetter = kubeclient.EventsGetter
	// EventInterface creates Events in a namespace.
	EventInterface = kubeclient.EventInterface
	// AuthorizationV1Interface is what lockctl uses of authorization/v1.
	AuthorizationV1Interface = kubeclient.AuthorizationV1Interface
	// SelfSubjectAccessReviewsGetter returns the SelfSubjectAccessReviews.
	SelfSubjectAccessReviewsGetter = kubeclient.SelfSubjectAccessReviewsGetter
	// SelfSubjectAccessReviewInterface asks the API server what the caller
	// may do.
	SelfSubjectAccessReviewInterface = kubeclient.SelfSubjectAccessReviewInterface
	// AuthenticationV1Interface is what lockctl uses of authentication/v1.
	AuthenticationV1Interface = kubeclient.AuthenticationV1Interface
	// SelfSubjectReviewInterface asks the API server who the caller is.
	SelfSubjectReviewInterface = kubeclient.SelfSubjectReviewInterface
	// AdmissionregistrationV1Interface is what lockctl uses of
	// admissionregistration.k8s.io/v1.
	AdmissionregistrationV1Interface = kubeclient.AdmissionregistrationV1Interface
)

// NewForConfig returns the clients of cfg: one HTTP client and one
// client-side rate limiter (cfg's QPS and Burst, unless cfg has a
// RateLimiter) for the three groups, and client-go's default User-Agent when
// cfg names none.
func NewForConfig(cfg *rest.Config) (Interface, error) {
	return kubeclient.NewForConfig(cfg)
}
