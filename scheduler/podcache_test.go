package scheduler

import (
	"testing"
	"unsafe"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/lockctl/lockctl/job"
)

// TestCachePod: the pod cache keeps a cachedPod from which the reconciler
// gets back exactly the pod trimPod keeps, sharing nothing with the cache.
func TestCachePod(t *testing.T) {
	t.Parallel()
	started := metav1.Now()
	pod := func() *corev1.Pod {
		return &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{
				Name: "deploy-1", Namespace: "ci", UID: "u", ResourceVersion: "7",
				Labels:      map[string]string{job.LabelManagedBy: job.ManagedByValue, job.LabelRecord: "deploy-1", job.LabelJob: "deploy"},
				Annotations: map[string]string{"c": "d"}, Finalizers: []string{job.Finalizer},
				ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
			},
			Spec: corev1.PodSpec{
				Containers:      []corev1.Container{{Name: "main", Image: "alpine"}},
				SchedulingGates: []corev1.PodSchedulingGate{{Name: job.LockGate}},
				NodeName:        "n", RestartPolicy: corev1.RestartPolicyNever,
			},
			Status: corev1.PodStatus{
				Phase: corev1.PodFailed, Reason: "r", StartTime: &started,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "PodFailed"}},
				ContainerStatuses: []corev1.ContainerStatus{{Name: "main",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}}}},
				InitContainerStatuses: []corev1.ContainerStatus{{Name: "init", State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
			},
		}
	}
	want, err := trimPod(pod())
	require.NoError(t, err)
	want.(*corev1.Pod).TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "Pod"}

	obj, err := cachePod(pod())
	require.NoError(t, err)
	cp, ok := obj.(*cachedPod)
	require.True(t, ok, "cached as a cachedPod, got %T", obj)
	got := asPod(cp)
	assert.Equal(t, want, got, "the pod trimPod keeps")
	assert.Equal(t, corev1.PodFailed, podPhase(cp))
	assert.Equal(t, "n", podNode(cp))
	assert.True(t, podDone(cache.DeletedFinalStateUnknown{Obj: cp}), "a tombstone's pod is read too")

	// Changing what the reconciler got, or a copy, changes nothing cached.
	got.Labels["x"] = "y"
	got.Status.Conditions[0].Reason = "changed"
	got.Status.ContainerStatuses[0].State.Terminated.ExitCode = 1
	cp2 := cp.DeepCopyObject().(*cachedPod)
	cp2.statuses[0].State.Terminated.ExitCode = 2
	cp2.Labels["z"] = "w"
	assert.Equal(t, want, asPod(cp), "the cached pod is unchanged")

	// Repeated label keys and values share one copy across the cache.
	other, err := cachePod(pod())
	require.NoError(t, err)
	key := func(labels map[string]string, name string) string {
		for k := range labels {
			if k == name {
				return k
			}
		}
		return ""
	}
	a, b := cp.Labels, other.(*cachedPod).Labels
	assert.Equal(t, unsafe.StringData(key(a, job.LabelJob)), unsafe.StringData(key(b, job.LabelJob)), "one copy of the key")
	assert.Equal(t, unsafe.StringData(a[job.LabelJob]), unsafe.StringData(b[job.LabelJob]), "one copy of a repeated value")

	tomb := cache.DeletedFinalStateUnknown{Key: "ci/deploy-1", Obj: pod()}
	same, err := cachePod(tomb)
	require.NoError(t, err)
	assert.Equal(t, tomb, same, "anything else passes through")
	assert.Nil(t, asPod(&corev1.Node{}))
}
