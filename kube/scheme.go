package kube

import (
	"fmt"
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

// schemeCodecs is how one group version's client encodes and decodes: a
// scheme of that API group version and meta/v1's option, status and watch
// types.
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

// schemes holds each group version's codecs once built: a
// schema.GroupVersion to a *schemeCodecs, read without a lock by every
// request; building one takes schemesMu.
var (
	schemes   sync.Map
	schemesMu sync.Mutex
)

// kubeScheme returns the codecs of group version gv, built on its first
// request, so that a command builds the schemes of the groups it talks to
// and no other (lockctl version none, lockctl status core/v1's alone).
//
// NOTE: not client-go's kubernetes/scheme, whose init registers all 56 API
// group versions of client-go and links every k8s.io/api package into the
// binary (docs/adr/0073); and one scheme per group version rather than one
// of the five, so that a command does not register the types of groups it
// never calls (docs/adr/0100). A client of a new group adds it to addGroup.
func kubeScheme(gv schema.GroupVersion) *schemeCodecs {
	if c, ok := schemes.Load(gv); ok {
		return c.(*schemeCodecs)
	}
	schemesMu.Lock()
	defer schemesMu.Unlock()
	if c, ok := schemes.Load(gv); ok {
		return c.(*schemeCodecs)
	}
	s := runtime.NewScheme()
	metav1.AddToGroupVersion(s, schema.GroupVersion{Version: "v1"})
	utilruntime.Must(addGroup(s, gv))
	codecs := serializer.NewCodecFactory(s)
	c := &schemeCodecs{
		scheme:     s,
		serializer: rest.CodecFactoryForGeneratedClient(s, codecs).WithoutConversion(),
		params:     runtime.NewParameterCodec(s),
	}
	schemes.Store(gv, c)
	return c
}

// addGroup registers the types of group version gv, one of the five
// lockctl's clients use, in s.
func addGroup(s *runtime.Scheme, gv schema.GroupVersion) error {
	switch gv {
	case corev1.SchemeGroupVersion:
		return corev1.AddToScheme(s)
	case eventsv1.SchemeGroupVersion:
		return eventsv1.AddToScheme(s)
	case authorizationv1.SchemeGroupVersion:
		return authorizationv1.AddToScheme(s)
	case authenticationv1.SchemeGroupVersion:
		return authenticationv1.AddToScheme(s)
	case admissionregistrationv1.SchemeGroupVersion:
		return admissionregistrationv1.AddToScheme(s)
	}
	return fmt.Errorf("no client of API group version %s", gv)
}

// groupSerializer is the serializer of group version gv's client: its
// scheme is built on the client's first request, not with the client, as
// a Clientset makes the clients of every group and a command calls one or
// two.
type groupSerializer struct{ gv schema.GroupVersion }

var _ runtime.NegotiatedSerializer = groupSerializer{}

// SupportedMediaTypes are those of gv's codecs.
func (g groupSerializer) SupportedMediaTypes() []runtime.SerializerInfo {
	return kubeScheme(g.gv).serializer.SupportedMediaTypes()
}

// EncoderForVersion is gv's codecs'.
func (g groupSerializer) EncoderForVersion(e runtime.Encoder, gv runtime.GroupVersioner) runtime.Encoder {
	return kubeScheme(g.gv).serializer.EncoderForVersion(e, gv)
}

// DecoderToVersion is gv's codecs'.
func (g groupSerializer) DecoderToVersion(d runtime.Decoder, gv runtime.GroupVersioner) runtime.Decoder {
	return kubeScheme(g.gv).serializer.DecoderToVersion(d, gv)
}
