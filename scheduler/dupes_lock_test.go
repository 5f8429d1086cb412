package scheduler

import (
	"fmt"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/job"
)

func presubmit(pull int) func(*job.Job) {
	return func(j *job.Job) {
		j.Spec.Job, j.Spec.Type = "pull-web-unit", job.Presubmit
		j.Spec.Refs = &job.Refs{Org: "acme", Repo: "web", Pulls: []job.Pull{{Number: pull}}}
	}
}

func TestDuplicatePresubmitsAbortedFirst(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		first string
	}{
		{name: "the newer run aborts the older", first: "new"},
		{name: "the older run aborts itself", first: "old"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Options{MaxConcurrency: 1})
			h.submit("old", presubmit(7))
			h.submit("other-pr", presubmit(8))
			h.mustReconcile("old")
			require.Equal(t, job.Pending, h.get("old").Status.State)
			h.submit("new", presubmit(7))

			h.mustReconcile(tt.first)

			old := h.assertState("old", job.Aborted, "superseded by a newer run (new)")
			assert.Equal(t, job.ReasonSuperseded, old.Status.Reason)
			assert.True(t, old.IsTerminal())
			assert.Nil(t, h.pod("old"), "the superseded run's pod is removed")
			assert.Equal(t, job.Triggered, h.get("other-pr").Status.State, "another pull request is no duplicate")
			h.mustReconcile("new")
			h.mustReconcile("other-pr")
			assert.Equal(t, job.Pending, h.get("other-pr").Status.State, "the superseded run freed its place, other-pr is older than new")
			assert.Equal(t, job.Triggered, h.get("new").Status.State)
		})
	}
}

func TestLockedJob(t *testing.T) {
	t.Parallel()
	locker := &fakeLocker{}
	h := newHarness(t, Options{Locker: locker})
	h.submit("a", func(j *job.Job) { j.Spec.Lock = &job.LockSpec{Namespace: "staging"} })
	h.mustReconcile("a")
	pod := h.pod("a")
	require.NotNil(t, pod)
	assert.Equal(t, []corev1.PodSchedulingGate{{Name: job.LockGate}}, pod.Spec.SchedulingGates, "held back until the lock is taken")
	pod.Status.Phase = corev1.PodPending
	_, err := h.build.CoreV1().Pods(podNS).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)

	res := h.mustReconcile("a")
	assert.Equal(t, lockRetry, res.RequeueAfter, "waits without blocking")
	assert.NotEmpty(t, h.pod("a").Spec.SchedulingGates)

	h.clock.Step(DefaultUnscheduledTimeout * 2)
	res = h.mustReconcile("a")
	assert.Equal(t, job.Pending, h.get("a").Status.State, "waiting for the lock is no scheduling timeout")
	assert.Equal(t, lockRetry, res.RequeueAfter)

	locker.free = true
	h.mustReconcile("a")
	pod = h.pod("a")
	assert.Empty(t, pod.Spec.SchedulingGates, "gate lifted once the lock is held")
	assert.Equal(t, []string{"staging/a"}, locker.acquired)
	assert.NotEmpty(t, pod.Annotations[AnnotationLockAcquired])

	res = h.mustReconcile("a")
	assert.Equal(t, DefaultUnscheduledTimeout, res.RequeueAfter, "the scheduling timeout counts from taking the lock")

	pod.Status.Phase = corev1.PodSucceeded
	_, err = h.build.CoreV1().Pods(podNS).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	h.mustReconcile("a")
	h.assertState("a", job.Success, "job succeeded")
	assert.Equal(t, []string{"staging/a"}, locker.released, "lock given back when the job ends")
}

func TestLockedJobWithoutLocker(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.submit("a", func(j *job.Job) { j.Spec.Lock = &job.LockSpec{Namespace: "staging"} })
	h.mustReconcile("a")
	h.mustReconcile("a")
	h.assertState("a", job.Error, "namespace locks are not available to this reconciler")
	assert.Nil(t, h.pod("a"))
}

func TestLockedJobSuperseded(t *testing.T) {
	t.Parallel()
	locker := &fakeLocker{err: fmt.Errorf("lock %q: %w", "staging", ErrLockSuperseded)}
	h := newHarness(t, Options{Locker: locker})
	h.submit("a", func(j *job.Job) { j.Spec.Lock = &job.LockSpec{Namespace: "staging"} })
	h.mustReconcile("a")
	pod := h.pod("a")
	pod.Status.Phase = corev1.PodPending
	_, err := h.build.CoreV1().Pods(podNS).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)

	h.mustReconcile("a")

	j := h.assertState("a", job.Aborted, `superseded: a newer build waits for or holds the lock of namespace "staging"`)
	assert.Equal(t, job.ReasonSuperseded, j.Status.Reason)
	assert.True(t, j.IsTerminal())
	assert.Nil(t, h.pod("a"), "the waiting pod is deleted")
}
