// Package kubetest adapts client-go's clientset, and so its fake, to the
// clients lockctl's packages take (kubeclient.Interface, the kube package's
// aliases of it), for tests.
//
// The resource clients of client-go already are lockctl's (their methods have
// the same signatures); only the getters are wrapped. Each wrapper answers
// IsWatchListSemanticsUnSupported as the value it wraps does, so an informer
// or a watch built on it lists as it would on client-go's value (client-go's
// fake clientset cannot serve streaming lists and says so; its CoreV1 does
// not say).
package kubetest

import (
	"k8s.io/client-go/kubernetes"
	admissionregistrationv1client "k8s.io/client-go/kubernetes/typed/admissionregistration/v1"
	authenticationv1client "k8s.io/client-go/kubernetes/typed/authentication/v1"
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/util/watchlist"

	"github.com/lockctl/lockctl/internal/base/kubeclient"
)

// Clients returns cs as the clients lockctl's packages take.
func Clients(cs kubernetes.Interface) kubeclient.Interface {
	return clientset{cs: cs}
}

// CoreV1 returns client-go's core/v1 client c (cs.CoreV1() of a clientset or
// its fake) as lockctl's.
func CoreV1(c corev1client.CoreV1Interface) kubeclient.CoreV1Interface {
	return coreV1{c: c}
}

// EventsV1 returns client-go's events.k8s.io/v1 client c as lockctl's.
func EventsV1(c eventsv1client.EventsV1Interface) kubeclient.EventsV1Interface {
	return eventsV1{c: c}
}

// AuthorizationV1 returns client-go's authorization/v1 client c as
// lockctl's.
func AuthorizationV1(c authorizationv1client.AuthorizationV1Interface) kubeclient.AuthorizationV1Interface {
	return authorizationV1{c: c}
}

// client-go's resource clients are lockctl's as they are.
var (
	_ kubeclient.ConfigMapInterface               = corev1client.ConfigMapInterface(nil)
	_ kubeclient.PodInterface                     = corev1client.PodInterface(nil)
	_ kubeclient.NodeInterface                    = corev1client.NodeInterface(nil)
	_ kubeclient.NamespaceInterface               = corev1client.NamespaceInterface(nil)
	_ kubeclient.EventInterface                   = eventsv1client.EventInterface(nil)
	_ kubeclient.SelfSubjectAccessReviewInterface = authorizationv1client.SelfSubjectAccessReviewInterface(nil)
)

type clientset struct{ cs kubernetes.Interface }

var _ kubeclient.Interface = clientset{}

func (c clientset) CoreV1() kubeclient.CoreV1Interface { return CoreV1(c.cs.CoreV1()) }

func (c clientset) EventsV1() kubeclient.EventsV1Interface { return EventsV1(c.cs.EventsV1()) }

func (c clientset) AuthorizationV1() kubeclient.AuthorizationV1Interface {
	return AuthorizationV1(c.cs.AuthorizationV1())
}

func (c clientset) AuthenticationV1() kubeclient.AuthenticationV1Interface {
	return authenticationV1{c: c.cs.AuthenticationV1()}
}

func (c clientset) AdmissionregistrationV1() kubeclient.AdmissionregistrationV1Interface {
	return admissionregistrationV1{c: c.cs.AdmissionregistrationV1()}
}

func (c clientset) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.cs)
}

type coreV1 struct{ c corev1client.CoreV1Interface }

var _ kubeclient.CoreV1Interface = coreV1{}

func (c coreV1) ConfigMaps(namespace string) kubeclient.ConfigMapInterface {
	return c.c.ConfigMaps(namespace)
}

func (c coreV1) Pods(namespace string) kubeclient.PodInterface { return c.c.Pods(namespace) }

func (c coreV1) Nodes() kubeclient.NodeInterface { return c.c.Nodes() }

func (c coreV1) Namespaces() kubeclient.NamespaceInterface { return c.c.Namespaces() }

func (c coreV1) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.c)
}

type eventsV1 struct {
	c eventsv1client.EventsV1Interface
}

var _ kubeclient.EventsV1Interface = eventsV1{}

func (c eventsV1) Events(namespace string) kubeclient.EventInterface { return c.c.Events(namespace) }

type authorizationV1 struct {
	c authorizationv1client.AuthorizationV1Interface
}

var _ kubeclient.AuthorizationV1Interface = authorizationV1{}

func (c authorizationV1) SelfSubjectAccessReviews() kubeclient.SelfSubjectAccessReviewInterface {
	return c.c.SelfSubjectAccessReviews()
}

type authenticationV1 struct {
	c authenticationv1client.AuthenticationV1Interface
}

var _ kubeclient.AuthenticationV1Interface = authenticationV1{}

func (c authenticationV1) SelfSubjectReviews() kubeclient.SelfSubjectReviewInterface {
	return c.c.SelfSubjectReviews()
}

type admissionregistrationV1 struct {
	c admissionregistrationv1client.AdmissionregistrationV1Interface
}

var _ kubeclient.AdmissionregistrationV1Interface = admissionregistrationV1{}

func (c admissionregistrationV1) ValidatingAdmissionPolicies() kubeclient.ValidatingAdmissionPolicyInterface {
	return c.c.ValidatingAdmissionPolicies()
}

func (c admissionregistrationV1) ValidatingAdmissionPolicyBindings() kubeclient.ValidatingAdmissionPolicyBindingInterface {
	return c.c.ValidatingAdmissionPolicyBindings()
}
