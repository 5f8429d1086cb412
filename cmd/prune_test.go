package cmd

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
)

func TestNewPruneCmd(t *testing.T) {
	t.Parallel()
	def := pruneOptions{OlderThan: 7 * 24 * time.Hour, PodOlderThan: 24 * time.Hour}
	tests := []struct {
		name    string
		args    []string
		want    pruneOptions
		wantErr string
	}{
		{name: "defaults", want: def},
		{name: "ages and dry run", args: []string{"--older-than", "720h", "--pod-older-than", "6h", "--dry-run"},
			want: pruneOptions{OlderThan: 720 * time.Hour, PodOlderThan: 6 * time.Hour, DryRun: true}},
		{name: "zero age", args: []string{"--older-than", "0s"}, wantErr: "--older-than and --pod-older-than must be more than 0"},
		{name: "bad duration", args: []string{"--pod-older-than", "7d"}, wantErr: `invalid argument "7d" for "--pod-older-than"`},
		{name: "positional", args: []string{"x"}, wantErr: `unknown command "x" for "lockctl prune"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseArgs(t, []string{"prune"}, tt.args, newPruneCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *pruneOptions) { o.f, o.changed = nil, nil })
		})
	}
}

func TestRunPrune(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	monthConfig := filepath.Join(dir, "month.yaml")
	require.NoError(t, os.WriteFile(monthConfig, []byte("retention: {jobs: 720h}\n"), 0o644))
	keepConfig := filepath.Join(dir, "keep.yaml")
	require.NoError(t, os.WriteFile(keepConfig, []byte("retention: {jobs: 0s, pods: 0s}\n"), 0o644))
	tests := []struct {
		name       string
		args       []string
		wantOut    string
		wantErrOut string
		wantLeft   []string
	}{
		{
			name:       "finished job older than a week",
			args:       []string{"prune"},
			wantOut:    "deleted job \"default/deploy-web-2\" (failure 8d ago)\n",
			wantErrOut: "10:02:00 deleted 1 job records and 0 pods\n",
			wantLeft:   []string{"deploy-web-1"},
		},
		{
			name:       "dry run",
			args:       []string{"prune", "--dry-run"},
			wantOut:    "would delete job \"default/deploy-web-2\" (failure 8d ago)\n",
			wantErrOut: "10:02:00 would delete 1 job records and 0 pods\n",
			wantLeft:   []string{"deploy-web-1", "deploy-web-2"},
		},
		{
			name:       "nothing old enough",
			args:       []string{"prune", "--older-than", "720h"},
			wantErrOut: "10:02:00 nothing to prune\n",
			wantLeft:   []string{"deploy-web-1", "deploy-web-2"},
		},
		{
			name:       "the config file's retention",
			args:       []string{"prune", "--config", monthConfig},
			wantErrOut: "10:02:00 nothing to prune\n",
			wantLeft:   []string{"deploy-web-1", "deploy-web-2"},
		},
		{
			name:       "a config file that keeps everything",
			args:       []string{"prune", "--config", keepConfig},
			wantErrOut: "10:02:00 nothing to prune\n",
			wantLeft:   []string{"deploy-web-1", "deploy-web-2"},
		},
		{
			name:       "a flag wins over the config file",
			args:       []string{"prune", "--config", monthConfig, "--older-than", "168h"},
			wantOut:    "deleted job \"default/deploy-web-2\" (failure 8d ago)\n",
			wantErrOut: "10:02:00 deleted 1 job records and 0 pods\n",
			wantLeft:   []string{"deploy-web-1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			storeJobs(t, te, "deploy-web-1", "deploy-web-2")
			store := job.NewStore(kubetest.CoreV1(te.cs.CoreV1()), "default", job.StoreOptions{Clock: te.clock})
			j, err := store.Get(t.Context(), "deploy-web-2")
			require.NoError(t, err)
			_, err = store.UpdateStatus(t.Context(), j, job.JobStatus{State: job.Failure, StartTime: j.Status.StartTime})
			require.NoError(t, err)
			te.clock.Step(8 * 24 * time.Hour)

			require.NoError(t, te.run(tt.args...))
			assert.Equal(t, tt.wantOut, te.out.String())
			assert.Equal(t, tt.wantErrOut, te.errOut.String())
			cms, err := te.cs.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{LabelSelector: job.Selector})
			require.NoError(t, err)
			var left []string
			for _, cm := range cms.Items {
				left = append(left, cm.Name)
			}
			assert.Equal(t, tt.wantLeft, left)
		})
	}
}
