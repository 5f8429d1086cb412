package cmd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockctl/lockctl/job"
)

// storeJobs submits jobs named as given, one minute apart, and moves the
// second to pending.
func storeJobs(t *testing.T, te *testEnv, names ...string) {
	t.Helper()
	store := job.NewStore(te.cs.CoreV1(), "default", job.WithClock(te.clock))
	for i, n := range names {
		j, err := store.Create(t.Context(), &job.Job{
			TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
			ObjectMeta: metav1.ObjectMeta{Name: n, UID: types.UID("uid-" + n)},
			Spec: job.JobSpec{Job: "deploy-web", Type: job.Postsubmit,
				Refs:    &job.Refs{Org: "acme", Repo: "web", BaseRef: "main"},
				PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}},
		})
		require.NoError(t, err)
		if i == 1 {
			_, err = store.UpdateStatus(t.Context(), j, job.JobStatus{State: job.Pending, StartTime: j.Status.StartTime,
				PodName: n, BuildID: "7", Description: "job pending"})
			require.NoError(t, err)
		}
		te.clock.Step(time.Minute)
	}
}

func TestNewGetJobsCmd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    getJobsOptions
		wantErr string
	}{
		{name: "all", want: getJobsOptions{}},
		{name: "one as yaml", args: []string{"a", "-o", "yaml"}, want: getJobsOptions{Name: "a", Output: "yaml"}},
		{name: "by job name", args: []string{"--job", "deploy-web"}, want: getJobsOptions{Job: "deploy-web"}},
		{name: "two names", args: []string{"a", "b"}, wantErr: "accepts at most 1 arg(s), received 2"},
		{name: "bad output", args: []string{"-o", "wide"}, wantErr: "must be one of json, yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseArgs(t, []string{"get", "jobs"}, tt.args, newGetJobsCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *getJobsOptions) { o.f = nil })
		})
	}
}

func TestRunGetJobs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		jobs       []string
		golden     string
		wantErrOut string
		wantErr    string
	}{
		{name: "no jobs", args: []string{"get", "jobs"}, wantErrOut: "10:00:00 no jobs in namespace \"default\"\n"},
		{name: "table", args: []string{"get", "jobs"}, jobs: []string{"deploy-web-1", "deploy-web-2"}, golden: "get/jobs.golden"},
		{name: "one as yaml", args: []string{"get", "job", "deploy-web-2", "-o", "yaml"}, jobs: []string{"deploy-web-1", "deploy-web-2"}, golden: "get/job.yaml.golden"},
		{name: "list as json", args: []string{"get", "jobs", "-o", "json"}, jobs: []string{"deploy-web-1"}, golden: "get/jobs.json.golden"},
		{name: "missing", args: []string{"get", "jobs", "nope"}, wantErr: `job "nope" not found in namespace "default"`},
		{name: "no runs of a job name among others", args: []string{"get", "jobs", "--job", "nope"}, jobs: []string{"deploy-web-1", "deploy-web-2"},
			wantErrOut: "10:02:00 no job named \"nope\" in namespace \"default\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			storeJobs(t, te, tt.jobs...)
			err := te.run(tt.args...)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				assert.Equal(t, CodeError, exitCode(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantErrOut, te.errOut.String())
			if tt.golden != "" {
				golden(t, tt.golden, te.out.String())
			}
		})
	}
}

func TestRunGetClusters(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	require.NoError(t, te.run("get", "clusters"))
	assert.Equal(t, "10:00:00 no cluster status recorded in namespace \"default\": lockctl reconcile records it\n", te.errOut.String())

	te = newTestEnv(t)
	require.NoError(t, te.run("reconcile", "--once"))
	te.out.Reset()
	te.errOut.Reset()
	te.clock.Step(2 * time.Minute)
	require.NoError(t, te.run("get", "clusters"))
	golden(t, "get/clusters.golden", te.out.String())
}
