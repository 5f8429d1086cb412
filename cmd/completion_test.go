package cmd

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lockctl/lockctl/kube"
)

// complete runs `lockctl __complete args...` as a shell does and returns
// the candidates and the directive line.
func (te *testEnv) complete(t *testing.T, args ...string) (candidates []string, directive string) {
	t.Helper()
	te.out.Reset()
	require.NoError(t, te.run(append([]string{"__complete"}, args...)...))
	lines := strings.Split(strings.TrimSuffix(te.out.String(), "\n"), "\n")
	require.NotEmpty(t, lines)
	return lines[:len(lines)-1], lines[len(lines)-1]
}

func namespace(name string) runtime.Object {
	return &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}
}

func TestCompletion(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t, namespace("default"), namespace("prod"), namespace("staging"))
	require.NoError(t, te.run("acquire", "staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "41"))
	require.NoError(t, te.run("submit", "-f", "../testdata/valid-postsubmit.yaml"))
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, os.WriteFile(kubeconfig, []byte(`apiVersion: v1
kind: Config
clusters: [{name: c1, cluster: {server: "https://127.0.0.1:1"}}]
users: [{name: u, user: {token: x}}]
contexts:
- {name: kind-dev, context: {cluster: c1, user: u, namespace: team}}
- {name: prod-eu, context: {cluster: c1, user: u}}
current-context: kind-dev
`), 0o600))

	const (
		noFiles  = ":4" // ShellCompDirectiveNoFileComp
		fileExts = ":8" // ShellCompDirectiveFilterFileExt
		noSpace  = ":6" // NoSpace | NoFileComp
		files    = ":0" // ShellCompDirectiveDefault
		job      = "deploy-web-42\ttriggered"
		held     = "staging\theld by acme/web@main#41"
	)
	tests := []struct {
		name  string
		args  []string
		want  []string
		wantD string
		// namesOnly compares the candidates without their descriptions.
		namesOnly bool
	}{
		{name: "acquire: lock targets and namespaces", args: []string{"acquire", ""}, want: []string{"default", "prod", held}, wantD: noFiles},
		{name: "acquire: by prefix", args: []string{"acquire", "p"}, want: []string{"prod"}, wantD: noFiles},
		{name: "acquire: several locks", args: []string{"acquire", "staging", ""}, want: []string{"default", "prod"}, wantD: noFiles},
		{name: "release: held locks", args: []string{"release", ""}, want: []string{held}, wantD: noFiles},
		{name: "status: held locks", args: []string{"status", ""}, want: []string{held}, wantD: noFiles},
		{name: "logs: job records", args: []string{"logs", ""}, want: []string{job}, wantD: noFiles},
		{name: "abort: unfinished job records", args: []string{"abort", ""}, want: []string{job}, wantD: noFiles},
		{name: "get jobs: several names", args: []string{"get", "jobs", ""}, want: []string{job}, wantD: noFiles},
		{name: "get jobs: a name given is not offered again", args: []string{"get", "jobs", "deploy-web-42", ""}, want: nil, wantD: noFiles},
		{name: "get: resources", args: []string{"get", ""}, want: []string{"clusters", "jobs"}, wantD: noFiles, namesOnly: true},
		{name: "get jobs --job: job names", args: []string{"get", "jobs", "--job", ""}, want: []string{"deploy-web"}, wantD: noFiles},
		{name: "-n: namespaces", args: []string{"status", "-n", ""}, want: []string{"default", "prod", "staging"}, wantD: noFiles},
		{name: "--lock-namespace: namespaces", args: []string{"acquire", "--lock-namespace", "st"}, want: []string{"staging"}, wantD: noFiles},
		{name: "--context: kubeconfig contexts", args: []string{"status", "--kubeconfig", kubeconfig, "--context", ""},
			want: []string{"kind-dev\tcluster c1, namespace team", "prod-eu\tcluster c1"}, wantD: noFiles},
		{name: "--build-cluster: alias first", args: []string{"run", "--kubeconfig", kubeconfig, "--build-cluster", "gpu"}, want: nil, wantD: noSpace},
		{name: "--build-cluster: then the context", args: []string{"run", "--kubeconfig", kubeconfig, "--build-cluster", "gpu=prod"},
			want: []string{"gpu=prod-eu\tcluster c1"}, wantD: noFiles},
		{name: "-o", args: []string{"status", "-o", ""}, want: []string{"wide", "name", "json", "yaml"}, wantD: noFiles},
		{name: "wait: several job records", args: []string{"wait", ""}, want: []string{job}, wantD: noFiles},
		{name: "wait --for", args: []string{"wait", "--for", ""}, want: []string{"succeeded", "finished"}, wantD: noFiles},
		{name: "get jobs -o", args: []string{"get", "jobs", "-o", ""}, want: []string{"wide", "name", "json", "yaml"}, wantD: noFiles},
		{name: "get jobs -l: free text", args: []string{"get", "jobs", "-l", ""}, want: nil, wantD: noFiles},
		{name: "--policy", args: []string{"acquire", "--policy", ""}, want: []string{"newest", "fifo"}, wantD: noFiles},
		{name: "--priority", args: []string{"acquire", "--priority", ""}, want: []string{"high", "normal", "low"}, wantD: noFiles},
		{name: "--progress", args: []string{"run", "--progress", ""}, want: []string{"auto", "tty", "plain"}, wantD: noFiles},
		{name: "-f: job files", args: []string{"submit", "-f", ""}, want: []string{"yaml", "yml", "json"}, wantD: fileExts},
		{name: "--kubeconfig: any file", args: []string{"status", "--kubeconfig", ""}, want: nil, wantD: files},
		{name: "free text: no file names", args: []string{"acquire", "--owner", ""}, want: nil, wantD: noFiles},
		{name: "completion: shells", args: []string{"completion", ""}, want: []string{"bash", "zsh", "fish", "powershell"}, wantD: noFiles},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			// NOTE: not parallel: the cases share te, which completes one at
			// a time.
			got, directive := te.complete(t, tt.args...)
			if tt.want == nil {
				tt.want = []string{}
			}
			if len(got) == 0 {
				got = []string{}
			}
			if tt.namesOnly {
				for i, c := range got {
					got[i], _, _ = strings.Cut(c, "\t")
				}
			}
			assert.Equal(t, tt.want, got, "candidates of %q", tt.args)
			assert.Equal(t, tt.wantD, directive, "directive of %q", tt.args)
		})
	}
}

// TestCompletionNeverFails: a completion whose API calls fail offers
// nothing and prints nothing on stdout but the directive, without error.
func TestCompletionNeverFails(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  func(te *testEnv)
	}{
		{name: "API server refuses", env: func(te *testEnv) {
			te.cs.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, errors.New("connection refused")
			})
		}},
		{name: "API server answers after the deadline", env: func(te *testEnv) {
			te.cs.PrependReactor("*", "*", func(k8stesting.Action) (bool, runtime.Object, error) {
				return true, nil, context.DeadlineExceeded
			})
		}},
		{name: "no kubeconfig", env: func(te *testEnv) {
			te.f.Clientset = func() (kube.Interface, error) { return nil, errors.New("no configuration has been provided") }
			te.f.Namespace = func() (string, error) { return "", errors.New("no configuration has been provided") }
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			tt.env(te)
			for _, args := range [][]string{{"acquire", ""}, {"release", ""}, {"logs", ""}, {"abort", ""}, {"status", "-n", ""}, {"get", "jobs", "--job", ""}} {
				got, directive := te.complete(t, args...)
				assert.Empty(t, got, "%q offers nothing", args)
				assert.Equal(t, ":4", directive, "%q", args)
			}
			assert.NotContains(t, te.errOut.String(), "error:", "no error for the shell to show")
		})
	}
}
