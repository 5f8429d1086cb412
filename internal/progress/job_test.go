package progress

import (
	"bytes"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/cmdutil"
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
