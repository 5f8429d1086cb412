package kube

import (
	"context"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// Interface is what lockctl uses of the Kubernetes API: the three API
// groups it reads and writes (core/v1: locks, job records, pods, nodes;
// events.k8s.io/v1: the audit trail; authorization/v1: the preflight
// checks). Clientset implements it for a REST config; tests adapt
// client-go's clientset and its fake to it (internal/testing/kubetest).
//
// NOTE: the methods of the resource interfaces below have exactly the
// signatures of client-go's typed clients, so that a client-go
// corev1client.ConfigMapInterface is a ConfigMapInterface as it is; only the
// getters return lockctl's types. lockctl does not link client-go's typed
// clients: each of them registers every API group in client-go's scheme at
// start (docs/adr/0073).
type Interface interface {
	CoreV1() CoreV1Interface
	EventsV1() EventsV1Interface
	AuthorizationV1() AuthorizationV1Interface
	AuthenticationV1() AuthenticationV1Interface
	AdmissionregistrationV1() AdmissionregistrationV1Interface
}

// CoreV1Interface is what lockctl uses of core/v1.
type CoreV1Interface interface {
	ConfigMapsGetter
	PodsGetter
	NodesGetter
	NamespacesGetter
}

// ConfigMapsGetter returns the ConfigMaps of a namespace.
type ConfigMapsGetter interface {
	ConfigMaps(namespace string) ConfigMapInterface
}

// ConfigMapInterface reads and writes the ConfigMaps of one namespace.
type ConfigMapInterface interface {
	Create(ctx context.Context, configMap *corev1.ConfigMap, opts metav1.CreateOptions) (*corev1.ConfigMap, error)
	Update(ctx context.Context, configMap *corev1.ConfigMap, opts metav1.UpdateOptions) (*corev1.ConfigMap, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.ConfigMap, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.ConfigMapList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// PodsGetter returns the Pods of a namespace.
type PodsGetter interface {
	Pods(namespace string) PodInterface
}

// PodInterface reads, creates, patches (a finalizer) and deletes the Pods of
// one namespace and reads their logs.
type PodInterface interface {
	Create(ctx context.Context, pod *corev1.Pod, opts metav1.CreateOptions) (*corev1.Pod, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Pod, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.PodList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*corev1.Pod, error)
	// GetLogs returns the request of a pod's log, for the caller to Stream.
	GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request
}

// NodesGetter returns the Nodes.
type NodesGetter interface {
	Nodes() NodeInterface
}

// NodeInterface reads Nodes.
type NodeInterface interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*corev1.Node, error)
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.NodeList, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// NamespacesGetter returns the Namespaces.
type NamespacesGetter interface {
	Namespaces() NamespaceInterface
}

// NamespaceInterface lists Namespaces (shell completion).
type NamespaceInterface interface {
	List(ctx context.Context, opts metav1.ListOptions) (*corev1.NamespaceList, error)
}

// EventsV1Interface is what lockctl uses of events.k8s.io/v1.
type EventsV1Interface interface {
	EventsGetter
}

// EventsGetter returns the Events of a namespace.
type EventsGetter interface {
	Events(namespace string) EventInterface
}

// EventInterface creates Events in one namespace.
type EventInterface interface {
	Create(ctx context.Context, event *eventsv1.Event, opts metav1.CreateOptions) (*eventsv1.Event, error)
}

// AuthorizationV1Interface is what lockctl uses of authorization/v1.
type AuthorizationV1Interface interface {
	SelfSubjectAccessReviewsGetter
}

// SelfSubjectAccessReviewsGetter returns the SelfSubjectAccessReviews.
type SelfSubjectAccessReviewsGetter interface {
	SelfSubjectAccessReviews() SelfSubjectAccessReviewInterface
}

// SelfSubjectAccessReviewInterface asks the API server what the caller may
// do.
type SelfSubjectAccessReviewInterface interface {
	Create(ctx context.Context, selfSubjectAccessReview *authorizationv1.SelfSubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SelfSubjectAccessReview, error)
}

// AuthenticationV1Interface is what lockctl uses of authentication/v1: who
// the caller is, for an enforced lock (docs/enforcement.md).
type AuthenticationV1Interface interface {
	SelfSubjectReviewsGetter
}

// SelfSubjectReviewsGetter returns the SelfSubjectReviews.
type SelfSubjectReviewsGetter interface {
	SelfSubjectReviews() SelfSubjectReviewInterface
}

// SelfSubjectReviewInterface asks the API server who the caller is.
type SelfSubjectReviewInterface interface {
	Create(ctx context.Context, selfSubjectReview *authenticationv1.SelfSubjectReview, opts metav1.CreateOptions) (*authenticationv1.SelfSubjectReview, error)
}

// AdmissionregistrationV1Interface is what lockctl uses of
// admissionregistration.k8s.io/v1: the policies of an enforced lock.
type AdmissionregistrationV1Interface interface {
	ValidatingAdmissionPoliciesGetter
	ValidatingAdmissionPolicyBindingsGetter
}

// ValidatingAdmissionPoliciesGetter returns the ValidatingAdmissionPolicies.
type ValidatingAdmissionPoliciesGetter interface {
	ValidatingAdmissionPolicies() ValidatingAdmissionPolicyInterface
}

// ValidatingAdmissionPolicyInterface reads and writes
// ValidatingAdmissionPolicies.
type ValidatingAdmissionPolicyInterface interface {
	Create(ctx context.Context, validatingAdmissionPolicy *admissionregistrationv1.ValidatingAdmissionPolicy, opts metav1.CreateOptions) (*admissionregistrationv1.ValidatingAdmissionPolicy, error)
	Update(ctx context.Context, validatingAdmissionPolicy *admissionregistrationv1.ValidatingAdmissionPolicy, opts metav1.UpdateOptions) (*admissionregistrationv1.ValidatingAdmissionPolicy, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*admissionregistrationv1.ValidatingAdmissionPolicy, error)
	List(ctx context.Context, opts metav1.ListOptions) (*admissionregistrationv1.ValidatingAdmissionPolicyList, error)
}

// ValidatingAdmissionPolicyBindingsGetter returns the
// ValidatingAdmissionPolicyBindings.
type ValidatingAdmissionPolicyBindingsGetter interface {
	ValidatingAdmissionPolicyBindings() ValidatingAdmissionPolicyBindingInterface
}

// ValidatingAdmissionPolicyBindingInterface reads and writes
// ValidatingAdmissionPolicyBindings.
type ValidatingAdmissionPolicyBindingInterface interface {
	Create(ctx context.Context, validatingAdmissionPolicyBinding *admissionregistrationv1.ValidatingAdmissionPolicyBinding, opts metav1.CreateOptions) (*admissionregistrationv1.ValidatingAdmissionPolicyBinding, error)
	Update(ctx context.Context, validatingAdmissionPolicyBinding *admissionregistrationv1.ValidatingAdmissionPolicyBinding, opts metav1.UpdateOptions) (*admissionregistrationv1.ValidatingAdmissionPolicyBinding, error)
	Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error
	Get(ctx context.Context, name string, opts metav1.GetOptions) (*admissionregistrationv1.ValidatingAdmissionPolicyBinding, error)
	List(ctx context.Context, opts metav1.ListOptions) (*admissionregistrationv1.ValidatingAdmissionPolicyBindingList, error)
}
