package scheduler

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/liveness"
)

// Pod status reasons the reconciler acts on.
const (
	// ReasonEvicted is the status reason of a pod the kubelet evicted.
	ReasonEvicted = liveness.ReasonEvicted
	// ReasonNodeLost is the status reason of a pod whose node stopped
	// responding, as older clusters' node controller set it.
	ReasonNodeLost = liveness.ReasonNodeLost
	// ReasonOOMKilled is the termination reason of a container killed for
	// exceeding its memory limit.
	ReasonOOMKilled = "OOMKilled"
)

// verdict is what the reconciler makes of a pending job's pod.
type verdict struct {
	// state is the final state to move to; empty means the job goes on.
	state job.State
	// reason is the job's status.reason, where the state does not tell.
	reason string
	desc   string
	// deletePod asks for the pod to be deleted after the move.
	deletePod bool
	// revive asks for the pod to be let go (deleted, its finalizer
	// removed); once it is gone it is counted as lost and created again.
	revive bool
	// force deletes the pod with grace period 0: it is lost, no kubelet
	// will confirm its end.
	force bool
	// confirm marks a verdict that ends or replaces the pod on the strength
	// of a clock (timeouts, a lost node): the reconciler reads the pod from
	// the API server before acting on it, so a stale cache never decides.
	confirm bool
	// requeue is when to look again if nothing changes.
	requeue time.Duration
}

// judge decides what a pending job's pod means, in this order: succeeded,
// evicted, lost or taken away by Kubernetes (liveness.Judge, the rule the
// lock shares), OOMKilled container, Failed, deleted by someone else, then
// the unscheduled, pending and running timeouts. node is the pod's node, nil
// when it is unknown or may not be read.
func (r *Reconciler) judge(j *job.Job, pod *corev1.Pod, node *corev1.Node) verdict {
	lv := liveness.Judge(pod, node, r.clock.Now(), r.opts.Liveness)
	_, finished := unfinishedContainer(pod)
	if pod.Status.Phase == corev1.PodSucceeded && finished {
		return verdict{state: job.Success, desc: "job succeeded"}
	}
	switch {
	case lv.Evicted && j.Spec.ErrorOnEviction:
		return verdict{state: job.Error, desc: "pod was evicted"}
	case lv.Evicted || lv.Lost || lv.Disrupted:
		desc := lv.Message
		if lv.Evicted && !lv.Lost {
			desc = "pod was evicted"
		}
		return verdict{revive: true, force: lv.Lost, confirm: lv.Lost, desc: desc, requeue: r.until(lv.Recheck)}
	case pod.Status.Phase == corev1.PodSucceeded:
		name, _ := unfinishedContainer(pod)
		return verdict{state: job.Error, desc: fmt.Sprintf("pod succeeded but container %q did not finish with exit code 0", name)}
	}
	if name := oomKilled(pod); name != "" {
		return verdict{state: job.Error, desc: fmt.Sprintf("container %q was OOMKilled", name), deletePod: true}
	}
	var v verdict
	switch {
	case pod.Status.Phase == corev1.PodFailed:
		return verdict{state: job.Failure, desc: failureDescription(pod)}
	case pod.DeletionTimestamp != nil:
		return verdict{state: job.Error, desc: "pod deleted unexpectedly", confirm: true}
	case pod.Status.Phase == corev1.PodPending:
		v = r.judgePending(pod)
	case pod.Status.Phase == corev1.PodRunning:
		v = r.judgeRunning(pod)
	}
	if v.state == "" {
		v.requeue = Result{RequeueAfter: v.requeue}.sooner(r.until(lv.Recheck)).RequeueAfter
	}
	return v
}

// liveness judges pod by the shared rule, with its node when the build
// cluster's nodes may be read.
func (r *Reconciler) liveness(cl *buildCluster, pod *corev1.Pod) liveness.Verdict {
	return liveness.Judge(pod, r.nodeOf(cl, pod), r.clock.Now(), r.opts.Liveness)
}

// nodeOf returns the node pod is bound to, nil when it is not bound, not
// known, or the build cluster's nodes may not be read.
func (r *Reconciler) nodeOf(cl *buildCluster, pod *corev1.Pod) *corev1.Node {
	if cl == nil || cl.node == nil || pod.Spec.NodeName == "" {
		return nil
	}
	return cl.node(pod.Spec.NodeName)
}

// until returns how long until t, at least a millisecond; 0 for the zero
// time.
func (r *Reconciler) until(t time.Time) time.Duration {
	if t.IsZero() {
		return 0
	}
	return max(t.Sub(r.clock.Now()), time.Millisecond)
}

func (r *Reconciler) judgePending(pod *corev1.Pod) verdict {
	if pod.Status.StartTime.IsZero() {
		since := pod.CreationTimestamp.Time
		if t, err := time.Parse(time.RFC3339, pod.Annotations[AnnotationLockAcquired]); err == nil && t.After(since) {
			since = t
		}
		return r.deadline(since, r.opts.UnscheduledTimeout, job.Error, "pod scheduling timeout")
	}
	return r.deadline(pod.Status.StartTime.Time, r.opts.PendingTimeout, job.Error, "pod pending timeout")
}

func (r *Reconciler) judgeRunning(pod *corev1.Pod) verdict {
	if pod.Status.StartTime.IsZero() {
		return verdict{}
	}
	return r.deadline(pod.Status.StartTime.Time, r.opts.RunningTimeout, job.Aborted, "pod running timeout")
}

// deadline ends the job when timeout has passed since since, and otherwise
// asks to look again exactly when it will have. A negative timeout never
// passes.
func (r *Reconciler) deadline(since time.Time, timeout time.Duration, state job.State, desc string) verdict {
	if timeout < 0 {
		return verdict{}
	}
	left := since.Add(timeout).Sub(r.clock.Now())
	if left <= 0 {
		return verdict{state: state, reason: job.ReasonTimeout, desc: desc, deletePod: true, confirm: true}
	}
	return verdict{requeue: left}
}

// unfinishedContainer returns the first container or init container that did
// not terminate with exit code 0, and false; or true if all did.
func unfinishedContainer(pod *corev1.Pod) (string, bool) {
	for _, cs := range allStatuses(pod) {
		if t := cs.State.Terminated; t == nil || t.ExitCode != 0 {
			return cs.Name, false
		}
	}
	return "", true
}

func oomKilled(pod *corev1.Pod) string {
	for _, cs := range allStatuses(pod) {
		if t := cs.State.Terminated; t != nil && t.Reason == ReasonOOMKilled {
			return cs.Name
		}
		if t := cs.LastTerminationState.Terminated; t != nil && t.Reason == ReasonOOMKilled {
			return cs.Name
		}
	}
	return ""
}

func failureDescription(pod *corev1.Pod) string {
	for _, cs := range allStatuses(pod) {
		if t := cs.State.Terminated; t != nil && t.ExitCode != 0 {
			return fmt.Sprintf("job failed: container %q exited with code %d", cs.Name, t.ExitCode)
		}
	}
	return "job failed"
}

// allStatuses returns the statuses of the init containers, then the
// containers.
func allStatuses(pod *corev1.Pod) []corev1.ContainerStatus {
	out := make([]corev1.ContainerStatus, 0, len(pod.Status.InitContainerStatuses)+len(pod.Status.ContainerStatuses))
	out = append(out, pod.Status.InitContainerStatuses...)
	return append(out, pod.Status.ContainerStatuses...)
}
