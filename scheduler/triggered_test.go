package scheduler

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
)

func TestTriggeredStartsPod(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{JobURLTemplate: "https://ci.example/{{.Spec.Job}}/{{.Status.BuildID}}"})
	h.submit("a")

	res := h.mustReconcile("a")

	assert.Zero(t, res.RequeueAfter)
	j := h.assertState("a", job.Pending, "job pending")
	assert.Equal(t, "1", j.Status.BuildID)
	assert.Equal(t, "a", j.Status.PodName)
	assert.Equal(t, "https://ci.example/deploy-web/1", j.Status.URL)
	assert.WithinDuration(t, h.clock.Now(), j.Status.PendingTime.Time, time.Second)
	pod := h.pod("a")
	require.NotNil(t, pod)
	assert.Equal(t, "1", pod.Labels[job.LabelBuildID])
	assert.Contains(t, pod.Spec.Containers[0].Env, corev1.EnvVar{Name: "BUILD_ID", Value: "1"})
	assert.Empty(t, pod.Finalizers, "no finalizer on the pod of a job without a lock")

	h.submit("b")
	h.mustReconcile("b")
	assert.Equal(t, "2", h.get("b").Status.BuildID, "build ids increase per job name")

	r, err := NewReconciler(kubetest.CoreV1(h.jobs.CoreV1()), jobNS, nil, Options{})
	require.NoError(t, err)
	id, err := r.Store().NextBuildID(t.Context(), "deploy-web")
	require.NoError(t, err)
	assert.Equal(t, "3", id, "build ids survive a restart of the loop")
}

func TestTriggeredRows(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name      string
		opts      Options
		job       func(*job.Job)
		setup     func(h *harness)
		wantState job.State
		wantDesc  string
		wantErr   bool
		wantPod   bool
		requeue   bool
	}{
		{
			name: "existing pod is adopted with its build id",
			setup: func(h *harness) {
				pod := job.NewPod(h.get("a"), podNS, "7")
				_, err := h.build.CoreV1().Pods(podNS).Create(h.t.Context(), pod, metav1.CreateOptions{})
				require.NoError(h.t, err)
				h.build.ClearActions()
			},
			wantState: job.Pending,
			wantDesc:  "job pending: adopted existing pod",
			wantPod:   true,
		},
		{
			name: "existing pod of another record is not adopted",
			setup: func(h *harness) {
				other := h.get("a").DeepCopy()
				other.UID = "someone-else"
				_, err := h.build.CoreV1().Pods(podNS).Create(h.t.Context(), job.NewPod(other, podNS, "1"), metav1.CreateOptions{})
				require.NoError(h.t, err)
				h.build.ClearActions()
			},
			wantState: job.Error,
			wantDesc:  `pod "a" exists and was not created for this job`,
			wantPod:   true,
		},
		{
			name:      "unknown cluster alias is an error, not retried",
			job:       func(j *job.Job) { j.Spec.Cluster = "gpu" },
			wantState: job.Error,
			wantDesc:  `unknown build cluster "gpu"`,
		},
		{
			name: "pod refused as invalid is an error, not retried",
			setup: func(h *harness) {
				h.build.PrependReactor("create", "pods", apiError(422, metav1.StatusReasonInvalid))
			},
			wantState: job.Error,
			wantDesc:  "pod can not be created: invalid from the test",
		},
		{
			name: "pod refused as forbidden is an error",
			setup: func(h *harness) {
				h.build.PrependReactor("create", "pods", apiError(403, metav1.StatusReasonForbidden))
			},
			wantState: job.Error,
			wantDesc:  "pod can not be created: forbidden from the test",
		},
		{
			name: "server error on create is retried",
			setup: func(h *harness) {
				h.build.PrependReactor("create", "pods", apiError(500, metav1.StatusReasonInternalError))
			},
			wantState: job.Pending,
			wantErr:   true,
		},
		{
			name: "throttled create is retried",
			setup: func(h *harness) {
				h.build.PrependReactor("create", "pods", apiError(429, metav1.StatusReasonTooManyRequests))
			},
			wantState: job.Pending,
			wantErr:   true,
		},
		{
			name: "lost race on the status: judged again on a fresh read, then started",
			setup: func(h *harness) {
				h.jobs.PrependReactor("update", "configmaps", conflictOnce())
			},
			wantState: job.Pending,
			wantPod:   true,
		},
		{
			name: "every race lost: writes nothing, tried again later",
			setup: func(h *harness) {
				h.jobs.PrependReactor("update", "configmaps", apiError(409, metav1.StatusReasonConflict))
			},
			wantState: job.Triggered,
			wantErr:   true,
		},
		{
			name:      "unknown queue is an error",
			job:       func(j *job.Job) { j.Spec.Queue = "nope" },
			wantState: job.Error,
			wantDesc:  `unknown queue "nope"`,
		},
		{
			name:      "queue capacity 0 runs nothing",
			opts:      Options{QueueCapacities: map[string]int{"deploys": 0}},
			job:       func(j *job.Job) { j.Spec.Queue = "deploys" },
			wantState: job.Triggered,
			requeue:   true,
		},
		{
			name: "negative queue capacity is unlimited",
			opts: Options{QueueCapacities: map[string]int{"deploys": -1}},
			job:  func(j *job.Job) { j.Spec.Queue = "deploys" },
			setup: func(h *harness) {
				h.submit("running", func(j *job.Job) { j.Spec.Queue = "deploys" })
				h.pending("running", corev1.PodRunning)
			},
			wantState: job.Pending,
			wantPod:   true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tt.opts)
			mods := []func(*job.Job){}
			if tt.job != nil {
				mods = append(mods, tt.job)
			}
			h.submit("a", mods...)
			if tt.setup != nil {
				tt.setup(h)
			}

			res, err := h.reconcile("a")

			if tt.wantErr {
				assert.Error(t, err)
			} else {
				require.NoError(t, err)
			}
			h.assertState("a", tt.wantState, tt.wantDesc)
			assert.Equal(t, tt.wantPod, h.pod("a") != nil, "pod exists")
			assert.Equal(t, tt.requeue, res.RequeueAfter > 0, "requeue")
			if tt.wantState == job.Error {
				h.jobs.ClearActions()
				h.build.ClearActions()
				h.mustReconcile("a")
				assert.Empty(t, writes(h.jobs.Actions()), "a terminal job is not written again")
				assert.Empty(t, h.podActions(), "nor its pod")
			}
		})
	}
}

// A pending job whose pod is not created yet (the create failed, or another
// reconciler has not made it yet) gets its pod; nothing was lost, so no
// revival is counted.
func TestPendingJobWithoutPodGetsOneUncounted(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{RevivalLimit: 1})
	h.submit("a")
	h.build.PrependReactor("create", "pods", apiError(500, metav1.StatusReasonInternalError))
	_, err := h.reconcile("a")
	require.Error(t, err)
	h.build.ReactionChain = h.build.ReactionChain[1:]

	for range 2 {
		h.mustReconcile("a")
	}

	j := h.assertState("a", job.Pending, "job pending")
	assert.Zero(t, j.Status.Revivals, "a pod not created yet is not a lost pod")
	assert.NotNil(t, h.pod("a"))
}

// A reconciler whose view of the job is stale does not create its pod: the
// job may have finished meanwhile.
func TestMissingPodNotCreatedFromStaleJob(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.submit("a")
	stale := h.setState("a", job.JobStatus{State: job.Pending, BuildID: "1", PodName: "a"})
	h.setState("a", job.JobStatus{State: job.Success, BuildID: "1", PodName: "a"})

	err := h.r.createMissing(t.Context(), h.r.clusters[job.DefaultCluster], stale)

	require.ErrorIs(t, err, job.ErrConflict)
	assert.Nil(t, h.pod("a"), "no pod for a finished job")
}
