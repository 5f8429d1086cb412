package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
)

func TestNewSubmitCmd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    submitOptions
		wantErr string
	}{
		{name: "file", args: []string{"-f", "job.yaml"}, want: submitOptions{Filename: "job.yaml"}},
		{name: "stdin as yaml", args: []string{"--filename", "-", "-o", "yaml"}, want: submitOptions{Filename: "-", Output: "yaml"}},
		{name: "no file", args: nil, wantErr: "required flag -f/--filename not set"},
		{name: "positional", args: []string{"job.yaml"}, wantErr: `unknown command "job.yaml" for "lockctl submit"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseArgs(t, []string{"submit"}, tt.args, newSubmitCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *submitOptions) { o.f = nil })
		})
	}
}

func TestRunSubmit(t *testing.T) {
	t.Parallel()
	oneJob := "apiVersion: lockctl.dev/v1alpha1\nkind: Job\nmetadata: {name: one}\nspec: {job: x, type: periodic, podSpec: {containers: [{name: a, image: b}]}}\n"
	bigFile := filepath.Join(t.TempDir(), "big.yaml")
	require.NoError(t, os.WriteFile(bigFile, []byte(oneJob+"#"+strings.Repeat("x", 3<<20)+"\n"), 0o600))
	tests := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantOut    string
		wantErrOut string
		wantErr    string
	}{
		{
			name:       "valid file",
			args:       []string{"-f", "../testdata/valid-postsubmit.yaml"},
			wantOut:    "deploy-web-42\n",
			wantErrOut: "10:00:00 job \"deploy-web-42\" triggered in namespace \"default\"\n",
		},
		{
			name:       "stdin",
			args:       []string{"-f", "-"},
			stdin:      "apiVersion: lockctl.dev/v1alpha1\nkind: Job\nmetadata: {name: from-stdin}\nspec: {job: x, type: periodic, podSpec: {containers: [{name: a, image: b}]}}\n",
			wantOut:    "from-stdin\n",
			wantErrOut: "10:00:00 job \"from-stdin\" triggered in namespace \"default\"\n",
		},
		{
			name:     "invalid file",
			args:     []string{"-f", "../testdata/invalid-pull-without-number.yaml"},
			wantCode: cmdutil.CodeUsage,
			wantErr:  "invalid job ../testdata/invalid-pull-without-number.yaml:\n  spec.refs.pulls[0].number: Required value",
		},
		{
			name:     "syntax error",
			args:     []string{"-f", "../testdata/invalid-yaml-syntax.yaml"},
			wantCode: cmdutil.CodeUsage,
			wantErr:  "parse ../testdata/invalid-yaml-syntax.yaml: line 7: mapping values are not allowed in this context",
		},
		{
			name:     "missing file",
			args:     []string{"-f", "nope.yaml"},
			wantCode: cmdutil.CodeUsage,
			wantErr:  "read job file: open nope.yaml: no such file or directory",
		},
		{
			name:     "file larger than a job record",
			args:     []string{"-f", bigFile},
			wantCode: cmdutil.CodeUsage,
			wantErr: "parse " + bigFile + ": job file is 3.0 MiB (3145872 bytes), larger than 1 MiB (1048576 bytes), the most a job record (a ConfigMap) can hold: " +
				"keep large scripts in the container image or in a ConfigMap the pod mounts",
		},
		{
			name:     "stdin larger than a job record",
			args:     []string{"-f", "-"},
			stdin:    oneJob + "#" + strings.Repeat("x", 3<<20) + "\n",
			wantCode: cmdutil.CodeUsage,
			wantErr: "parse <stdin>: job file is larger than 1 MiB (1048576 bytes), the most a job record (a ConfigMap) can hold: " +
				"keep large scripts in the container image or in a ConfigMap the pod mounts",
		},
		{
			name:     "two documents",
			args:     []string{"-f", "-"},
			stdin:    oneJob + "---\n" + oneJob,
			wantCode: cmdutil.CodeUsage,
			wantErr:  "parse <stdin>: job file holds 2 documents; one job per file: put each job in a file of its own",
		},
		{
			name:       "empty documents around the job",
			args:       []string{"-f", "-"},
			stdin:      "---\n" + oneJob + "---\n",
			wantOut:    "one\n",
			wantErrOut: "10:00:00 job \"one\" triggered in namespace \"default\"\n",
		},
		{
			name:     "other namespace",
			args:     []string{"-f", "-"},
			stdin:    "apiVersion: lockctl.dev/v1alpha1\nkind: Job\nmetadata: {name: a, namespace: prod}\nspec: {job: x, type: periodic, podSpec: {containers: [{name: a, image: b}]}}\n",
			wantCode: cmdutil.CodeUsage,
			wantErr:  `the job's namespace "prod" does not match the namespace "default": pass -n prod`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			te.f.IOStreams.In = strings.NewReader(tt.stdin)
			err := te.run(append([]string{"submit"}, tt.args...)...)
			assert.Equal(t, tt.wantCode, cmdutil.ExitCode(err), "exit code")
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				list, lerr := te.cs.CoreV1().ConfigMaps("default").List(t.Context(), metav1.ListOptions{})
				require.NoError(t, lerr)
				assert.Empty(t, list.Items, "nothing written")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantOut, te.out.String())
			assert.Equal(t, tt.wantErrOut, te.errOut.String())
			stored, err := job.NewStore(kubetest.CoreV1(te.cs.CoreV1()), "default", job.StoreOptions{}).Get(t.Context(), strings.TrimSpace(tt.wantOut))
			require.NoError(t, err)
			assert.Equal(t, job.Triggered, stored.Status.State)
		})
	}
}
