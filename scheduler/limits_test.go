package scheduler

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/job"
)

func TestLimits(t *testing.T) {
	t.Parallel()
	queue := func(q string) func(*job.Job) { return func(j *job.Job) { j.Spec.Queue = q } }
	maxc := func(n int) func(*job.Job) { return func(j *job.Job) { j.Spec.MaxConcurrency = n } }
	named := func(n string) func(*job.Job) { return func(j *job.Job) { j.Spec.Job = n } }
	tests := []struct {
		name    string
		opts    Options
		running map[string][]func(*job.Job) // pending with a running pod
		waiting map[string][]func(*job.Job) // triggered, submitted in name order
		// order is the order in which the waiting jobs are reconciled.
		order     []string
		wantStart []string
		wantWhy   map[string]string
	}{
		{
			name:      "global maximum counts running jobs",
			opts:      Options{MaxConcurrency: 2},
			running:   map[string][]func(*job.Job){"r1": nil},
			waiting:   map[string][]func(*job.Job){"w1": nil, "w2": nil},
			order:     []string{"w1", "w2"},
			wantStart: []string{"w1"},
			wantWhy:   map[string]string{"w2": "global limit of 2 running jobs reached"},
		},
		{
			name:      "per-job maximum counts only that job name",
			running:   map[string][]func(*job.Job){"r1": {maxc(1)}},
			waiting:   map[string][]func(*job.Job){"w1": {maxc(1)}, "w2": {maxc(1), named("other")}},
			order:     []string{"w1", "w2"},
			wantStart: []string{"w2"},
			wantWhy:   map[string]string{"w1": `max concurrency 1 of job "deploy-web" reached`},
		},
		{
			name:      "queue capacity counts jobs of the queue",
			opts:      Options{QueueCapacities: map[string]int{"deploys": 2, "other": 5}},
			running:   map[string][]func(*job.Job){"r1": {queue("deploys")}},
			waiting:   map[string][]func(*job.Job){"w1": {queue("deploys")}, "w2": {queue("deploys")}, "w3": {queue("other")}},
			order:     []string{"w3", "w2", "w1"},
			wantStart: []string{"w1", "w3"},
			wantWhy:   map[string]string{"w2": `queue "deploys" is full (capacity 2)`},
		},
		{
			name:      "older waiting jobs go first: creation order, whatever order they are looked at",
			opts:      Options{MaxConcurrency: 1},
			waiting:   map[string][]func(*job.Job){"w1": nil, "w2": nil, "w3": nil},
			order:     []string{"w3", "w2", "w1"},
			wantStart: []string{"w1"},
			wantWhy:   map[string]string{"w2": "global limit of 1 running jobs reached", "w3": "global limit of 1 running jobs reached"},
		},
		{
			name:      "an older job waiting for its own limit still counts against the queue",
			opts:      Options{QueueCapacities: map[string]int{"deploys": 2}},
			running:   map[string][]func(*job.Job){"r1": {maxc(1), queue("deploys")}},
			waiting:   map[string][]func(*job.Job){"w1": {maxc(1), queue("deploys")}, "w2": {named("other"), queue("deploys")}},
			order:     []string{"w2", "w1"},
			wantStart: nil,
			wantWhy: map[string]string{
				"w1": `max concurrency 1 of job "deploy-web" reached`,
				"w2": `queue "deploys" is full (capacity 2)`,
			},
		},
		{
			name:    "the limits checked in order: global first",
			opts:    Options{MaxConcurrency: 1, QueueCapacities: map[string]int{"deploys": 1}},
			running: map[string][]func(*job.Job){"r1": {maxc(1), queue("deploys")}},
			waiting: map[string][]func(*job.Job){"w1": {maxc(1), queue("deploys")}},
			order:   []string{"w1"},
			wantWhy: map[string]string{"w1": "global limit of 1 running jobs reached"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, tt.opts)
			for _, name := range sortedKeys(tt.running) {
				h.submit(name, tt.running[name]...)
				h.pending(name, corev1.PodRunning)
			}
			for _, name := range sortedKeys(tt.waiting) {
				h.submit(name, tt.waiting[name]...)
			}
			var started []string
			for _, name := range tt.order {
				res := h.mustReconcile(name)
				if h.get(name).Status.State == job.Pending {
					started = append(started, name)
					continue
				}
				assert.Equal(t, admissionRetry, res.RequeueAfter, "%s waits and looks again", name)
			}
			assert.ElementsMatch(t, tt.wantStart, started)
			_, waits, err := h.r.Admit(t.Context())
			require.NoError(t, err)
			assert.Equal(t, tt.wantWhy, waits)
		})
	}
}

func TestLimitsFreedWhenJobsFinish(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{MaxConcurrency: 1})
	h.submit("a")
	h.submit("b")
	h.mustReconcile("a")
	h.mustReconcile("b")
	require.Equal(t, job.Triggered, h.get("b").Status.State, "b waits for a")

	pod := h.pod("a")
	pod.Status.Phase = corev1.PodRunning
	pod, err := h.build.CoreV1().Pods(podNS).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	h.setState("a", job.JobStatus{State: job.Error, PodName: "a", BuildID: "1"})
	h.mustReconcile("b")
	assert.Equal(t, job.Triggered, h.get("b").Status.State, "a's pod still runs: its place is kept")

	pod.Status.Phase = corev1.PodFailed
	_, err = h.build.CoreV1().Pods(podNS).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	h.mustReconcile("b")
	assert.Equal(t, job.Pending, h.get("b").Status.State, "a's place is free once its pod stopped")

	admitted, _, err := h.r.Admit(t.Context())
	require.NoError(t, err)
	assert.Equal(t, map[string]bool{"b": true}, admitted, "a's ledger entry was collected")
}

func TestLedgerEntryOfDeletedJobIsCollected(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{MaxConcurrency: 1})
	h.submit("a")
	h.mustReconcile("a")
	require.NoError(t, h.jobs.CoreV1().ConfigMaps(jobNS).Delete(t.Context(), "a", metav1.DeleteOptions{}))
	require.NoError(t, h.build.CoreV1().Pods(podNS).Delete(t.Context(), "a", metav1.DeleteOptions{}))

	admitted, _, err := h.r.Admit(t.Context())
	require.NoError(t, err)
	assert.Empty(t, admitted)
}

func TestAdmissionLostRaceRetries(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{MaxConcurrency: 1})
	h.submit("a")
	h.submit("b")
	h.mustReconcile("a")
	h.submit("c")
	h.setState("a", job.JobStatus{State: job.Success, PodName: "a", BuildID: "1"})
	require.NoError(t, h.build.CoreV1().Pods(podNS).Delete(t.Context(), "a", metav1.DeleteOptions{}))
	h.jobs.PrependReactor("update", "configmaps", conflictOnce())

	h.mustReconcile("b")

	assert.Equal(t, job.Pending, h.get("b").Status.State, "the pass repeats on a fresh ledger")
	assert.Equal(t, job.Triggered, h.get("c").Status.State)
}

// TestAdmissionIdle: the admission passes queued for every completion are
// skipped while they could do nothing (no job waits, the ledger is empty),
// and run again as soon as a job waits or the ledger holds an entry.
func TestAdmissionIdle(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	assert.False(t, h.r.admissionIdle(t.Context()), "no pass has run yet: not known to be idle")
	h.submit("free")
	_, _, err := h.r.Admit(t.Context())
	require.NoError(t, err)
	assert.True(t, h.r.admissionIdle(t.Context()), "no limit in use: nothing to admit or free")

	h.submit("limited-1", func(j *job.Job) { j.Spec.MaxConcurrency = 1 })
	h.submit("limited-2", func(j *job.Job) { j.Spec.MaxConcurrency = 1 })
	h.mustReconcile("limited-1")
	assert.Equal(t, job.Pending, h.get("limited-1").Status.State)
	assert.False(t, h.r.admissionIdle(t.Context()), "the ledger holds limited-1")
	h.mustReconcile("limited-2")
	assert.Equal(t, job.Triggered, h.get("limited-2").Status.State, "limited-2 waits for limited-1")
	assert.False(t, h.r.admissionIdle(t.Context()))
}
