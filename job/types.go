package job

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
)

// APIVersion and Kind identify a job document and a stored job record.
const (
	APIVersion = "lockctl.dev/v1alpha1"
	Kind       = "Job"
)

// DefaultCluster is the build-cluster alias used when spec.cluster is empty.
const DefaultCluster = "default"

// Type is the kind of job, as in Prow: it decides which duplicates are
// superseded and which refs are required.
type Type string

// The job types.
const (
	Periodic   Type = "periodic"
	Presubmit  Type = "presubmit"
	Postsubmit Type = "postsubmit"
	Batch      Type = "batch"
)

// Types lists every valid Type.
var Types = []Type{Periodic, Presubmit, Postsubmit, Batch}

// State is where a job is in its life.
type State string

// The job states. Success, Failure and Error are terminal; Aborted is
// terminal once the job has a completion time (the reconciler has removed its
// pod).
const (
	Triggered State = "triggered"
	Pending   State = "pending"
	Success   State = "success"
	Failure   State = "failure"
	Aborted   State = "aborted"
	Error     State = "error"
)

// Job is a job record: what to run (Spec) and what happened so far (Status).
type Job struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   JobSpec   `json:"spec"`
	Status JobStatus `json:"status,omitempty"`

	// stored is what the record the job was read from holds that this
	// lockctl does not know (a newer minor version's fields), written back
	// with it; nil when nothing.
	stored *storedRecord
}

// JobSpec is what a job runs and the rules it runs under.
type JobSpec struct {
	// Job is the job name. Duplicates, per-job limits and build IDs key on it.
	Job string `json:"job"`
	// Type is periodic, presubmit, postsubmit or batch.
	Type Type `json:"type"`
	// Refs are the repository references the job runs against. Presubmit and
	// batch jobs need at least one pull, postsubmits need org and repo.
	Refs *Refs `json:"refs,omitempty"`
	// Cluster is the build-cluster alias the pod runs in; empty means
	// DefaultCluster.
	Cluster string `json:"cluster,omitempty"`
	// MaxConcurrency limits how many jobs of this job name run at once; 0
	// means no per-job limit.
	MaxConcurrency int `json:"maxConcurrency,omitempty"`
	// Queue names a job queue whose capacity comes from the reconciler's
	// configuration; empty means no queue.
	Queue string `json:"queue,omitempty"`
	// ErrorOnEviction makes an evicted pod end the job in error instead of
	// being recreated.
	ErrorOnEviction bool `json:"errorOnEviction,omitempty"`
	// Lock, when set, names a namespace whose deploy lock the job's pod
	// holds while it runs.
	Lock *LockSpec `json:"lock,omitempty"`
	// PodSpec is the pod to run.
	PodSpec *corev1.PodSpec `json:"podSpec"`
}

// Refs are the git references a job runs against.
type Refs struct {
	Org     string `json:"org"`
	Repo    string `json:"repo"`
	BaseRef string `json:"baseRef,omitempty"`
	BaseSHA string `json:"baseSHA,omitempty"`
	Pulls   []Pull `json:"pulls,omitempty"`
}

// Pull is one pull request merged into the base for a presubmit or batch job.
type Pull struct {
	Number int    `json:"number"`
	SHA    string `json:"sha,omitempty"`
	Author string `json:"author,omitempty"`
}

// LockSpec names the namespace whose deploy lock a job holds.
type LockSpec struct {
	Namespace string `json:"namespace"`
}

// Reasons a job ended, in status.reason, for programs to act on (lockctl
// run picks its exit status by them). They never change once released.
const (
	// ReasonTimeout: the pod was not scheduled, did not start or did not
	// finish in time.
	ReasonTimeout = "Timeout"
	// ReasonSuperseded: a newer run of the same pull request took over, or a
	// newer build of the same branch waits for or holds the job's lock.
	ReasonSuperseded = "Superseded"
	// ReasonSessionEnded: the lockctl run that submitted the job ended
	// without cleaning up, and its hold on the lock expired.
	ReasonSessionEnded = "SessionEnded"
	// ReasonAbortRequested: someone asked for the job to be aborted (lockctl
	// abort, or an interrupted lockctl run).
	ReasonAbortRequested = "AbortRequested"
)

// JobStatus is what has happened to a job. It is only changed through
// Store.UpdateStatus.
type JobStatus struct {
	State State `json:"state,omitempty"`
	// Reason is a stable word for why the job ended, where its state alone
	// does not tell (see the Reason constants); Description is for people.
	Reason      string `json:"reason,omitempty"`
	Description string `json:"description,omitempty"`
	// StartTime is when the job was submitted, to the microsecond: jobs start
	// in this order.
	StartTime *metav1.MicroTime `json:"startTime,omitempty"`
	// PendingTime is when the job was admitted and its pod created.
	PendingTime *metav1.Time `json:"pendingTime,omitempty"`
	// CompletionTime is set once the job is terminal.
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`
	PodName        string       `json:"podName,omitempty"`
	BuildID        string       `json:"buildID,omitempty"`
	URL            string       `json:"url,omitempty"`
	// Revivals counts the job's pods that were lost (evicted, gone with
	// their node, taken away by Kubernetes) and replaced. Each lost pod
	// counts once, by its UID, however many reconcilers saw it go.
	Revivals int `json:"revivals,omitempty"`
	// LostPodUID is the UID of the job's last pod that was lost, counted in
	// Revivals when a reconciler decided to replace it. A reconciler that
	// still finds that pod finishes removing it and never counts it again; a
	// pod that is simply missing (not created yet) is created, not counted.
	LostPodUID types.UID `json:"lostPodUID,omitempty"`
}

// IsTerminal reports whether the status can never change again: success,
// failure, error, or aborted with a completion time.
func (s *JobStatus) IsTerminal() bool {
	switch s.State {
	case Success, Failure, Error:
		return true
	case Aborted:
		return s.CompletionTime != nil
	}
	return false
}

// IsTerminal reports whether the job can never change again.
func (j *Job) IsTerminal() bool { return j.Status.IsTerminal() }

// ClusterAlias returns the build-cluster alias of the job, DefaultCluster
// when the spec leaves it empty.
func (j *Job) ClusterAlias() string {
	if j.Spec.Cluster == "" {
		return DefaultCluster
	}
	return j.Spec.Cluster
}

// PullNumber returns the number of the job's first pull request, 0 if it has
// none.
func (j *Job) PullNumber() int {
	if j.Spec.Refs == nil || len(j.Spec.Refs.Pulls) == 0 {
		return 0
	}
	return j.Spec.Refs.Pulls[0].Number
}

// DeepCopy returns a copy of the job that shares no memory with it.
func (j *Job) DeepCopy() *Job {
	if j == nil {
		return nil
	}
	out := &Job{TypeMeta: j.TypeMeta, stored: j.stored}
	j.ObjectMeta.DeepCopyInto(&out.ObjectMeta)
	out.Spec = *j.Spec.DeepCopy()
	out.Status = *j.Status.DeepCopy()
	return out
}

// DeepCopyObject implements runtime.Object.
func (j *Job) DeepCopyObject() runtime.Object { return j.DeepCopy() }

// DeepCopy returns a copy of the spec that shares no memory with it.
func (s *JobSpec) DeepCopy() *JobSpec {
	out := *s
	if s.Refs != nil {
		refs := *s.Refs
		refs.Pulls = append([]Pull(nil), s.Refs.Pulls...)
		out.Refs = &refs
	}
	if s.Lock != nil {
		lock := *s.Lock
		out.Lock = &lock
	}
	out.PodSpec = s.PodSpec.DeepCopy()
	return &out
}

// DeepCopy returns a copy of the status that shares no memory with it.
func (s *JobStatus) DeepCopy() *JobStatus {
	out := *s
	out.StartTime = s.StartTime.DeepCopy()
	out.PendingTime = s.PendingTime.DeepCopy()
	out.CompletionTime = s.CompletionTime.DeepCopy()
	return &out
}

// SchemeGroupVersion is the group and version of the Job type.
var SchemeGroupVersion = schema.GroupVersion{Group: "lockctl.dev", Version: "v1alpha1"}

var _ runtime.Object = (*Job)(nil)
