package job

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
)

func TestNewPod(t *testing.T) {
	t.Parallel()
	j, err := Parse(readTestdata(t, "valid-postsubmit.yaml"), "x")
	require.NoError(t, err)
	j.Namespace, j.UID = ns, "uid-1"
	j.Labels = map[string]string{"team": "web"}
	j.Annotations = map[string]string{"note": "copied"}
	j.Spec.PodSpec.Containers[0].Env = []corev1.EnvVar{{Name: "MINE", Value: "1"}}

	pod := NewPod(j, "pods", "42")

	assert.Equal(t, "deploy-web-42", pod.Name)
	assert.Equal(t, "pods", pod.Namespace)
	assert.Equal(t, map[string]string{
		LabelManagedBy:       ManagedByValue,
		LabelRecord:          "deploy-web-42",
		LabelRecordNamespace: ns,
		LabelRecordUID:       "uid-1",
		LabelJob:             "deploy-web",
		LabelType:            "postsubmit",
		LabelBuildID:         "42",
		LabelOrg:             "acme",
		LabelRepo:            "web",
		LabelBaseRef:         "main",
		LabelPull:            "7",
		"team":               "web",
	}, pod.Labels)
	assert.Equal(t, map[string]string{"note": "copied"}, pod.Annotations)
	assert.Equal(t, []string{Finalizer}, pod.Finalizers, "the pod of a job holding a lock")
	unlocked := j.DeepCopy()
	unlocked.Spec.Lock = nil
	assert.Empty(t, NewPod(unlocked, "pods", "42").Finalizers, "the pod of a job without a lock")
	assert.Equal(t, []corev1.PodSchedulingGate{{Name: LockGate}}, pod.Spec.SchedulingGates)
	assert.Equal(t, corev1.RestartPolicyNever, pod.Spec.RestartPolicy)
	assert.Equal(t, "42", BuildIDOf(pod))
	assert.True(t, IsPodOf(pod, j))

	env := map[string]string{}
	for _, e := range pod.Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, map[string]string{
		"MINE": "1", "LOCKCTL_JOB": "deploy-web-42", "JOB_NAME": "deploy-web", "JOB_TYPE": "postsubmit",
		"BUILD_ID": "42", "BUILD_NUMBER": "42", "REPO_OWNER": "acme", "REPO_NAME": "web",
		"PULL_BASE_REF": "main", "PULL_BASE_SHA": "1a2b3c", "PULL_NUMBER": "7", "PULL_PULL_SHA": "9f8e7d",
		"BRANCH_NAME": "PR-7",
	}, env)
	assert.Len(t, j.Spec.PodSpec.Containers[0].Env, 1, "the job's pod spec is not changed")

	other := j.DeepCopy()
	other.UID = "uid-2"
	assert.False(t, IsPodOf(pod, other), "a pod of an earlier record of the same name is not adopted")
}
