package scheduler

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lockctl/lockctl/job"
)

// TestRemoveFinalizerLostRace: another reconciler took the finalizer off
// first, so the patch's test fails; the pod is read again and nothing is
// left to do.
func TestRemoveFinalizerLostRace(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.submit("a")
	pod := h.pending("a", corev1.PodSucceeded)
	pod.Finalizers = []string{job.Finalizer} // as on the pod of a job with a lock
	fresh := pod.DeepCopy()
	fresh.Finalizers = nil
	_, err := h.build.CoreV1().Pods(podNS).Update(t.Context(), fresh, metav1.UpdateOptions{})
	require.NoError(t, err)
	patches := 0
	h.build.PrependReactor("patch", "pods", func(k8stesting.Action) (bool, runtime.Object, error) {
		patches++
		return true, nil, apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "patch", schema.GroupResource{Resource: "pods"}, pod.Name, "test operation failed", 0, false)
	})

	err = removeFinalizer(t.Context(), h.r.clusters[job.DefaultCluster], pod)

	require.NoError(t, err, "a finalizer someone else removed is removed")
	assert.Equal(t, 1, patches, "no second patch when the finalizer is gone")
}
