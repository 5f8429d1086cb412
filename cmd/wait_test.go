package cmd

import (
	"regexp"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
)

func TestNewWaitCmd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    waitOptions
		wantErr string
	}{
		{name: "one job", args: []string{"a"}, want: waitOptions{Names: []string{"a"}, For: "succeeded"}},
		{name: "several, finished, timeout", args: []string{"a", "b", "--for", "finished", "--timeout", "5m", "-o", "json"},
			want: waitOptions{Names: []string{"a", "b"}, For: "finished", Timeout: 5 * time.Minute, Output: "json"}},
		{name: "as get jobs -o name prints them", args: []string{"job/a", "b"}, want: waitOptions{Names: []string{"a", "b"}, For: "succeeded"}},
		{name: "no job", args: nil, wantErr: "requires at least 1 arg(s), only received 0"},
		{name: "bad condition", args: []string{"a", "--for", "delete"}, wantErr: "must be one of succeeded, finished"},
		{name: "negative timeout", args: []string{"a", "--timeout", "-1s"}, wantErr: "--timeout must not be negative, got -1s"},
		{name: "a job twice", args: []string{"a", "a"}, wantErr: `job "a" is named twice`},
		{name: "a job twice, once as job/NAME", args: []string{"job/a", "a"}, wantErr: `job "a" is named twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseArgs(t, []string{"wait"}, tt.args, newWaitCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *waitOptions) { o.f = nil })
		})
	}
}

// endJob moves the stored job name to pending, then to state after d on
// the fake clock, with its build ID and description.
func endJob(t *testing.T, te *testEnv, name string, state job.State, reason string, d time.Duration) *job.Job {
	t.Helper()
	store := job.NewStore(kubetest.CoreV1(te.cs.CoreV1()), "default", job.StoreOptions{Clock: te.clock})
	j, err := store.Get(t.Context(), name)
	require.NoError(t, err)
	if j.Status.State == job.Triggered {
		j, err = store.UpdateStatus(t.Context(), j, job.JobStatus{State: job.Pending, StartTime: j.Status.StartTime, PodName: name, BuildID: "7", Description: "job pending"})
		require.NoError(t, err)
	}
	st := j.Status
	st.State, st.Reason, st.Description = state, reason, "job "+string(state)
	st.CompletionTime = nil
	te.clock.Step(d)
	if state == job.Aborted {
		// NOTE: an aborted job ends once the reconciler completes it.
		now := metav1.NewTime(te.clock.Now())
		st.CompletionTime = &now
	}
	j, err = store.UpdateStatus(t.Context(), j, st)
	require.NoError(t, err)
	return j
}

func TestRunWait(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		end        map[string]job.State
		reason     string
		wantOut    string
		golden     string
		wantErrOut string
		wantErr    string
		wantCode   int
	}{
		{
			name: "succeeded", args: []string{"wait", "deploy-web-1"}, end: map[string]job.State{"deploy-web-1": job.Success},
			wantOut: "job \"deploy-web-1\" (build ID 7 of job deploy-web) succeeded after 3m\n",
		},
		{
			name: "failed", args: []string{"wait", "deploy-web-1"}, end: map[string]job.State{"deploy-web-1": job.Failure},
			wantOut: "job \"deploy-web-1\" (build ID 7 of job deploy-web) failed after 3m\n", wantCode: cmdutil.CodeJobFailed,
		},
		{
			name: "failed but finished", args: []string{"wait", "deploy-web-1", "--for", "finished"}, end: map[string]job.State{"deploy-web-1": job.Failure},
			wantOut: "job \"deploy-web-1\" (build ID 7 of job deploy-web) failed after 3m\n",
		},
		{
			name: "timed out in the cluster", args: []string{"wait", "deploy-web-1"}, end: map[string]job.State{"deploy-web-1": job.Error}, reason: job.ReasonTimeout,
			wantOut: "job \"deploy-web-1\" (build ID 7 of job deploy-web) timed out after 3m\n", wantCode: cmdutil.CodeTimeout,
		},
		{
			name: "aborted", args: []string{"wait", "deploy-web-1"}, end: map[string]job.State{"deploy-web-1": job.Aborted},
			wantOut: "job \"deploy-web-1\" (build ID 7 of job deploy-web) was aborted after 3m\n", wantCode: cmdutil.CodeError,
		},
		{
			name: "the first that did not succeed picks the code", args: []string{"wait", "deploy-web-2", "deploy-web-1"},
			end:     map[string]job.State{"deploy-web-1": job.Success, "deploy-web-2": job.Failure},
			wantOut: "job \"deploy-web-2\" (build ID 7 of job deploy-web) failed after 2m\njob \"deploy-web-1\" (build ID 7 of job deploy-web) succeeded after 4m\n", wantCode: cmdutil.CodeJobFailed,
		},
		{
			name: "as yaml", args: []string{"wait", "deploy-web-1", "-o", "yaml"}, end: map[string]job.State{"deploy-web-1": job.Success},
			golden: "wait/job.yaml.golden",
		},
		{
			name: "as a json list", args: []string{"wait", "deploy-web-1", "deploy-web-2", "-o", "json", "--for", "finished"},
			end:    map[string]job.State{"deploy-web-1": job.Success, "deploy-web-2": job.Error},
			golden: "wait/jobs.json.golden",
		},
		{
			name: "no such job", args: []string{"wait", "nosuch"},
			wantErr: `job "nosuch" not found in namespace "default"`, wantCode: cmdutil.CodeError,
		},
		{
			name: "wait timed out", args: []string{"wait", "deploy-web-1", "--timeout", "1ms"},
			wantErrOut: "waiting for job \"deploy-web-1\" to end (triggered)\n",
			wantErr:    `job "deploy-web-1" did not end within 1ms: timed out waiting`, wantCode: cmdutil.CodeTimeout,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			storeJobs(t, te, "deploy-web-1", "deploy-web-2")
			for _, name := range []string{"deploy-web-2", "deploy-web-1"} {
				if st, ok := tt.end[name]; ok {
					endJob(t, te, name, st, tt.reason, time.Minute)
				}
			}
			err := te.run(tt.args...)
			assert.Equal(t, tt.wantCode, cmdutil.ExitCode(err), "exit code, err %v", err)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
			}
			if tt.golden != "" {
				golden(t, tt.golden, te.out.String())
			} else {
				assert.Equal(t, tt.wantOut, te.out.String(), "stdout")
			}
			assert.Equal(t, tt.wantErrOut, stripClock(te.errOut.String()), "stderr")
		})
	}
}

// TestRunWaitWatches: a job that has not ended is waited for on a watch
// of its record, and wait returns when the record says it ended.
func TestRunWaitWatches(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	storeJobs(t, te, "deploy-web-1")
	fw := watch.NewFake()
	watching := make(chan struct{})
	te.cs.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) {
		close(watching)
		return true, fw, nil
	})
	done := make(chan error, 1)
	go func() { done <- te.run("wait", "deploy-web-1") }()

	<-watching
	ended := endJob(t, te, "deploy-web-1", job.Success, "", time.Minute)
	fw.Modify(jobConfigMap(t, ended))
	require.NoError(t, <-done)
	assert.Equal(t, "job \"deploy-web-1\" (build ID 7 of job deploy-web) succeeded after 2m\n", te.out.String())
	assert.Equal(t, "waiting for job \"deploy-web-1\" to end (triggered)\n", stripClock(te.errOut.String()))
}

// clockPrefix is the time of day that starts each stderr line outside a
// terminal.
var clockPrefix = regexp.MustCompile(`(?m)^\d\d:\d\d:\d\d `)

// stripClock removes the time of day from each line.
func stripClock(s string) string { return clockPrefix.ReplaceAllString(s, "") }

func jobConfigMap(t *testing.T, j *job.Job) runtime.Object {
	t.Helper()
	cm, err := job.ToConfigMap(j)
	require.NoError(t, err)
	return cm
}
