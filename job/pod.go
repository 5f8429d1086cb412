package job

import (
	"strconv"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
)

// Finalizer is put on the pod of a job that holds a namespace lock, so that
// a pod deleted by someone else stays visible until a reconciler has
// recorded it on the job and given the lock back. Other job pods go without
// it: the record makes them recoverable, and a reconciler watching pods
// judges a deleted pod by its last state
// (docs/adr/0013-finalizer-only-for-locks.md).
const Finalizer = "lockctl.dev/job"

// LockGate is the scheduling gate that holds a job's pod back until the
// reconciler has taken the namespace lock of spec.lock for it.
const LockGate = "lockctl.dev/lock"

// PodName returns the name of the job's pod: the job record's name. One name
// per job means two reconcilers can never create two pods for it.
func PodName(j *Job) string { return j.Name }

// NewPod builds the pod that runs j in namespace with the given build ID:
// named after the job, with the job record's own labels and annotations,
// labelled with the job's identity (lockctl's labels win), the build ID and
// its refs in the environment of every container, and lockctl's finalizer
// and the lock scheduling gate when the job holds a namespace lock.
func NewPod(j *Job, namespace, buildID string) *corev1.Pod {
	spec := j.Spec.PodSpec.DeepCopy()
	if spec.RestartPolicy == "" {
		spec.RestartPolicy = corev1.RestartPolicyNever
	}
	env := PodEnv(j, buildID)
	for i := range spec.InitContainers {
		spec.InitContainers[i].Env = append(spec.InitContainers[i].Env, env...)
	}
	for i := range spec.Containers {
		spec.Containers[i].Env = append(spec.Containers[i].Env, env...)
	}
	if j.Spec.Lock != nil {
		spec.SchedulingGates = append(spec.SchedulingGates, corev1.PodSchedulingGate{Name: LockGate})
	}
	return &corev1.Pod{
		TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"},
		ObjectMeta: metav1.ObjectMeta{
			Name:        PodName(j),
			Namespace:   namespace,
			Labels:      podLabels(j, buildID),
			Annotations: copyMap(j.Annotations),
			Finalizers:  finalizers(j),
		},
		Spec: *spec,
	}
}

// finalizers are lockctl's finalizers of the job's pod: Finalizer for a job
// holding a namespace lock, none otherwise.
func finalizers(j *Job) []string {
	if j.Spec.Lock == nil {
		return nil
	}
	return []string{Finalizer}
}

// podLabels returns the labels of the job's pod: the job record's, then
// lockctl's. Refs that are not valid label values (long branch names) are
// left out; the environment has them all.
func podLabels(j *Job, buildID string) map[string]string {
	l := copyMap(j.Labels)
	if l == nil {
		l = map[string]string{}
	}
	for k, v := range map[string]string{
		LabelManagedBy:       ManagedByValue,
		LabelRecord:          j.Name,
		LabelRecordNamespace: j.Namespace,
		LabelRecordUID:       string(j.UID),
		LabelJob:             j.Spec.Job,
		LabelType:            string(j.Spec.Type),
		LabelBuildID:         buildID,
	} {
		l[k] = v
	}
	if r := j.Spec.Refs; r != nil {
		setIfValid(l, LabelOrg, r.Org)
		setIfValid(l, LabelRepo, r.Repo)
		setIfValid(l, LabelBaseRef, r.BaseRef)
	}
	if n := j.PullNumber(); n > 0 {
		l[LabelPull] = strconv.Itoa(n)
	}
	return l
}

func setIfValid(l map[string]string, k, v string) {
	if v != "" && len(validation.IsValidLabelValue(v)) == 0 {
		l[k] = v
	}
}

// PodEnv returns the environment lockctl gives a job's containers: the
// Prow variables (JOB_NAME, JOB_TYPE, BUILD_ID, REPO_OWNER, REPO_NAME,
// PULL_BASE_REF, PULL_BASE_SHA, PULL_NUMBER, PULL_PULL_SHA) plus
// BUILD_NUMBER and BRANCH_NAME as Jenkins X sets them, so lockctl run
// inside the pod finds its identity.
func PodEnv(j *Job, buildID string) []corev1.EnvVar {
	env := []corev1.EnvVar{
		{Name: "LOCKCTL_JOB", Value: j.Name},
		{Name: "JOB_NAME", Value: j.Spec.Job},
		{Name: "JOB_TYPE", Value: string(j.Spec.Type)},
		{Name: "BUILD_ID", Value: buildID},
		{Name: "BUILD_NUMBER", Value: buildID},
	}
	r := j.Spec.Refs
	if r == nil {
		return env
	}
	branch := r.BaseRef
	env = append(env,
		corev1.EnvVar{Name: "REPO_OWNER", Value: r.Org},
		corev1.EnvVar{Name: "REPO_NAME", Value: r.Repo},
		corev1.EnvVar{Name: "PULL_BASE_REF", Value: r.BaseRef},
		corev1.EnvVar{Name: "PULL_BASE_SHA", Value: r.BaseSHA},
	)
	if len(r.Pulls) > 0 {
		n := strconv.Itoa(r.Pulls[0].Number)
		branch = "PR-" + n
		env = append(env,
			corev1.EnvVar{Name: "PULL_NUMBER", Value: n},
			corev1.EnvVar{Name: "PULL_PULL_SHA", Value: r.Pulls[0].SHA},
		)
	}
	return append(env, corev1.EnvVar{Name: "BRANCH_NAME", Value: branch})
}

// BuildIDOf returns the build ID recorded on a job's pod.
func BuildIDOf(pod *corev1.Pod) string { return pod.Labels[LabelBuildID] }

// IsPodOf reports whether pod was created for the job record j (same
// namespace, name and UID), so that it may be adopted.
func IsPodOf(pod *corev1.Pod, j *Job) bool {
	return pod.Labels[LabelManagedBy] == ManagedByValue &&
		pod.Labels[LabelRecord] == j.Name &&
		pod.Labels[LabelRecordNamespace] == j.Namespace &&
		pod.Labels[LabelRecordUID] == string(j.UID)
}

func copyMap(in map[string]string) map[string]string {
	if in == nil {
		return nil
	}
	out := make(map[string]string, len(in))
	for k, v := range in {
		out[k] = v
	}
	return out
}
