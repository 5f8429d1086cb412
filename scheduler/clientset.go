package scheduler

import (
	"github.com/lockctl/lockctl/kube"
)

// Clientset is the part of the Kubernetes API the reconcile loop takes for
// the job cluster and each build cluster: core/v1 (job records, the
// admission ledger, pods, nodes), events.k8s.io/v1 (the audit trail) and
// authorization/v1 (Preflight). kube.NewForConfig builds one from a REST
// config; a client-go clientset needs its getters wrapped (docs/adr/0073).
type Clientset = kube.Interface
