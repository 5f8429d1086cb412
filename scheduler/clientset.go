package scheduler

import (
	authorizationv1client "k8s.io/client-go/kubernetes/typed/authorization/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	eventsv1client "k8s.io/client-go/kubernetes/typed/events/v1"
)

// Clientset is the part of a Kubernetes clientset the reconcile loop takes
// for the job cluster and each build cluster: core/v1 (job records, the
// admission ledger, pods, nodes), events.k8s.io/v1 (the audit trail) and
// authorization/v1 (Preflight). client-go's *kubernetes.Clientset and its
// fake implement it, as does the three-group clientset lockctl builds from a
// kubeconfig (docs/adr/0064).
type Clientset interface {
	CoreV1() corev1client.CoreV1Interface
	EventsV1() eventsv1client.EventsV1Interface
	AuthorizationV1() authorizationv1client.AuthorizationV1Interface
}
