package podwatch

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// EventKind says what an Event reports.
type EventKind string

const (
	// EventPodMissing: no pod matched when the follow started; Follow waits
	// for it to be created (see FollowOptions.RequireExisting).
	EventPodMissing EventKind = "PodMissing"
	// EventPhase: the pod's phase changed (and on the first sight of the
	// pod). Reason and Message carry the pod's status reason and message.
	EventPhase EventKind = "Phase"
	// EventUnschedulable: the scheduler cannot place the pod; Message says
	// why.
	EventUnschedulable EventKind = "Unschedulable"
	// EventWaiting: a container is waiting, with Reason such as
	// ContainerCreating, ImagePullBackOff or CrashLoopBackOff.
	EventWaiting EventKind = "Waiting"
	// EventRunning: a container (or a new instance of it) is running.
	EventRunning EventKind = "Running"
	// EventTerminated: a container terminated with ExitCode and Reason.
	EventTerminated EventKind = "Terminated"
	// EventRestarted: a container's restart count went up to RestartCount.
	EventRestarted EventKind = "Restarted"
	// EventDeleting: the pod has been marked for deletion.
	EventDeleting EventKind = "Deleting"
	// EventDeleted: the pod was deleted; Follow returns ErrPodDeleted.
	EventDeleted EventKind = "Deleted"
	// EventLogError: the logs of Container could not be read (reported
	// once per container), or, with no Container, log streams were abandoned
	// after the pod finished. Message holds the error.
	EventLogError EventKind = "LogError"
)

// Event reports one change seen while following a pod.
type Event struct {
	// Kind says what happened.
	Kind EventKind
	// Time is when the change was observed, from the Follower's Clock.
	Time time.Time
	// Pod is the pod's name; empty for EventPodMissing with a selector.
	Pod string
	// Phase is the pod's phase when the change was observed.
	Phase corev1.PodPhase
	// Container is the container concerned; empty for pod-level events.
	Container string
	// InitContainer is true when Container is an init container.
	InitContainer bool
	// Reason is the machine-readable reason from the pod or container
	// status, if any.
	Reason string
	// Message is the human-readable message from the pod or container
	// status, or the error text of an EventLogError.
	Message string
	// ExitCode is the container's exit code; set for EventTerminated only.
	ExitCode int32
	// RestartCount is the container's restart count; zero for pod-level
	// events.
	RestartCount int32
}

// String renders the event as one line for people, without its time.
func (e Event) String() string {
	var b strings.Builder
	subject := fmt.Sprintf("pod %q", e.Pod)
	if e.Container != "" {
		subject = fmt.Sprintf("container %q", e.Container)
		if e.InitContainer {
			subject = "init " + subject
		}
	}
	switch e.Kind {
	case EventPodMissing:
		if e.Pod == "" {
			b.WriteString("no pod matches yet; waiting for it to be created")
		} else {
			fmt.Fprintf(&b, "pod %q does not exist yet; waiting for it to be created", e.Pod)
		}
	case EventPhase:
		fmt.Fprintf(&b, "%s is %s", subject, e.Phase)
		writeReason(&b, e.Reason, e.Message)
	case EventUnschedulable:
		fmt.Fprintf(&b, "%s cannot be scheduled", subject)
		writeReason(&b, "", e.Message)
	case EventWaiting:
		fmt.Fprintf(&b, "%s is waiting", subject)
		writeReason(&b, e.Reason, e.Message)
	case EventRunning:
		fmt.Fprintf(&b, "%s is running", subject)
	case EventTerminated:
		fmt.Fprintf(&b, "%s terminated with exit code %d", subject, e.ExitCode)
		if e.Reason != "" {
			fmt.Fprintf(&b, " (%s)", e.Reason)
		}
		writeReason(&b, "", e.Message)
	case EventRestarted:
		fmt.Fprintf(&b, "%s restarted (restart count %d)", subject, e.RestartCount)
	case EventDeleting:
		fmt.Fprintf(&b, "%s is being deleted", subject)
	case EventDeleted:
		fmt.Fprintf(&b, "%s was deleted", subject)
	case EventLogError:
		if e.Container == "" {
			b.WriteString(e.Message)
		} else {
			fmt.Fprintf(&b, "cannot stream logs of %s: %s", subject, e.Message)
		}
	default:
		fmt.Fprintf(&b, "%s: %s", subject, e.Kind)
		writeReason(&b, e.Reason, e.Message)
	}
	return b.String()
}

func writeReason(b *strings.Builder, reason, message string) {
	message = strings.TrimSpace(message)
	switch {
	case reason != "" && message != "":
		fmt.Fprintf(b, ": %s: %s", reason, message)
	case reason != "":
		fmt.Fprintf(b, ": %s", reason)
	case message != "":
		fmt.Fprintf(b, ": %s", message)
	}
}

// changes lists the events between two observations of a pod; old is nil on
// the first one. A non-terminal phase change comes first, a terminal one
// last, so the container events that led to it come before it.
func changes(old, pod *corev1.Pod) []Event {
	var events []Event
	base := Event{Pod: pod.Name, Phase: pod.Status.Phase}

	phaseChanged := old == nil || old.Status.Phase != pod.Status.Phase
	phase := base
	phase.Kind, phase.Reason, phase.Message = EventPhase, pod.Status.Reason, pod.Status.Message
	if phaseChanged && !finished(pod) {
		events = append(events, phase)
	}

	if msg, ok := unschedulable(pod); ok {
		if oldMsg, wasUnschedulable := unschedulable(old); !wasUnschedulable || oldMsg != msg {
			e := base
			e.Kind, e.Reason, e.Message = EventUnschedulable, corev1.PodReasonUnschedulable, msg
			events = append(events, e)
		}
	}
	if pod.DeletionTimestamp != nil && (old == nil || old.DeletionTimestamp == nil) {
		e := base
		e.Kind = EventDeleting
		events = append(events, e)
	}

	for _, c := range allContainers(pod) {
		st := containerStatus(pod, c.name, c.init)
		if st == nil {
			continue
		}
		var oldSt *corev1.ContainerStatus
		if old != nil {
			oldSt = containerStatus(old, c.name, c.init)
		}
		e := base
		e.Container, e.InitContainer, e.RestartCount = c.name, c.init, st.RestartCount
		if oldSt != nil && st.RestartCount > oldSt.RestartCount {
			restarted := e
			restarted.Kind = EventRestarted
			events = append(events, restarted)
		}
		if !stateChanged(oldSt, st) {
			continue
		}
		switch s := st.State; {
		case s.Terminated != nil:
			e.Kind, e.ExitCode = EventTerminated, s.Terminated.ExitCode
			e.Reason, e.Message = s.Terminated.Reason, s.Terminated.Message
		case s.Running != nil:
			e.Kind = EventRunning
		case s.Waiting != nil:
			e.Kind, e.Reason, e.Message = EventWaiting, s.Waiting.Reason, s.Waiting.Message
		default:
			continue
		}
		events = append(events, e)
	}

	if phaseChanged && finished(pod) {
		events = append(events, phase)
	}
	return events
}

// stateChanged reports whether a container's state differs in a way worth
// reporting: another kind of state, another waiting reason, or another
// container instance.
func stateChanged(old, st *corev1.ContainerStatus) bool {
	if old == nil {
		return true
	}
	o, n := old.State, st.State
	switch {
	case n.Terminated != nil:
		return o.Terminated == nil ||
			o.Terminated.ContainerID != n.Terminated.ContainerID ||
			o.Terminated.ExitCode != n.Terminated.ExitCode ||
			!o.Terminated.FinishedAt.Equal(&n.Terminated.FinishedAt)
	case n.Running != nil:
		return o.Running == nil || !o.Running.StartedAt.Equal(&n.Running.StartedAt)
	case n.Waiting != nil:
		return o.Waiting == nil || o.Waiting.Reason != n.Waiting.Reason
	}
	return false
}

// unschedulable returns the scheduler's message when the pod cannot be
// scheduled.
func unschedulable(pod *corev1.Pod) (string, bool) {
	if pod == nil {
		return "", false
	}
	for _, c := range pod.Status.Conditions {
		if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason == corev1.PodReasonUnschedulable {
			return c.Message, true
		}
	}
	return "", false
}
