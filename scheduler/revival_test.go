package scheduler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
)

// Two reconcilers over the same job: the one that finds the job pending
// before the other created its pod creates it without counting a loss, and
// an eviction is counted once, by the first to write, whatever the other
// saw.
func TestRevivalCountedOncePerLostPod(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{RevivalLimit: 1})
	other, err := NewReconciler(kubetest.CoreV1(h.jobs.CoreV1()), jobNS, map[string]kube.PodsGetter{job.DefaultCluster: kubetest.CoreV1(h.build.CoreV1())},
		Options{RevivalLimit: 1, Clock: h.clock, PodNamespace: podNS})
	require.NoError(t, err)
	cl := other.clusters[job.DefaultCluster]

	h.submit("a")
	h.setState("a", job.JobStatus{State: job.Pending, BuildID: "1", PodName: "a", Description: "job pending"})
	_, err = other.Reconcile(t.Context(), "a")
	require.NoError(t, err)
	first := h.pod("a")
	require.NotNil(t, first, "the pod not created yet is created")
	h.mustReconcile("a")
	assert.Zero(t, h.get("a").Status.Revivals, "and nobody counts it as lost")

	first.Status.Phase, first.Status.Reason = corev1.PodFailed, ReasonEvicted
	_, err = h.build.CoreV1().Pods(podNS).UpdateStatus(t.Context(), first, metav1.UpdateOptions{})
	require.NoError(t, err)
	stale := h.get("a")
	h.mustReconcile("a")
	require.Nil(t, h.pod("a"), "the evicted pod is let go")

	err = other.syncPendingForTest(t, cl, stale)
	require.ErrorIs(t, err, job.ErrConflict, "a stale view of the job decides nothing")
	_, err = other.Reconcile(t.Context(), "a")
	require.NoError(t, err)
	_, err = other.Reconcile(t.Context(), "a")
	require.NoError(t, err)
	h.mustReconcile("a")

	j := h.assertState("a", job.Pending, "")
	assert.Equal(t, 1, j.Status.Revivals, "one eviction, one revival")
	assert.Equal(t, first.UID, j.Status.LostPodUID)
	second := h.pod("a")
	require.NotNil(t, second, "the pod is created again")
	assert.NotEqual(t, first.UID, second.UID)
}

func (r *Reconciler) syncPendingForTest(t *testing.T, cl *buildCluster, j *job.Job) error {
	t.Helper()
	_, err := r.syncPending(t.Context(), cl, j)
	return err
}
