package kube

import (
	"fmt"
	"net/http"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Clientset is the Interface of a REST config: lockctl's own clients of the
// three groups (rest.go), sharing one HTTP client (one connection) and one
// client-side rate limiter, as client-go's clientset shares them.
type Clientset struct {
	core   coreV1Client
	events eventsV1Client
	authz  authorizationV1Client
	authn  authenticationV1Client
	admreg admissionregistrationV1Client
}

var _ Interface = (*Clientset)(nil)

// CoreV1 returns the core/v1 client.
func (c *Clientset) CoreV1() CoreV1Interface { return c.core }

// EventsV1 returns the events.k8s.io/v1 client.
func (c *Clientset) EventsV1() EventsV1Interface { return c.events }

// AuthorizationV1 returns the authorization.k8s.io/v1 client.
func (c *Clientset) AuthorizationV1() AuthorizationV1Interface { return c.authz }

// AuthenticationV1 returns the authentication.k8s.io/v1 client.
func (c *Clientset) AuthenticationV1() AuthenticationV1Interface { return c.authn }

// AdmissionregistrationV1 returns the admissionregistration.k8s.io/v1
// client.
func (c *Clientset) AdmissionregistrationV1() AdmissionregistrationV1Interface { return c.admreg }

// NewForConfig returns the Clientset of cfg, as kubernetes.NewForConfig
// does for every group: client-go's default User-Agent when cfg has none,
// one HTTP client for the three groups, and one token bucket of cfg's QPS
// and Burst when cfg has no RateLimiter.
func NewForConfig(cfg *rest.Config) (*Clientset, error) {
	c := *cfg
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	httpClient, err := rest.HTTPClientFor(&c)
	if err != nil {
		return nil, err
	}
	return NewForConfigAndClient(&c, httpClient)
}

// NewForConfigAndClient is NewForConfig on a given HTTP client.
func NewForConfigAndClient(cfg *rest.Config, httpClient *http.Client) (*Clientset, error) {
	c := *cfg
	if c.RateLimiter == nil && c.QPS > 0 {
		if c.Burst <= 0 {
			return nil, fmt.Errorf("burst is required to be greater than 0 when RateLimiter is not set and QPS is set to greater than 0")
		}
		c.RateLimiter = flowcontrol.NewTokenBucketRateLimiter(c.QPS, c.Burst)
	}
	if c.UserAgent == "" {
		c.UserAgent = rest.DefaultKubernetesUserAgent()
	}
	core, err := groupClient(&c, httpClient, "/api", corev1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	events, err := groupClient(&c, httpClient, "/apis", eventsv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	authz, err := groupClient(&c, httpClient, "/apis", authorizationv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	authn, err := groupClient(&c, httpClient, "/apis", authenticationv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	admreg, err := groupClient(&c, httpClient, "/apis", admissionregistrationv1.SchemeGroupVersion)
	if err != nil {
		return nil, err
	}
	return &Clientset{
		core:   coreV1Client{core},
		events: eventsV1Client{events},
		authz:  authorizationV1Client{authz},
		authn:  authenticationV1Client{authn},
		admreg: admissionregistrationV1Client{admreg},
	}, nil
}

// groupClient returns the REST client of one group version of cfg, encoding
// and decoding with lockctl's scheme (scheme.go), as client-go's typed
// clients set up theirs.
func groupClient(cfg *rest.Config, httpClient *http.Client, apiPath string, gv schema.GroupVersion) (*rest.RESTClient, error) {
	c := *cfg
	c.GroupVersion = &gv
	c.APIPath = apiPath
	c.NegotiatedSerializer = groupSerializer{gv}
	return rest.RESTClientForConfigAndClient(&c, httpClient)
}
