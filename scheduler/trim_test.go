package scheduler

import (
	"sync"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestStripManagedFieldsWritesNothingShared: the ConfigMap handed in keeps
// its managedFields (a fake clientset hands one object to both ConfigMap
// informers of a namespace); the one returned has none. Under -race, the
// two informers' transforms of one object at once race on nothing.
func TestStripManagedFieldsWritesNothingShared(t *testing.T) {
	t.Parallel()
	shared := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
		Name: "job-1", Namespace: "ci",
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "lockctl"}},
	}}
	out, err := stripManagedFields(shared)
	require.NoError(t, err)
	assert.Nil(t, out.(*corev1.ConfigMap).ManagedFields)
	assert.Len(t, shared.ManagedFields, 1, "the object handed in is not written")

	var wg sync.WaitGroup
	for range 4 {
		wg.Add(2)
		go func() { defer wg.Done(); _, _ = stripManagedFields(shared) }()
		go func() { defer wg.Done(); _, _ = trimJobRecord(shared) }()
	}
	wg.Wait()
	assert.Len(t, shared.ManagedFields, 1)

	node := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "n", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}}}}
	out, err = stripManagedFields(node)
	require.NoError(t, err)
	assert.Nil(t, out.(*corev1.Node).ManagedFields, "any other object is stripped too")
	assert.Len(t, node.ManagedFields, 1, "in a copy")
}

// TestTrimPodWritesNothingShared: the pod handed in is left as it was.
func TestTrimPodWritesNothingShared(t *testing.T) {
	t.Parallel()
	shared := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", Namespace: "ci", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "lockctl"}}},
		Spec:       corev1.PodSpec{NodeName: "n", Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		Status:     corev1.PodStatus{Phase: corev1.PodRunning, Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Message: "ready"}}},
	}
	out, err := trimPod(shared)
	require.NoError(t, err)
	trimmed := out.(*corev1.Pod)
	assert.Nil(t, trimmed.ManagedFields)
	assert.Empty(t, trimmed.Spec.Containers)
	assert.Empty(t, trimmed.Status.Conditions[0].Message)
	assert.Len(t, shared.ManagedFields, 1, "the pod handed in is not written")
	assert.Len(t, shared.Spec.Containers, 1)
	assert.Equal(t, "ready", shared.Status.Conditions[0].Message)
}
