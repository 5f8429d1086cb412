package scheduler

import (
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockctl/lockctl/job"
)

// Pod status reasons the reconciler acts on.
const (
	// ReasonEvicted is the status reason of a pod the kubelet evicted.
	ReasonEvicted = "Evicted"
	// ReasonNodeLost is the status reason of a pod whose node stopped
	// responding and that the node controller is deleting.
	ReasonNodeLost = "NodeLost"
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
	// revive asks for the pod to be deleted and created again.
	revive bool
	// requeue is when to look again if nothing changes.
	requeue time.Duration
}

// judge decides what a pending job's pod means, in this order: eviction,
// lost node, Unknown phase, Succeeded, OOMKilled container, Failed, deleted
// by someone else, then the unscheduled, pending and running timeouts.
func (r *Reconciler) judge(j *job.Job, pod *corev1.Pod) verdict {
	switch {
	case pod.Status.Reason == ReasonEvicted:
		if j.Spec.ErrorOnEviction {
			return verdict{state: job.Error, desc: "pod was evicted"}
		}
		return verdict{revive: true, desc: "pod was evicted"}
	case pod.DeletionTimestamp != nil && pod.Status.Reason == ReasonNodeLost:
		return verdict{revive: true, desc: "pod's node was lost"}
	case pod.Status.Phase == corev1.PodUnknown:
		return verdict{revive: true, desc: "pod phase is Unknown"}
	case pod.Status.Phase == corev1.PodSucceeded:
		if name, ok := unfinishedContainer(pod); !ok {
			return verdict{state: job.Error, desc: fmt.Sprintf("pod succeeded but container %q did not finish with exit code 0", name)}
		}
		return verdict{state: job.Success, desc: "job succeeded"}
	}
	if name := oomKilled(pod); name != "" {
		return verdict{state: job.Error, desc: fmt.Sprintf("container %q was OOMKilled", name), deletePod: true}
	}
	switch {
	case pod.Status.Phase == corev1.PodFailed:
		return verdict{state: job.Failure, desc: failureDescription(pod)}
	case pod.DeletionTimestamp != nil:
		return verdict{state: job.Error, desc: "pod deleted unexpectedly"}
	case pod.Status.Phase == corev1.PodPending:
		return r.judgePending(pod)
	case pod.Status.Phase == corev1.PodRunning:
		return r.judgeRunning(pod)
	}
	return verdict{}
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
		return verdict{state: state, reason: job.ReasonTimeout, desc: desc, deletePod: true}
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
