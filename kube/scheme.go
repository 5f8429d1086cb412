package kube

import (
	"sync"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/runtime/serializer"
	utilruntime "k8s.io/apimachinery/pkg/util/runtime"
	"k8s.io/client-go/rest"
)

// schemeCodecs is how lockctl's clients encode and decode: a scheme of the
// five API groups it uses and meta/v1's option, status and watch types.
type schemeCodecs struct {
	scheme *runtime.Scheme
	// serializer encodes bodies and decodes answers, Status errors and
	// watch events; it converts nothing (the server speaks the versions
	// asked for).
	serializer runtime.NegotiatedSerializer
	// params turns options (ListOptions, GetOptions, PodLogOptions …) into
	// query parameters.
	params runtime.ParameterCodec
}

// kubeScheme builds the scheme on first use, so that a command that makes no
// client (lockctl version) does not.
//
// NOTE: not client-go's kubernetes/scheme, whose init registers all 56 API
// group versions of client-go and links every k8s.io/api package into the
// binary (docs/adr/0073). An object of a group not registered here cannot be
// sent or decoded: a client of a new group registers it here.
var kubeScheme = sync.OnceValue(func() *schemeCodecs {
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(corev1.AddToScheme(s))
	utilruntime.Must(eventsv1.AddToScheme(s))
	utilruntime.Must(authorizationv1.AddToScheme(s))
	utilruntime.Must(authenticationv1.AddToScheme(s))
	utilruntime.Must(admissionregistrationv1.AddToScheme(s))
	codecs := serializer.NewCodecFactory(s)
	return &schemeCodecs{
		scheme:     s,
		serializer: rest.CodecFactoryForGeneratedClient(s, codecs).WithoutConversion(),
		params:     runtime.NewParameterCodec(s),
	}
})
