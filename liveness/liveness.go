// Package liveness decides whether a pod is still alive, finished, evicted or
// lost with its node, from the signals current Kubernetes really sets.
//
// It is the one rule shared by the lock (is the holder's pod still there?) and
// the reconcile loop (is the job's pod still running, or must it be revived?).
//
// What Kubernetes reports for a dead node, as of v1.37:
//
//   - the node lifecycle controller sets the Node's Ready condition to Unknown
//     (no heartbeats) or False, taints the node node.kubernetes.io/unreachable
//     or not-ready, and sets each pod's Ready condition to False without
//     touching the container statuses;
//   - after the pods' toleration of that taint runs out (300 s by default) the
//     taint eviction controller adds the pod condition DisruptionTarget with
//     reason DeletionByTaintManager and deletes the pod gracefully;
//   - with no kubelet to confirm, the pod then stays Terminating: its
//     deletionTimestamp passes and it is still there.
//
// No controller sets phase Unknown or reason NodeLost any more; both are still
// honoured for older clusters.
package liveness

import (
	"time"

	corev1 "k8s.io/api/core/v1"
)

// Defaults for Options.
const (
	// DefaultNodeGrace is how long a pod's node may be NotReady or Unknown
	// before the pod counts as lost. It matches the default toleration of
	// the not-ready and unreachable taints (300 s), after which Kubernetes
	// itself evicts the pod.
	DefaultNodeGrace = 5 * time.Minute
	// DefaultTerminatingMargin is how long a terminating pod may outlive its
	// deletionTimestamp (the end of its grace period) before it counts as
	// lost: a live kubelet removes a pod within seconds of that.
	DefaultTerminatingMargin = 30 * time.Second
)

// Reasons a Verdict gives.
const (
	// ReasonEvicted: the kubelet evicted the pod (status.reason Evicted) or
	// the eviction API is removing it (DisruptionTarget EvictionByEvictionAPI).
	ReasonEvicted = "Evicted"
	// ReasonNodeLost: the pod's node is NotReady or Unknown past the grace,
	// or an older cluster reported reason NodeLost or phase Unknown.
	ReasonNodeLost = "NodeLost"
	// ReasonTerminatingTooLong: the pod is still there past the end of its
	// deletion grace period plus the margin; no kubelet is confirming it.
	ReasonTerminatingTooLong = "TerminatingTooLong"
	// ReasonFinished: the pod is Succeeded or Failed.
	ReasonFinished = "Finished"
)

// Reasons of the DisruptionTarget pod condition, as the Kubernetes
// controllers set them (k8s.io/kubernetes pkg/apis/core, not exported by
// k8s.io/api).
const (
	DisruptionTaintManager = "DeletionByTaintManager"
	DisruptionEvictionAPI  = "EvictionByEvictionAPI"
	DisruptionPreemption   = "PreemptionByScheduler"
	DisruptionPodGC        = "DeletionByPodGC"
	DisruptionKubeletEnded = "TerminationByKubelet"
)

// Options tunes Judge. The zero value uses the defaults.
type Options struct {
	// NodeGrace is how long the pod's node (or, without the node, the pod's
	// own Ready condition as the node controller sets it) may be not ready
	// before the pod is lost. 0 means DefaultNodeGrace.
	NodeGrace time.Duration
	// TerminatingMargin is how long past its deletionTimestamp a terminating
	// pod may stay before it is lost. 0 means DefaultTerminatingMargin.
	TerminatingMargin time.Duration
}

func (o Options) nodeGrace() time.Duration {
	if o.NodeGrace > 0 {
		return o.NodeGrace
	}
	return DefaultNodeGrace
}

func (o Options) terminatingMargin() time.Duration {
	if o.TerminatingMargin > 0 {
		return o.TerminatingMargin
	}
	return DefaultTerminatingMargin
}

// Verdict is what Judge makes of a pod.
type Verdict struct {
	// Alive is true while the pod may still be running its containers: a
	// lock it holds is held, a job it runs is running.
	Alive bool
	// Finished is true for a pod in phase Succeeded or Failed.
	Finished bool
	// Evicted is true for a pod evicted by the kubelet or the eviction API.
	// An evicted pod may still be Alive while it terminates.
	Evicted bool
	// Lost is true when the pod's node is gone or no kubelet confirms its
	// end: it no longer runs anything, but may stay in the API for ever.
	Lost bool
	// Disrupted is true when Kubernetes is taking the pod away through no
	// fault of its own and not by eviction: the DisruptionTarget condition
	// set by taint eviction, preemption, pod garbage collection or a node
	// shutdown, or an older cluster's node controller deleting a pod of phase
	// Unknown or reason NodeLost. The
	// pod's end, even in phase Failed, is a loss, not its failure. It may
	// still be Alive while it terminates.
	Disrupted bool
	// Reason is one of the Reason constants, or the DisruptionTarget
	// condition's reason; empty for a healthy pod.
	Reason string
	// Message says in words what was seen, for logs and status lines.
	Message string
	// Recheck, when not zero, is the time at which the verdict changes if
	// nothing else does (a grace period ends); callers look again then.
	Recheck time.Time
}

// Judge classifies pod at now. node is the node the pod is bound to, or nil
// when it is unknown or may not be read; the pod's own conditions then stand
// in for the node's.
func Judge(pod *corev1.Pod, node *corev1.Node, now time.Time, opts Options) Verdict {
	if pod == nil {
		return Verdict{Lost: true, Reason: ReasonNodeLost, Message: "pod is gone"}
	}
	dt := condition(pod, corev1.DisruptionTarget)
	if dt != nil && dt.Status != corev1.ConditionTrue {
		dt = nil
	}
	switch pod.Status.Phase {
	case corev1.PodSucceeded, corev1.PodFailed:
		v := Verdict{Finished: true, Reason: ReasonFinished, Message: "pod is " + string(pod.Status.Phase)}
		switch {
		case pod.Status.Reason == ReasonEvicted || (dt != nil && dt.Reason == DisruptionEvictionAPI):
			v.Evicted, v.Reason, v.Message = true, ReasonEvicted, "pod was evicted"
		case dt != nil:
			v.Disrupted, v.Reason = true, dt.Reason
			v.Message = "pod was disrupted (" + dt.Reason + ")"
		}
		return v
	}
	v := Verdict{Alive: true}
	if dt != nil {
		v.Reason, v.Disrupted = dt.Reason, true
		v.Message = "pod is being disrupted (" + dt.Reason + ")"
		if dt.Reason == DisruptionEvictionAPI {
			v.Evicted, v.Disrupted, v.Reason, v.Message = true, false, ReasonEvicted, "pod is being evicted"
		}
	}
	var lostAt []time.Time
	// Older clusters.
	if pod.Status.Phase == corev1.PodUnknown || pod.Status.Reason == ReasonNodeLost {
		// the older node controller deletes such pods: then they are being
		// taken away, not only unheard of.
		v.Disrupted = v.Disrupted || (pod.DeletionTimestamp != nil && !v.Evicted)
		since := pod.CreationTimestamp.Time
		if c := condition(pod, corev1.PodReady); c != nil && !c.LastTransitionTime.IsZero() {
			since = c.LastTransitionTime.Time
		}
		lostAt = append(lostAt, since.Add(opts.nodeGrace()))
		v.Message = "pod phase is Unknown or its node was lost"
	}
	// Terminating past the end of its grace period.
	if pod.DeletionTimestamp != nil {
		lostAt = append(lostAt, pod.DeletionTimestamp.Add(opts.terminatingMargin()))
		if v.Message == "" {
			v.Message = "pod is terminating"
		}
	}
	// The node is not ready: by the node itself when we have it, else by the
	// mark the node controller leaves on the pod.
	if since, ok := nodeNotReadySince(pod, node); ok {
		lostAt = append(lostAt, since.Add(opts.nodeGrace()))
		if v.Message == "" {
			v.Message = "pod's node " + pod.Spec.NodeName + " is not ready"
		}
	}
	if len(lostAt) == 0 {
		return v
	}
	first := lostAt[0]
	for _, t := range lostAt[1:] {
		if t.Before(first) {
			first = t
		}
	}
	if now.Before(first) {
		v.Recheck = first
		return v
	}
	v.Alive, v.Lost, v.Recheck = false, true, time.Time{}
	switch {
	case v.Evicted:
		// keep Reason Evicted: the eviction never completed
	case pod.DeletionTimestamp != nil && !pod.DeletionTimestamp.Add(opts.terminatingMargin()).After(now):
		if v.Reason == "" {
			v.Reason = ReasonTerminatingTooLong
		}
		v.Message = "pod is still terminating past its grace period; no kubelet confirms it"
	default:
		v.Reason = ReasonNodeLost
		v.Message = "pod's node " + pod.Spec.NodeName + " has not been ready for longer than " + opts.nodeGrace().String()
	}
	return v
}

// nodeNotReadySince returns when pod's node stopped being ready. With the
// node, its Ready condition decides; without it, the pod's Ready condition
// counts only when it is False while every container still reports ready, a
// state the kubelet never writes but the node lifecycle controller does.
func nodeNotReadySince(pod *corev1.Pod, node *corev1.Node) (time.Time, bool) {
	if node != nil && pod.Spec.NodeName != "" && node.Name == pod.Spec.NodeName {
		for _, c := range node.Status.Conditions {
			if c.Type == corev1.NodeReady && c.Status != corev1.ConditionTrue {
				return c.LastTransitionTime.Time, true
			}
		}
		return time.Time{}, false
	}
	if pod.Status.Phase != corev1.PodRunning || len(pod.Status.ContainerStatuses) == 0 {
		return time.Time{}, false
	}
	c := condition(pod, corev1.PodReady)
	if c == nil || c.Status != corev1.ConditionFalse || c.LastTransitionTime.IsZero() {
		return time.Time{}, false
	}
	for _, cs := range pod.Status.ContainerStatuses {
		if !cs.Ready || cs.State.Running == nil {
			return time.Time{}, false
		}
	}
	return c.LastTransitionTime.Time, true
}

func condition(pod *corev1.Pod, t corev1.PodConditionType) *corev1.PodCondition {
	for i := range pod.Status.Conditions {
		if pod.Status.Conditions[i].Type == t {
			return &pod.Status.Conditions[i]
		}
	}
	return nil
}
