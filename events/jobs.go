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

// JobChanged records a job's move from one state to another on its record:
// reason is the new state, capitalised ("Pending", "Success"), the note
// says from what, and the job's description.
func (r *Recorder) JobChanged(ctx context.Context, before, after *job.Job) {
	if r == nil || before.Status.State == after.Status.State && before.IsTerminal() == after.IsTerminal() {
		return
	}
	// NOTE: the Event names the record by reference only: encoding the
	// whole job (pod template and all) for it cost every write an
	// allocation the size of the record.
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: after.Name, Namespace: after.Namespace, UID: after.UID, ResourceVersion: after.ResourceVersion,
	}}
	warning := after.Status.State == job.Failure || after.Status.State == job.Error
	from := string(before.Status.State)
	if from == "" {
		from = "new"
	}
	note := fmt.Sprintf("%s → %s: %s", from, after.Status.State, after.Status.Description)
	if after.Status.Reason != "" {
		note += " (" + after.Status.Reason + ")"
	}
	r.Event(ctx, cm, warning, "Reconcile", reasonOf(after.Status.State), note)
}

func reasonOf(s job.State) string {
	if s == "" {
		return "Unknown"
	}
	return string(s[0]-'a'+'A') + string(s[1:])
}
