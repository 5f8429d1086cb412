package cmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/job"
)

func TestNewLogsCmd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    logsOptions
		wantErr string
	}{
		{name: "job", args: []string{"a"}, want: logsOptions{Name: "a"}},
		{name: "follow one container", args: []string{"a", "-f", "-c", "main"}, want: logsOptions{Name: "a", Follow: true, Container: "main"}},
		{name: "build cluster", args: []string{"a", "--build-cluster", "gpu=ctx"},
			want: logsOptions{Name: "a", ClusterFlags: cli.ClusterFlags{BuildClusters: []string{"gpu=ctx"}}}},
		{name: "bad build cluster", args: []string{"a", "--build-cluster", "gpu"}, wantErr: `invalid --build-cluster "gpu": want ALIAS=CONTEXT`},
		{name: "no job", args: nil, wantErr: "accepts 1 arg(s), received 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseArgs(t, []string{"logs"}, tt.args, newLogsCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *logsOptions) { o.f = nil })
		})
	}
}

func TestRunLogs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		args     []string
		init     bool
		wantOut  string
		wantErr  string
		wantCode int
	}{
		{name: "one container", args: []string{"logs", "deploy-web-2"}, wantOut: "fake logs\n"},
		{name: "containers prefixed", args: []string{"logs", "deploy-web-2"}, init: true, wantOut: "[clone] fake logs\n[main] fake logs\n"},
		{name: "one of several", args: []string{"logs", "deploy-web-2", "-c", "main"}, init: true, wantOut: "fake logs\n"},
		{name: "missing job", args: []string{"logs", "nope"}, wantErr: `job "nope" not found in namespace "default"`, wantCode: cmdutil.CodeError},
		{name: "not started", args: []string{"logs", "deploy-web-1"}, wantErr: `job "deploy-web-1" has no pod yet (triggered): wait for it with -f`, wantCode: cmdutil.CodeError},
		{name: "unknown cluster", args: []string{"logs", "deploy-web-2", "--build-cluster", "gpu=x"},
			wantErr: `job "deploy-web-2" runs in build cluster "default": name its context with --build-cluster default=CONTEXT`, wantCode: cmdutil.CodeUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			storeJobs(t, te, "deploy-web-1", "deploy-web-2")
			createJobPod(t, te, "deploy-web-2", func(pod *corev1.Pod) {
				if tt.init {
					pod.Spec.InitContainers = []corev1.Container{{Name: "clone", Image: "git"}}
				}
			})

			err := te.run(tt.args...)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				assert.Equal(t, tt.wantCode, cmdutil.ExitCode(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantOut, te.out.String())
		})
	}
}

// TestRunLogsFollowExitStatus: logs -f ends with the job's status, as run
// and wait do, once the pod has finished and the job has ended.
func TestRunLogsFollowExitStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		phase      corev1.PodPhase
		state      job.State
		wantErrOut string
		wantCode   int
	}{
		{name: "succeeded", phase: corev1.PodSucceeded, state: job.Success,
			wantErrOut: "job \"deploy-web-2\" (build ID 7 of job deploy-web) succeeded after 1m\n"},
		{name: "failed", phase: corev1.PodFailed, state: job.Failure,
			wantErrOut: "job \"deploy-web-2\" (build ID 7 of job deploy-web) failed after 1m\n", wantCode: cmdutil.CodeJobFailed},
		{name: "ended in error", phase: corev1.PodSucceeded, state: job.Error,
			wantErrOut: "job \"deploy-web-2\" (build ID 7 of job deploy-web) ended in error after 1m\n", wantCode: cmdutil.CodeJobFailed},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			storeJobs(t, te, "deploy-web-1", "deploy-web-2")
			createJobPod(t, te, "deploy-web-2", func(pod *corev1.Pod) {
				pod.Status.Phase = tt.phase
				pod.Status.ContainerStatuses = []corev1.ContainerStatus{{Name: "main",
					State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 0}}}}
			})
			endJob(t, te, "deploy-web-2", tt.state, "", 0)

			err := te.run("logs", "deploy-web-2", "-f")
			assert.Equal(t, tt.wantCode, cmdutil.ExitCode(err), "exit code, err %v", err)
			assert.Equal(t, "fake logs\n", te.out.String(), "stdout")
			assert.Equal(t, tt.wantErrOut, stripClock(te.errOut.String()), "stderr")
		})
	}
}
