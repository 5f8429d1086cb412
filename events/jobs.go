package events

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/job"
)

// writeTimeout bounds the write of one Event.
const writeTimeout = 5 * time.Second

// JobEvents says which changes of a job JobChanged records as Events.
type JobEvents string

const (
	// JobEventsAll records every state change of a job, and every pod it
	// lost and replaced: the default.
	JobEventsAll JobEvents = "all"
	// JobEventsWarnings records only what went wrong, the Warning Events:
	// a job that failed, ended in error (timeouts included) or was aborted
	// (by someone, a running timeout or its session ending; a run
	// superseded by a newer one is routine), and a pod lost and replaced.
	JobEventsWarnings JobEvents = "warnings"
	// JobEventsNone records no job Events (lock Events are unaffected).
	JobEventsNone JobEvents = "none"
)

// JobEventsValues lists the values of JobEvents, for flags and completion.
var JobEventsValues = []string{string(JobEventsAll), string(JobEventsWarnings), string(JobEventsNone)}

// ParseJobEvents parses all, warnings or none.
func ParseJobEvents(s string) (JobEvents, error) {
	switch e := JobEvents(s); e {
	case JobEventsAll, JobEventsWarnings, JobEventsNone:
		return e, nil
	}
	return "", fmt.Errorf("must be one of all, warnings, none, not %q", s)
}

// ReasonPodLost is the reason of the Warning Event of a job whose pod was
// lost (evicted, its node gone) and is replaced.
const ReasonPodLost = "PodLost"

// JobChanged records a job's move from one state to another on its record:
// reason is the new state, capitalised ("Pending", "Success"), the note
// says from what, and the job's description. A pod lost and replaced (the
// job stays pending, its revivals count up) is a PodLost Warning. Options.Jobs
// says which of them are recorded.
func (r *Recorder) JobChanged(ctx context.Context, before, after *job.Job) {
	if r == nil || r.jobs == JobEventsNone {
		return
	}
	moved := before.Status.State != after.Status.State || before.IsTerminal() != after.IsTerminal()
	revived := after.Status.Revivals > before.Status.Revivals
	if !moved && !revived {
		return
	}
	warning := !moved || isWarning(after)
	if r.jobs == JobEventsWarnings && !warning {
		return
	}
	// NOTE: the Event names the record by reference only: encoding the
	// whole job (pod template and all) for it cost every write an
	// allocation the size of the record.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: after.Name, Namespace: after.Namespace, UID: after.UID, ResourceVersion: after.ResourceVersion,
	}}
	from := string(before.Status.State)
	if from == "" {
		from = "new"
	}
	note := fmt.Sprintf("%s → %s: %s", from, after.Status.State, after.Status.Description)
	if after.Status.Reason != "" {
		note += " (" + after.Status.Reason + ")"
	}
	reason := reasonOf(after.Status.State)
	if !moved {
		reason = ReasonPodLost
	}
	r.Event(ctx, cm, warning, "Reconcile", reason, note)
}

// isWarning reports whether a job's new state is a Warning Event: it
// failed, ended in error, or was aborted other than by a newer run.
func isWarning(j *job.Job) bool {
	switch j.Status.State {
	case job.Failure, job.Error:
		return true
	case job.Aborted:
		return j.Status.Reason != job.ReasonSuperseded
	}
	return false
}

func reasonOf(s job.State) string {
	if s == "" {
		return "Unknown"
	}
	return string(s[0]-'a'+'A') + string(s[1:])
}
