package kube

import (
	"context"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/rest"
)

// object is what a resource client sends and gets back.
type object interface {
	runtime.Object
	GetName() string
}

// resource is a client of one resource in one namespace ("" for a cluster
// scoped resource or all namespaces) of one group version, whose objects are
// T and lists L. It sends what client-go's generated clients send for the
// same call: the same paths, verbs and query parameters, protobuf preferred
// (these are built-in types the server encodes in protobuf) and JSON
// accepted, so the server, an audit log or a proxy sees no difference.
type resource[T object, L runtime.Object] struct {
	client    *rest.RESTClient
	name      string
	namespace string
	newObject func() T
	newList   func() L
}

// params is the parameter codec of the resource's group version.
func (r resource[T, L]) params() runtime.ParameterCodec {
	return kubeScheme(r.client.APIVersion()).params
}

// request starts a request of verb on the resource.
func (r resource[T, L]) request(verb string) *rest.Request {
	return r.client.Verb(verb).
		UseProtobufAsDefault().
		NamespaceIfScoped(r.namespace, r.namespace != "").
		Resource(r.name)
}

// timeout is the client-side timeout a list or watch asks for; 0 means none
// beyond the request's context.
func timeout(opts metav1.ListOptions) time.Duration {
	if opts.TimeoutSeconds == nil {
		return 0
	}
	return time.Duration(*opts.TimeoutSeconds) * time.Second
}

// Get reads one object.
func (r resource[T, L]) Get(ctx context.Context, name string, opts metav1.GetOptions) (T, error) {
	out := r.newObject()
	err := r.request("GET").Name(name).
		VersionedParams(&opts, r.params()).
		Do(ctx).Into(out)
	return out, err
}

// List reads the objects opts selects.
func (r resource[T, L]) List(ctx context.Context, opts metav1.ListOptions) (L, error) {
	out := r.newList()
	err := r.request("GET").
		VersionedParams(&opts, r.params()).
		Timeout(timeout(opts)).
		Do(ctx).Into(out)
	return out, err
}

// Watch watches the objects opts selects.
func (r resource[T, L]) Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
	opts.Watch = true
	return r.request("GET").
		VersionedParams(&opts, r.params()).
		Timeout(timeout(opts)).
		Watch(ctx)
}

// Create creates obj.
func (r resource[T, L]) Create(ctx context.Context, obj T, opts metav1.CreateOptions) (T, error) {
	out := r.newObject()
	err := r.request("POST").
		VersionedParams(&opts, r.params()).
		Body(obj).
		Do(ctx).Into(out)
	return out, err
}

// Update replaces obj, on its resourceVersion when it has one.
func (r resource[T, L]) Update(ctx context.Context, obj T, opts metav1.UpdateOptions) (T, error) {
	out := r.newObject()
	err := r.request("PUT").Name(obj.GetName()).
		VersionedParams(&opts, r.params()).
		Body(obj).
		Do(ctx).Into(out)
	return out, err
}

// Delete deletes one object.
func (r resource[T, L]) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	return r.request("DELETE").Name(name).
		Body(&opts).
		Do(ctx).Error()
}

// Patch patches one object (or its subresources) with data, a patch of type
// pt.
func (r resource[T, L]) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (T, error) {
	out := r.newObject()
	err := r.client.Patch(pt).
		UseProtobufAsDefault().
		NamespaceIfScoped(r.namespace, r.namespace != "").
		Resource(r.name).Name(name).SubResource(subresources...).
		VersionedParams(&opts, r.params()).
		Body(data).
		Do(ctx).Into(out)
	return out, err
}

var (
	_ ConfigMapInterface               = resource[*corev1.ConfigMap, *corev1.ConfigMapList]{}
	_ PodInterface                     = pods{}
	_ NodeInterface                    = resource[*corev1.Node, *corev1.NodeList]{}
	_ NamespaceInterface               = resource[*corev1.Namespace, *corev1.NamespaceList]{}
	_ EventInterface                   = resource[*eventsv1.Event, *eventsv1.EventList]{}
	_ SelfSubjectAccessReviewInterface = resource[*authorizationv1.SelfSubjectAccessReview, *authorizationv1.SelfSubjectAccessReview]{}
)

// coreV1Client is the core/v1 client of a Clientset.
type coreV1Client struct{ client *rest.RESTClient }

var _ CoreV1Interface = coreV1Client{}

// ConfigMaps returns the client of the ConfigMaps of namespace.
func (c coreV1Client) ConfigMaps(namespace string) ConfigMapInterface {
	return resource[*corev1.ConfigMap, *corev1.ConfigMapList]{
		client: c.client, name: "configmaps", namespace: namespace,
		newObject: func() *corev1.ConfigMap { return &corev1.ConfigMap{} },
		newList:   func() *corev1.ConfigMapList { return &corev1.ConfigMapList{} },
	}
}

// Pods returns the client of the Pods of namespace.
func (c coreV1Client) Pods(namespace string) PodInterface {
	return pods{resource[*corev1.Pod, *corev1.PodList]{
		client: c.client, name: "pods", namespace: namespace,
		newObject: func() *corev1.Pod { return &corev1.Pod{} },
		newList:   func() *corev1.PodList { return &corev1.PodList{} },
	}}
}

// Nodes returns the client of the Nodes.
func (c coreV1Client) Nodes() NodeInterface {
	return resource[*corev1.Node, *corev1.NodeList]{
		client: c.client, name: "nodes",
		newObject: func() *corev1.Node { return &corev1.Node{} },
		newList:   func() *corev1.NodeList { return &corev1.NodeList{} },
	}
}

// Namespaces returns the client of the Namespaces.
func (c coreV1Client) Namespaces() NamespaceInterface {
	return resource[*corev1.Namespace, *corev1.NamespaceList]{
		client: c.client, name: "namespaces",
		newObject: func() *corev1.Namespace { return &corev1.Namespace{} },
		newList:   func() *corev1.NamespaceList { return &corev1.NamespaceList{} },
	}
}

// pods adds the log of a pod to a resource client.
type pods struct {
	resource[*corev1.Pod, *corev1.PodList]
}

// GetLogs returns the request of the log of pod name; as client-go's, it
// asks for no content type (a log is text).
func (p pods) GetLogs(name string, opts *corev1.PodLogOptions) *rest.Request {
	return p.client.Get().
		Namespace(p.namespace).Name(name).Resource("pods").SubResource("log").
		VersionedParams(opts, kubeScheme(corev1.SchemeGroupVersion).params)
}

// eventsV1Client is the events.k8s.io/v1 client of a Clientset.
type eventsV1Client struct{ client *rest.RESTClient }

var _ EventsV1Interface = eventsV1Client{}

// Events returns the client of the Events of namespace.
func (c eventsV1Client) Events(namespace string) EventInterface {
	return resource[*eventsv1.Event, *eventsv1.EventList]{
		client: c.client, name: "events", namespace: namespace,
		newObject: func() *eventsv1.Event { return &eventsv1.Event{} },
		newList:   func() *eventsv1.EventList { return &eventsv1.EventList{} },
	}
}

// authorizationV1Client is the authorization.k8s.io/v1 client of a
// Clientset.
type authorizationV1Client struct{ client *rest.RESTClient }

var _ AuthorizationV1Interface = authorizationV1Client{}

// SelfSubjectAccessReviews returns the client of SelfSubjectAccessReviews,
// which are only created.
func (c authorizationV1Client) SelfSubjectAccessReviews() SelfSubjectAccessReviewInterface {
	return resource[*authorizationv1.SelfSubjectAccessReview, *authorizationv1.SelfSubjectAccessReview]{
		client: c.client, name: "selfsubjectaccessreviews",
		newObject: func() *authorizationv1.SelfSubjectAccessReview { return &authorizationv1.SelfSubjectAccessReview{} },
	}
}

// authenticationV1Client is the authentication.k8s.io/v1 client of a
// Clientset.
type authenticationV1Client struct{ client *rest.RESTClient }

var _ AuthenticationV1Interface = authenticationV1Client{}

// SelfSubjectReviews returns the client of SelfSubjectReviews, which are
// only created.
func (c authenticationV1Client) SelfSubjectReviews() SelfSubjectReviewInterface {
	return resource[*authenticationv1.SelfSubjectReview, *authenticationv1.SelfSubjectReview]{
		client: c.client, name: "selfsubjectreviews",
		newObject: func() *authenticationv1.SelfSubjectReview { return &authenticationv1.SelfSubjectReview{} },
	}
}

// admissionregistrationV1Client is the admissionregistration.k8s.io/v1
// client of a Clientset.
type admissionregistrationV1Client struct{ client *rest.RESTClient }

var _ AdmissionregistrationV1Interface = admissionregistrationV1Client{}

// ValidatingAdmissionPolicies returns the client of the (cluster-scoped)
// ValidatingAdmissionPolicies.
func (c admissionregistrationV1Client) ValidatingAdmissionPolicies() ValidatingAdmissionPolicyInterface {
	return resource[*admissionregistrationv1.ValidatingAdmissionPolicy, *admissionregistrationv1.ValidatingAdmissionPolicyList]{
		client: c.client, name: "validatingadmissionpolicies",
		newObject: func() *admissionregistrationv1.ValidatingAdmissionPolicy {
			return &admissionregistrationv1.ValidatingAdmissionPolicy{}
		},
		newList: func() *admissionregistrationv1.ValidatingAdmissionPolicyList {
			return &admissionregistrationv1.ValidatingAdmissionPolicyList{}
		},
	}
}

// ValidatingAdmissionPolicyBindings returns the client of the
// (cluster-scoped) ValidatingAdmissionPolicyBindings.
func (c admissionregistrationV1Client) ValidatingAdmissionPolicyBindings() ValidatingAdmissionPolicyBindingInterface {
	return resource[*admissionregistrationv1.ValidatingAdmissionPolicyBinding, *admissionregistrationv1.ValidatingAdmissionPolicyBindingList]{
		client: c.client, name: "validatingadmissionpolicybindings",
		newObject: func() *admissionregistrationv1.ValidatingAdmissionPolicyBinding {
			return &admissionregistrationv1.ValidatingAdmissionPolicyBinding{}
		},
		newList: func() *admissionregistrationv1.ValidatingAdmissionPolicyBindingList {
			return &admissionregistrationv1.ValidatingAdmissionPolicyBindingList{}
		},
	}
}
