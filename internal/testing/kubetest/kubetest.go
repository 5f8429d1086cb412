// Package kubetest adapts client-go's clientset, and so its fake, to the
// clients lockctl's packages take (kube.Interface, the kube package's
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

	"github.com/lockctl/lockctl/kube"
)

// Clients returns cs as the clients lockctl's packages take.
func Clients(cs kubernetes.Interface) kube.Interface {
	return clientset{cs: cs}
}

// CoreV1 returns client-go's core/v1 client c (cs.CoreV1() of a clientset or
// its fake) as lockctl's.
func CoreV1(c corev1client.CoreV1Interface) kube.CoreV1Interface {
	return coreV1{c: c}
}

// EventsV1 returns client-go's events.k8s.io/v1 client c as lockctl's.
func EventsV1(c eventsv1client.EventsV1Interface) kube.EventsV1Interface {
	return eventsV1{c: c}
}

// AuthorizationV1 returns client-go's authorization/v1 client c as
// lockctl's.
func AuthorizationV1(c authorizationv1client.AuthorizationV1Interface) kube.AuthorizationV1Interface {
	return authorizationV1{c: c}
}

// client-go's resource clients are lockctl's as they are.
var (
	_ kube.ConfigMapInterface               = corev1client.ConfigMapInterface(nil)
	_ kube.PodInterface                     = corev1client.PodInterface(nil)
	_ kube.NodeInterface                    = corev1client.NodeInterface(nil)
	_ kube.NamespaceInterface               = corev1client.NamespaceInterface(nil)
	_ kube.EventInterface                   = eventsv1client.EventInterface(nil)
	_ kube.SelfSubjectAccessReviewInterface = authorizationv1client.SelfSubjectAccessReviewInterface(nil)
)

type clientset struct{ cs kubernetes.Interface }

var _ kube.Interface = clientset{}

func (c clientset) CoreV1() kube.CoreV1Interface { return CoreV1(c.cs.CoreV1()) }

func (c clientset) EventsV1() kube.EventsV1Interface { return EventsV1(c.cs.EventsV1()) }

func (c clientset) AuthorizationV1() kube.AuthorizationV1Interface {
	return AuthorizationV1(c.cs.AuthorizationV1())
}

func (c clientset) AuthenticationV1() kube.AuthenticationV1Interface {
	return authenticationV1{c: c.cs.AuthenticationV1()}
}

func (c clientset) AdmissionregistrationV1() kube.AdmissionregistrationV1Interface {
	return admissionregistrationV1{c: c.cs.AdmissionregistrationV1()}
}

func (c clientset) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.cs)
}

type coreV1 struct{ c corev1client.CoreV1Interface }

var _ kube.CoreV1Interface = coreV1{}

func (c coreV1) ConfigMaps(namespace string) kube.ConfigMapInterface {
	return c.c.ConfigMaps(namespace)
}

func (c coreV1) Pods(namespace string) kube.PodInterface { return c.c.Pods(namespace) }

func (c coreV1) Nodes() kube.NodeInterface { return c.c.Nodes() }

func (c coreV1) Namespaces() kube.NamespaceInterface { return c.c.Namespaces() }

func (c coreV1) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(c.c)
}

type eventsV1 struct {
	c eventsv1client.EventsV1Interface
}

var _ kube.EventsV1Interface = eventsV1{}

func (c eventsV1) Events(namespace string) kube.EventInterface { return c.c.Events(namespace) }

type authorizationV1 struct {
	c authorizationv1client.AuthorizationV1Interface
}

var _ kube.AuthorizationV1Interface = authorizationV1{}

func (c authorizationV1) SelfSubjectAccessReviews() kube.SelfSubjectAccessReviewInterface {
	return c.c.SelfSubjectAccessReviews()
}

type authenticationV1 struct {
	c authenticationv1client.AuthenticationV1Interface
}

var _ kube.AuthenticationV1Interface = authenticationV1{}

func (c authenticationV1) SelfSubjectReviews() kube.SelfSubjectReviewInterface {
	return c.c.SelfSubjectReviews()
}

type admissionregistrationV1 struct {
	c admissionregistrationv1client.AdmissionregistrationV1Interface
}

var _ kube.AdmissionregistrationV1Interface = admissionregistrationV1{}

func (c admissionregistrationV1) ValidatingAdmissionPolicies() kube.ValidatingAdmissionPolicyInterface {
	return c.c.ValidatingAdmissionPolicies()
}

func (c admissionregistrationV1) ValidatingAdmissionPolicyBindings() kube.ValidatingAdmissionPolicyBindingInterface {
	return c.c.ValidatingAdmissionPolicyBindings()
}
