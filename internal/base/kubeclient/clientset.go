package kubeclient

import (
	"fmt"
	"net/http"

	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/util/flowcontrol"
)

// Interface is the part of client-go's clientset lockctl uses: the API
// groups it reads and writes (core/v1: locks, job records, pods, nodes;
// events.k8s.io/v1: the audit trail; authorization/v1: the preflight
// checks). client-go's *kubernetes.Clientset and its fake satisfy it.
//
// NOTE: lockctl builds a Clientset of these three groups rather than
// client-go's clientset of every group: a clientset held as an interface
// keeps every group's typed clients, apply configurations and the
// discovery client in the binary (about 6 MB of code; docs/adr/0064).
type Interface interface {
	CoreV1() corev1client.CoreV1Interface
	EventsV1() eventsv1client.EventsV1Interface
	AuthorizationV1() authorizationv1client.AuthorizationV1Interface
}

// Clientset is the Interface of a REST config: the typed clients of the
// three groups, sharing one HTTP client (one connection) and one
// client-side rate limiter, as client-go's clientset shares them.
type Clientset struct {
	core   *corev1client.CoreV1Client
	events *eventsv1client.EventsV1Client
	authz  *authorizationv1client.AuthorizationV1Client
}

var _ Interface = (*Clientset)(nil)

// CoreV1 returns the core/v1 client.
func (c *Clientset) CoreV1() corev1client.CoreV1Interface { return c.core }

// EventsV1 returns the events.k8s.io/v1 client.
func (c *Clientset) EventsV1() eventsv1client.EventsV1Interface { return c.events }

// AuthorizationV1 returns the authorization.k8s.io/v1 client.
func (c *Clientset) AuthorizationV1() authorizationv1client.AuthorizationV1Interface {
	return c.authz
}

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
	var cs Clientset
	var err error
	if cs.core, err = corev1client.NewForConfigAndClient(&c, httpClient); err != nil {
		return nil, err
	}
	if cs.events, err = eventsv1client.NewForConfigAndClient(&c, httpClient); err != nil {
		return nil, err
	}
	if cs.authz, err = authorizationv1client.NewForConfigAndClient(&c, httpClient); err != nil {
		return nil, err
	}
	return &cs, nil
}
