package cmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
)

func TestNewAbortCmd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    abortOptions
		wantErr string
	}{
		{name: "job", args: []string{"a"}, want: abortOptions{Name: "a"}},
		{name: "with reason", args: []string{"a", "--reason", "bad commit"}, want: abortOptions{Name: "a", Reason: "bad commit"}},
		{name: "no job", args: nil, wantErr: "accepts 1 arg(s), received 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseArgs(t, []string{"abort"}, tt.args, newAbortCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *abortOptions) { o.f = nil })
		})
	}
}

func TestRunAbort(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		finished   bool
		aborted    bool
		wantOut    string
		wantErrOut string
		wantErr    string
		wantState  job.State
	}{
		{name: "running job", args: []string{"abort", "deploy-web-2", "--reason", "bad commit"},
			wantOut: "job \"deploy-web-2\" aborted: bad commit\n", wantState: job.Aborted},
		{name: "default reason", args: []string{"abort", "deploy-web-1"},
			wantOut: "job \"deploy-web-1\" aborted: aborted by alice\n", wantState: job.Aborted},
		{name: "finished job", args: []string{"abort", "deploy-web-1"}, finished: true,
			wantErrOut: "10:02:00 job \"deploy-web-1\" already finished: error\n", wantState: job.Error},
		{name: "aborted job: already aborted, nothing written", args: []string{"abort", "deploy-web-1", "--reason", "again"}, aborted: true,
			wantErrOut: "10:02:00 job \"deploy-web-1\" already aborted: bad commit\n", wantState: job.Aborted},
		{name: "missing job", args: []string{"abort", "nope"}, wantErr: `job "nope" not found in namespace "default"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			te.env["USER"] = "alice"
			storeJobs(t, te, "deploy-web-1", "deploy-web-2")
			store := job.NewStore(kubetest.CoreV1(te.cs.CoreV1()), "default", job.StoreOptions{})
			if tt.finished {
				j, err := store.Get(t.Context(), "deploy-web-1")
				require.NoError(t, err)
				_, err = store.UpdateStatus(t.Context(), j, job.JobStatus{State: job.Error})
				require.NoError(t, err)
			}
			if tt.aborted {
				_, err := store.Abort(t.Context(), "deploy-web-1", job.ReasonAbortRequested, "bad commit")
				require.NoError(t, err)
			}
			err := te.run(tt.args...)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				assert.Equal(t, cmdutil.CodeError, cmdutil.ExitCode(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantOut, te.out.String())
			assert.Equal(t, tt.wantErrOut, te.errOut.String())
			j, err := store.Get(t.Context(), tt.args[1])
			require.NoError(t, err)
			assert.Equal(t, tt.wantState, j.Status.State)
		})
	}
}
