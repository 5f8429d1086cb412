package cli

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/job"
)

// TestJobsConfig: the scheduler options and build clusters lockctl run
// drives its job with come from --config, with --pod-namespace and
// --build-cluster winning.
func TestJobsConfig(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(good, []byte("podNamespace: builds\nbuildClusters:\n  gpu: gpu-context\n"), 0o600))
	bad := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(bad, []byte("maxConcurency: 3\n"), 0o600))
	tests := []struct {
		name         string
		flags        ClusterFlags
		wantPodNS    string
		wantContexts map[string]string
		wantUsage    bool
	}{
		{name: "no config: the current context as default", wantContexts: map[string]string{"default": ""}},
		{name: "the file", flags: ClusterFlags{ConfigFile: good}, wantPodNS: "builds", wantContexts: map[string]string{"gpu": "gpu-context"}},
		{
			name:      "flags win",
			flags:     ClusterFlags{ConfigFile: good, PodNamespace: "mine", BuildClusters: []string{"gpu=other", "arm=arm-context"}},
			wantPodNS: "mine", wantContexts: map[string]string{"gpu": "other", "arm": "arm-context"},
		},
		{name: "a bad file is a usage error", flags: ClusterFlags{ConfigFile: bad}, wantUsage: true},
		{name: "a missing file is a usage error", flags: ClusterFlags{ConfigFile: filepath.Join(dir, "none.yaml")}, wantUsage: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			opts, contexts, err := tt.flags.JobsConfig()
			if tt.wantUsage {
				require.Error(t, err, "flags %+v", tt.flags)
				assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "exit code of %v", err)
				return
			}
			require.NoError(t, err, "flags %+v", tt.flags)
			assert.Equal(t, tt.wantPodNS, opts.PodNamespace, "pod namespace")
			assert.Equal(t, tt.wantContexts, contexts, "build clusters")
		})
	}
}

func TestJobContext(t *testing.T) {
	t.Parallel()
	contexts := map[string]string{"default": "", "gpu": "gpu-context"}
	gpu := &job.Job{ObjectMeta: metav1.ObjectMeta{Name: "train-1"}, Spec: job.JobSpec{Cluster: "gpu"}}
	got, err := JobContext(contexts, gpu)
	require.NoError(t, err)
	assert.Equal(t, "gpu-context", got)
	got, err = JobContext(contexts, &job.Job{ObjectMeta: metav1.ObjectMeta{Name: "deploy-1"}})
	require.NoError(t, err)
	assert.Equal(t, "", got, "no cluster: default, the current context")
	_, err = JobContext(map[string]string{"default": ""}, &job.Job{ObjectMeta: metav1.ObjectMeta{GenerateName: "train-"}, Spec: job.JobSpec{Cluster: "gpu"}})
	assert.EqualError(t, err, `job "train-*" runs in build cluster "gpu": name its context with --build-cluster gpu=CONTEXT`)
	assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "exit code")
}
