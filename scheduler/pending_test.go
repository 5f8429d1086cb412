package scheduler

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lockctl/lockctl/job"
)

func TestPendingRows(t *testing.T) {
	t.Parallel()
	started := func(ago time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			st := metav1.NewTime(epoch.Add(-ago))
			p.Status.StartTime = &st
		}
	}
	created := func(ago time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.CreationTimestamp = metav1.NewTime(epoch.Add(-ago)) }
	}
	deleting := func(p *corev1.Pod) {
		now := metav1.NewTime(epoch)
		p.DeletionTimestamp = &now
	}
	deletingAt := func(d time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			at := metav1.NewTime(epoch.Add(d))
			p.DeletionTimestamp = &at
		}
	}
	disrupted := func(reason string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: metav1.NewTime(epoch),
			})
		}
	}
	// nodeNotReady is what the node lifecycle controller leaves on a pod of
	// a dead node: Ready False while its containers still say ready.
	nodeNotReady := func(ago time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
				Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "NodeNotReady", LastTransitionTime: metav1.NewTime(epoch.Add(-ago)),
			})
			p.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main", Ready: true, State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}}
		}
	}
	reason := func(r string) func(*corev1.Pod) { return func(p *corev1.Pod) { p.Status.Reason = r } }
	statuses := func(init []corev1.ContainerStatus, main ...corev1.ContainerStatus) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.InitContainerStatuses = init
			p.Status.ContainerStatuses = main
		}
	}
	tests := []struct {
		name        string
		job         func(*job.Job)
		phase       corev1.PodPhase
		pod         []func(*corev1.Pod)
		wantState   job.State
		wantDesc    string
		wantRequeue time.Duration
		// wantPod: "kept" (finalizer kept), "released" (finalizer removed,
		// not deleted), "deleted", "forced" (deleted with grace period 0).
		wantPod string
		// wantRevived: the pod was counted as lost, once.
		wantRevived bool
	}{
		{
			name: "evicted with error-on-eviction is an error", job: func(j *job.Job) { j.Spec.ErrorOnEviction = true },
			phase: corev1.PodFailed, pod: []func(*corev1.Pod){reason(ReasonEvicted)},
			wantState: job.Error, wantDesc: "pod was evicted", wantPod: "released",
		},
		{
			name:  "evicted pod is counted lost and deleted, to be created again once gone",
			phase: corev1.PodFailed, pod: []func(*corev1.Pod){reason(ReasonEvicted)},
			wantState: job.Pending, wantDesc: "job pending: pod lost (pod was evicted), replacing it (1)", wantPod: "deleted", wantRevived: true,
		},
		{
			name: "eviction API with error-on-eviction is an error", job: func(j *job.Job) { j.Spec.ErrorOnEviction = true },
			phase: corev1.PodRunning, pod: []func(*corev1.Pod){disrupted("EvictionByEvictionAPI"), deletingAt(30 * time.Second)},
			wantState: job.Error, wantDesc: "pod was evicted", wantPod: "released",
		},
		{
			name:  "eviction API: counted lost, released while its kubelet stops it",
			phase: corev1.PodRunning, pod: []func(*corev1.Pod){disrupted("EvictionByEvictionAPI"), deletingAt(30 * time.Second)},
			wantState: job.Pending, wantDesc: "job pending: pod lost (pod was evicted), replacing it (1)", wantPod: "released", wantRevived: true,
			wantRequeue: time.Minute,
		},
		{
			name:  "taint eviction within its grace period: counted lost, released, forced when the grace ends",
			phase: corev1.PodRunning, pod: []func(*corev1.Pod){nodeNotReady(time.Minute), disrupted("DeletionByTaintManager"), deletingAt(30 * time.Second)},
			wantState: job.Pending, wantPod: "released", wantRevived: true, wantRequeue: time.Minute,
		},
		{
			name:  "taint eviction once the node is not ready past the grace (the default toleration): force-deleted at once",
			phase: corev1.PodRunning, pod: []func(*corev1.Pod){nodeNotReady(6 * time.Minute), disrupted("DeletionByTaintManager"), deletingAt(30 * time.Second)},
			wantState: job.Pending, wantPod: "forced", wantRevived: true,
		},
		{
			name:  "taint eviction left terminating past its grace period: force-deleted",
			phase: corev1.PodRunning, pod: []func(*corev1.Pod){nodeNotReady(6 * time.Minute), disrupted("DeletionByTaintManager"), deletingAt(-time.Minute)},
			wantState: job.Pending, wantPod: "forced", wantRevived: true,
		},
		{
			name:  "node not ready within the grace, by the pod's conditions: looked at again when it ends",
			phase: corev1.PodRunning, pod: []func(*corev1.Pod){started(time.Hour), nodeNotReady(time.Minute)},
			wantState: job.Pending, wantPod: "kept", wantRequeue: 4 * time.Minute,
		},
		{
			name:  "node not ready past the grace, by the pod's conditions: force-deleted",
			phase: corev1.PodRunning, pod: []func(*corev1.Pod){started(time.Hour), nodeNotReady(6 * time.Minute)},
			wantState: job.Pending, wantPod: "forced", wantRevived: true,
		},
		{
			name:  "preempted and stopped: lost, not failed",
			phase: corev1.PodFailed, pod: []func(*corev1.Pod){disrupted("PreemptionByScheduler"), statuses(nil, terminated("main", 137, "Error"))},
			wantState: job.Pending, wantPod: "deleted", wantRevived: true,
		},
		{
			name:  "node lost (older clusters), terminating: released, forced when the grace ends",
			phase: corev1.PodRunning, pod: []func(*corev1.Pod){reason(ReasonNodeLost), deleting},
			wantState: job.Pending, wantPod: "released", wantRevived: true, wantRequeue: 30 * time.Second,
		},
		{
			name:      "phase Unknown within the node grace: looked at again when it ends",
			phase:     corev1.PodUnknown,
			wantState: job.Pending, wantPod: "kept", wantRequeue: 5 * time.Minute,
		},
		{
			name:  "phase Unknown past the node grace: force-deleted",
			phase: corev1.PodUnknown, pod: []func(*corev1.Pod){created(6 * time.Minute)},
			wantState: job.Pending, wantPod: "forced", wantRevived: true,
		},
		{
			name:  "succeeded with every container exit 0",
			phase: corev1.PodSucceeded, pod: []func(*corev1.Pod){statuses([]corev1.ContainerStatus{terminated("clone", 0, "")}, terminated("main", 0, "Completed"))},
			wantState: job.Success, wantDesc: "job succeeded", wantPod: "released",
		},
		{
			name:  "succeeded but an init container failed",
			phase: corev1.PodSucceeded, pod: []func(*corev1.Pod){statuses([]corev1.ContainerStatus{terminated("clone", 2, "Error")}, terminated("main", 0, ""))},
			wantState: job.Error, wantDesc: `pod succeeded but container "clone" did not finish with exit code 0`, wantPod: "released",
		},
		{
			name:  "succeeded but a container never terminated",
			phase: corev1.PodSucceeded, pod: []func(*corev1.Pod){statuses(nil, corev1.ContainerStatus{Name: "side"})},
			wantState: job.Error, wantDesc: `pod succeeded but container "side" did not finish with exit code 0`, wantPod: "released",
		},
		{
			name:  "failed",
			phase: corev1.PodFailed, pod: []func(*corev1.Pod){statuses(nil, terminated("main", 3, "Error"))},
			wantState: job.Failure, wantDesc: `job failed: container "main" exited with code 3`, wantPod: "released",
		},
		{
			name:  "a container OOMKilled is an error",
			phase: corev1.PodFailed, pod: []func(*corev1.Pod){statuses(nil, terminated("main", 137, ReasonOOMKilled))},
			wantState: job.Error, wantDesc: `container "main" was OOMKilled`, wantPod: "deleted",
		},
		{
			name:  "a container OOMKilled while a sidecar runs is an error",
			phase: corev1.PodRunning, pod: []func(*corev1.Pod){started(time.Minute), statuses(nil, terminated("main", 137, ReasonOOMKilled), corev1.ContainerStatus{Name: "side"})},
			wantState: job.Error, wantDesc: `container "main" was OOMKilled`, wantPod: "deleted",
		},
		{
			name:  "unscheduled: look again exactly when the timeout falls due",
			phase: corev1.PodPending, pod: []func(*corev1.Pod){created(2 * time.Minute)},
			wantState: job.Pending, wantRequeue: 3 * time.Minute, wantPod: "kept",
		},
		{
			name:  "unscheduled too long: scheduling timeout",
			phase: corev1.PodPending, pod: []func(*corev1.Pod){created(5 * time.Minute)},
			wantState: job.Error, wantDesc: "pod scheduling timeout", wantPod: "deleted",
		},
		{
			name:  "pending with a start time: look again when the pending timeout falls due",
			phase: corev1.PodPending, pod: []func(*corev1.Pod){created(time.Hour), started(4 * time.Minute)},
			wantState: job.Pending, wantRequeue: 6 * time.Minute, wantPod: "kept",
		},
		{
			name:  "pending too long: pending timeout",
			phase: corev1.PodPending, pod: []func(*corev1.Pod){created(time.Hour), started(10 * time.Minute)},
			wantState: job.Error, wantDesc: "pod pending timeout", wantPod: "deleted",
		},
		{
			name:  "running: look again when the running timeout falls due",
			phase: corev1.PodRunning, pod: []func(*corev1.Pod){started(47 * time.Hour)},
			wantState: job.Pending, wantRequeue: time.Hour, wantPod: "kept",
		},
		{
			name:  "running too long: aborted",
			phase: corev1.PodRunning, pod: []func(*corev1.Pod){started(48 * time.Hour)},
			wantState: job.Aborted, wantDesc: "pod running timeout", wantPod: "deleted",
		},
		{
			name:  "pod deleted by someone else: error",
			phase: corev1.PodRunning, pod: []func(*corev1.Pod){started(time.Minute), deleting},
			wantState: job.Error, wantDesc: "pod deleted unexpectedly", wantPod: "released",
		},
		{
			name:  "pending pod deleted by someone else: error",
			phase: corev1.PodPending, pod: []func(*corev1.Pod){deleting},
			wantState: job.Error, wantDesc: "pod deleted unexpectedly", wantPod: "released",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Options{})
			var mods []func(*job.Job)
			if tt.job != nil {
				mods = append(mods, tt.job)
			}
			h.submit("a", mods...)
			h.clock.SetTime(epoch)
			h.pending("a", tt.phase, tt.pod...)
			h.build.ClearActions()

			res := h.mustReconcile("a")

			j := h.assertState("a", tt.wantState, tt.wantDesc)
			assert.Equal(t, tt.wantRequeue, res.RequeueAfter, "requeue")
			if strings.HasSuffix(tt.wantDesc, "timeout") {
				assert.Equal(t, job.ReasonTimeout, j.Status.Reason, "a timeout says so in status.reason")
			} else {
				assert.Empty(t, j.Status.Reason)
			}
			if j.Status.State == job.Aborted {
				assert.True(t, j.IsTerminal(), "an aborted job is complete")
			}
			pod := h.pod("a")
			switch tt.wantPod {
			case "kept":
				require.NotNil(t, pod)
				assert.Empty(t, h.podActions(), "pod untouched")
			case "released":
				require.NotNil(t, pod, "pod not deleted")
				assert.NotContains(t, h.podActions(), "delete")
				assert.Empty(t, pod.Finalizers, "lockctl's finalizer removed")
			case "deleted", "forced":
				require.Contains(t, h.podActions(), "delete")
				assert.Nil(t, pod)
				assert.Equal(t, tt.wantPod == "forced", forced(h), "deleted with grace period 0")
			}
			if tt.wantRevived {
				assert.Equal(t, 1, j.Status.Revivals, "one lost pod, one revival")
				assert.Equal(t, k8stypes.UID("pod-uid-a"), j.Status.LostPodUID, "the lost pod recorded by UID")
			} else {
				assert.Zero(t, j.Status.Revivals)
			}
		})
	}
}

func TestRevivalRecreatesUntilLimit(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{RevivalLimit: 2})
	h.submit("a")
	h.mustReconcile("a")
	lose := func() {
		t.Helper()
		pod := h.pod("a")
		require.NotNil(t, pod)
		pod.Status.Phase = corev1.PodFailed
		pod.Status.Conditions = []corev1.PodCondition{{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "PreemptionByScheduler"}}
		_, err := h.build.CoreV1().Pods(podNS).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
		require.NoError(t, err)
	}
	for i := 1; i <= 2; i++ {
		lose()
		h.mustReconcile("a")
		require.Nil(t, h.pod("a"), "pass %d deletes the lost pod", i)
		j := h.assertState("a", job.Pending, "")
		assert.Equal(t, i, j.Status.Revivals, "counted when seen lost")
		h.mustReconcile("a")
		h.mustReconcile("a")
		assert.Equal(t, i, h.get("a").Status.Revivals, "the missing pod is created, not counted again")
		require.NotNil(t, h.pod("a"), "pass %d recreates it", i)
	}
	lose()
	h.mustReconcile("a")
	h.assertState("a", job.Error, "pod lost 3 times, more than the revival limit of 2: pod was disrupted (PreemptionByScheduler)")
	assert.Nil(t, h.pod("a"))
}

// forced reports whether the build cluster saw a pod deleted with grace
// period 0.
func forced(h *harness) bool {
	for _, a := range h.build.Actions() {
		if d, ok := a.(k8stesting.DeleteActionImpl); ok && d.Resource.Resource == "pods" {
			if g := d.DeleteOptions.GracePeriodSeconds; g != nil && *g == 0 {
				return true
			}
		}
	}
	return false
}

func TestEvictedPodRecreatedOnNextPass(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.submit("a")
	h.mustReconcile("a")
	pod := h.pod("a")
	pod.Status.Phase, pod.Status.Reason = corev1.PodFailed, ReasonEvicted
	_, err := h.build.CoreV1().Pods(podNS).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)

	h.mustReconcile("a")
	assert.Nil(t, h.pod("a"), "evicted pod deleted")
	h.mustReconcile("a")

	pod = h.pod("a")
	require.NotNil(t, pod, "and created again")
	assert.Empty(t, pod.Status.Reason)
	assert.Equal(t, "1", job.BuildIDOf(pod), "same run, same build id")
	assert.Equal(t, 1, h.get("a").Status.Revivals)
}

func TestAbortedJobDeletesPodAndCompletes(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.submit("a")
	h.mustReconcile("a")
	_, err := h.store.Abort(t.Context(), "a", job.ReasonAbortRequested, "aborted by alice")
	require.NoError(t, err)

	h.mustReconcile("a")

	j := h.assertState("a", job.Aborted, "aborted by alice")
	assert.True(t, j.IsTerminal())
	assert.Nil(t, h.pod("a"))

	h.submit("b")
	_, err = h.store.Abort(t.Context(), "b", job.ReasonAbortRequested, "")
	require.NoError(t, err)
	h.mustReconcile("b")
	assert.True(t, h.assertState("b", job.Aborted, "aborted").IsTerminal(), "a triggered job completes without a pod")
}

func TestTerminalJobCleansUpLeftoverPod(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.submit("a")
	h.pending("a", corev1.PodRunning)
	h.setState("a", job.JobStatus{State: job.Failure, PodName: "a"})
	h.build.ClearActions()

	h.mustReconcile("a")

	assert.Equal(t, []string{"delete"}, h.podActions(), "a pod of a finished job does not keep running (no finalizer to remove)")
	assert.Nil(t, h.pod("a"))
}
