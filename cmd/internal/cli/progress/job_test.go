package progress

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
)

func TestJobOutcome(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, reason, desc string
		state              job.State
		want               string
		wantCode           int
	}{
		{name: "success", state: job.Success, desc: "job succeeded", want: `job "j" (build ID 7 of job deploy) succeeded after 1m5s`, wantCode: cmdutil.CodeOK},
		{name: "failure", state: job.Failure, desc: `job failed: container "main" exited with code 3`, want: `job "j" (build ID 7 of job deploy) failed after 1m5s: container "main" exited with code 3`, wantCode: cmdutil.CodeJobFailed},
		{name: "error", state: job.Error, desc: `container "main" was OOMKilled`, want: `job "j" (build ID 7 of job deploy) ended in error after 1m5s: container "main" was OOMKilled`, wantCode: cmdutil.CodeJobFailed},
		{name: "scheduling timeout", state: job.Error, reason: job.ReasonTimeout, desc: "pod scheduling timeout", want: `job "j" (build ID 7 of job deploy) timed out after 1m5s: pod scheduling timeout`, wantCode: cmdutil.CodeTimeout},
		{name: "running timeout", state: job.Aborted, reason: job.ReasonTimeout, desc: "pod running timeout", want: `job "j" (build ID 7 of job deploy) was aborted after 1m5s: pod running timeout`, wantCode: cmdutil.CodeTimeout},
		{name: "superseded", state: job.Aborted, reason: job.ReasonSuperseded, desc: "superseded by a newer run (j2)", want: `job "j" (build ID 7 of job deploy) was aborted after 1m5s: superseded by a newer run (j2)`, wantCode: cmdutil.CodeSuperseded},
		{name: "aborted by someone", state: job.Aborted, reason: job.ReasonAbortRequested, desc: "aborted by bob", want: `job "j" (build ID 7 of job deploy) was aborted after 1m5s: aborted by bob`, wantCode: cmdutil.CodeError},
		{name: "session ended", state: job.Aborted, reason: job.ReasonSessionEnded, desc: "the lockctl run that started it ended", want: `job "j" (build ID 7 of job deploy) was aborted after 1m5s: the lockctl run that started it ended`, wantCode: cmdutil.CodeError},
		{name: "words alone decide nothing", state: job.Error, desc: "superseded by a timeout", want: `job "j" (build ID 7 of job deploy) ended in error after 1m5s: superseded by a timeout`, wantCode: cmdutil.CodeJobFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := &job.Job{ObjectMeta: metav1.ObjectMeta{Name: "j"}, Spec: job.JobSpec{Job: "deploy"}, Status: job.JobStatus{State: tt.state, Reason: tt.reason, Description: tt.desc, BuildID: "7"}}
			got, _, err := JobOutcome(j, 65*time.Second)
			assert.Equal(t, tt.want, got, "summary of %s", tt.name)
			assert.Equal(t, tt.wantCode, cmdutil.ExitCode(err), "exit code of %s", tt.name)
			if err != nil {
				var buf bytes.Buffer
				cmdutil.PrintError(&buf, err, 0)
				assert.Empty(t, buf.String(), "the summary says it all")
			}
		})
	}
}

// TestWaitJobs: jobs already ended are reported at once, in the order
// named, with their outcomes; a missing job is an error at once; the
// timeout passing first names the job waited for and exits 4.
func TestWaitJobs(t *testing.T) {
	t.Parallel()
	start := metav1.NewMicroTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))
	end := metav1.NewTime(start.Add(90 * time.Second))
	stored := func(name string, state job.State, done bool) runtime.Object {
		j := &job.Job{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci"},
			Spec: job.JobSpec{Job: "deploy-web", Type: job.Postsubmit, Refs: &job.Refs{Org: "acme", Repo: "web", BaseRef: "main"},
				PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}},
			Status: job.JobStatus{State: state, StartTime: &start, BuildID: "7"},
		}
		if done {
			j.Status.CompletionTime = &end
		}
		cm, err := job.ToConfigMap(j)
		require.NoError(t, err)
		return cm
	}
	cs := fake.NewClientset(stored("ok", job.Success, true), stored("bad", job.Failure, true), stored("slow", job.Pending, false))
	clk := testingclock.NewFakeClock(start.Time)
	store := job.NewStore(kubetest.CoreV1(cs.CoreV1()), "ci", job.StoreOptions{Clock: clk})
	cons := term.New(&bytes.Buffer{}, term.Options{Clock: clk})

	var names, lines []string
	var outcomes []error
	err := WaitJobs(t.Context(), cons, clk, store, []string{"bad", "ok"}, 0, func(j *job.Job, line string, outcome error) {
		names, lines, outcomes = append(names, j.Name), append(lines, line), append(outcomes, outcome)
	})
	require.NoError(t, err)
	assert.Equal(t, []string{"bad", "ok"}, names, "in the order named")
	require.Len(t, outcomes, 2)
	assert.Equal(t, cmdutil.CodeJobFailed, cmdutil.ExitCode(outcomes[0]), "a failed job's outcome: %v", outcomes[0])
	assert.NoError(t, outcomes[1], "a job that succeeded")
	assert.Contains(t, lines[1], "succeeded", "the summary line")

	err = WaitJobs(t.Context(), cons, clk, store, []string{"ok", "none"}, 0, func(*job.Job, string, error) {})
	assert.ErrorIs(t, err, job.ErrNotFound, "a job that does not exist")

	// NOTE: a deadline already past: the store's wait ends at once.
	err = WaitJobs(t.Context(), cons, clk, store, []string{"slow"}, time.Nanosecond, func(*job.Job, string, error) {})
	assert.ErrorIs(t, err, cmdutil.ErrWaitTimeout, "the timeout: %v", err)
	assert.Contains(t, err.Error(), `job "slow" did not end within 1ns`)
}
