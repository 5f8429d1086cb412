package scheduler

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockctl/lockctl/job"
)

// fakeRuns answers Check with what is set for a job's name.
type fakeRuns map[string]struct {
	ended   string
	recheck time.Duration
	err     error
}

func (s fakeRuns) Check(_ context.Context, j *job.Job) (string, time.Duration, error) {
	a := s[j.Name]
	return a.ended, a.recheck, a.err
}

func TestRunChecker(t *testing.T) {
	t.Parallel()
	const ended = "the run that started it ended"
	tests := []struct {
		name        string
		answer      fakeRuns
		pending     bool // the job has a running pod; else it is triggered
		wantState   job.State
		wantReason  string
		wantRequeue time.Duration
		wantPod     bool
	}{
		{
			name:   "ended session: a running job is aborted and its pod deleted",
			answer: fakeRuns{"a": {ended: ended}}, pending: true,
			wantState: job.Aborted, wantReason: job.ReasonSessionEnded,
		},
		{
			name:      "ended session: a triggered job is aborted before it has a pod",
			answer:    fakeRuns{"a": {ended: ended}},
			wantState: job.Aborted, wantReason: job.ReasonSessionEnded,
		},
		{
			name:   "live session: the job goes on and is looked at again when the session may end",
			answer: fakeRuns{"a": {recheck: 20 * time.Second}}, pending: true,
			wantState: job.Pending, wantRequeue: 20 * time.Second, wantPod: true,
		},
		{
			name:   "live session further off than the running timeout: the timeout comes first",
			answer: fakeRuns{"a": {recheck: 2 * time.Hour}}, pending: true,
			wantState: job.Pending, wantRequeue: time.Hour, wantPod: true,
		},
		{
			name:   "failed check: the job goes on, looked at again soon",
			answer: fakeRuns{"a": {err: errors.New("forbidden")}}, pending: true,
			wantState: job.Pending, wantRequeue: runCheckRetry, wantPod: true,
		},
		{
			name:   "a job tied to no session",
			answer: fakeRuns{}, pending: true,
			wantState: job.Pending, wantRequeue: time.Hour, wantPod: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			h := newHarness(t, Options{Runs: tt.answer})
			h.submit("a")
			h.clock.SetTime(epoch)
			if tt.pending {
				h.pending("a", corev1.PodRunning, func(p *corev1.Pod) {
					p.Status.StartTime = p.CreationTimestamp.DeepCopy()
					p.Status.StartTime.Time = epoch.Add(-47 * time.Hour)
				})
			}

			res := h.mustReconcile("a")

			j := h.get("a")
			assert.Equal(t, tt.wantState, j.Status.State)
			assert.Equal(t, tt.wantReason, j.Status.Reason)
			assert.Equal(t, tt.wantRequeue, res.RequeueAfter, "requeue")
			if tt.wantState == job.Aborted {
				assert.Equal(t, ended, j.Status.Description)
				assert.True(t, j.IsTerminal(), "aborted and complete in one pass")
			}
			if tt.pending {
				assert.Equal(t, tt.wantPod, h.pod("a") != nil, "pod kept")
			}
		})
	}
}

func TestRunCheckerDryRun(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{DryRun: true, Runs: fakeRuns{"a": {ended: "gone"}}})
	h.submit("a")
	h.mustReconcile("a")
	assert.Equal(t, []string{"would abort a: gone"}, h.r.Plan())
	require.Equal(t, job.Triggered, h.get("a").Status.State, "nothing written")
}
