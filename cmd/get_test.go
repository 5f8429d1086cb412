package cmd

import (
	"context"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
)

// storeJobs submits jobs named as given, one minute apart, and moves the
// second to pending.
func storeJobs(t *testing.T, te *testEnv, names ...string) {
	t.Helper()
	store := job.NewStore(kubetest.CoreV1(te.cs.CoreV1()), "default", job.StoreOptions{Clock: te.clock})
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
		{name: "all", want: getJobsOptions{Names: []string{}}},
		{name: "one as yaml", args: []string{"a", "-o", "yaml"}, want: getJobsOptions{Names: []string{"a"}, PrintFlags: printers.PrintFlags{Output: "yaml"}}},
		{name: "two names, one as -o name prints it", args: []string{"job/a", "b"}, want: getJobsOptions{Names: []string{"a", "b"}}},
		{name: "by job name", args: []string{"--job", "deploy-web"}, want: getJobsOptions{Names: []string{}, Job: "deploy-web"}},
		{name: "selector, every namespace, watch, wide", args: []string{"-l", "team in (web,api),!canary", "-A", "-w", "-o", "wide"},
			want: getJobsOptions{Names: []string{}, Selector: "team in (web,api),!canary", AllNamespaces: true, WatchFlags: cli.WatchFlags{Watch: true}, PrintFlags: printers.PrintFlags{Output: "wide"}}},
		{name: "long flags, names", args: []string{"--selector", "team=web", "--all-namespaces", "--watch", "-o", "name"},
			want: getJobsOptions{Names: []string{}, Selector: "team=web", AllNamespaces: true, WatchFlags: cli.WatchFlags{Watch: true}, PrintFlags: printers.PrintFlags{Output: "name"}}},
		{name: "bad selector", args: []string{"-l", "team=(web"}, wantErr: `invalid --selector "team=(web": `},
		{name: "names and a selector", args: []string{"a", "-l", "team=web"}, wantErr: "name jobs, or select them with --selector or --job, not both"},
		{name: "names and --job", args: []string{"a", "--job", "deploy-web"}, wantErr: "name jobs, or select them with --selector or --job, not both"},
		{name: "names across namespaces", args: []string{"a", "-A"}, wantErr: "a job cannot be shown by name across all namespaces"},
		{name: "bad output", args: []string{"-o", "table"}, wantErr: `invalid --output "table": use json, yaml, name, wide`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseArgs(t, []string{"get", "jobs"}, tt.args, newGetJobsCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *getJobsOptions) { o.f, o.out, o.Forms = nil, nil, printers.Forms{} })
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
		wantOut    string
		wantErrOut string
		wantErr    string
	}{
		{name: "no jobs", args: []string{"get", "jobs"}, wantErrOut: "10:00:00 no jobs in namespace \"default\"\n"},
		{name: "table", args: []string{"get", "jobs"}, jobs: []string{"deploy-web-1", "deploy-web-2"}, golden: "get/jobs.golden"},
		{name: "wide", args: []string{"get", "jobs", "-o", "wide"}, jobs: []string{"deploy-web-1", "deploy-web-2"}, golden: "get/jobs-wide.golden"},
		{name: "names", args: []string{"get", "jobs", "-o", "name"}, jobs: []string{"deploy-web-1", "deploy-web-2"},
			wantOut: "job/deploy-web-1\njob/deploy-web-2\n"},
		{name: "one as yaml", args: []string{"get", "job", "deploy-web-2", "-o", "yaml"}, jobs: []string{"deploy-web-1", "deploy-web-2"}, golden: "get/job.yaml.golden"},
		{name: "list as json", args: []string{"get", "jobs", "-o", "json"}, jobs: []string{"deploy-web-1"}, golden: "get/jobs.json.golden"},
		{name: "several names, in the order given", args: []string{"get", "jobs", "deploy-web-2", "job/deploy-web-1", "-o", "name"},
			jobs: []string{"deploy-web-1", "deploy-web-2"}, wantOut: "job/deploy-web-2\njob/deploy-web-1\n"},
		{name: "missing", args: []string{"get", "jobs", "nope"}, wantErr: `job "nope" not found in namespace "default"`},
		{name: "one of two missing: the other is shown", args: []string{"get", "jobs", "deploy-web-1", "nope", "-o", "name"}, jobs: []string{"deploy-web-1"},
			wantOut: "job/deploy-web-1\n", wantErr: `job "nope" not found in namespace "default"`},
		{name: "two missing", args: []string{"get", "jobs", "nope", "nada"}, jobs: []string{"deploy-web-1"},
			wantErr: `jobs "nope", "nada" not found in namespace "default"`},
		{name: "no runs of a job name among others", args: []string{"get", "jobs", "--job", "nope"}, jobs: []string{"deploy-web-1", "deploy-web-2"},
			wantErrOut: "10:02:00 no job named \"nope\" in namespace \"default\"\n"},
		{name: "by state label", args: []string{"get", "jobs", "-l", "lockctl.dev/state=pending", "-o", "name"}, jobs: []string{"deploy-web-1", "deploy-web-2"},
			wantOut: "job/deploy-web-2\n"},
		{name: "by a label the jobs lack", args: []string{"get", "jobs", "-l", "team=web"}, jobs: []string{"deploy-web-1"},
			wantErrOut: "10:01:00 no jobs matching \"team=web\" in namespace \"default\"\n"},
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
				assert.Equal(t, cmdutil.CodeError, cmdutil.ExitCode(err))
			} else {
				require.NoError(t, err)
			}
			assert.Equal(t, tt.wantErrOut, te.errOut.String())
			if tt.golden != "" {
				golden(t, tt.golden, te.out.String())
			} else {
				assert.Equal(t, tt.wantOut, te.out.String(), "stdout")
			}
		})
	}
}

// TestRunGetJobsLabels: -l matches the labels of the job's own metadata,
// and -A shows the jobs of every namespace, namespace first.
func TestRunGetJobsLabels(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	storeJobs(t, te, "deploy-web-1", "deploy-web-2")
	ci := job.NewStore(kubetest.CoreV1(te.cs.CoreV1()), "ci", job.StoreOptions{Clock: te.clock})
	_, err := ci.Create(t.Context(), &job.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-api-1", Labels: map[string]string{"team": "api"}},
		Spec: job.JobSpec{Job: "deploy-api", Type: job.Presubmit, Cluster: "gpu", Queue: "deploys",
			Refs:    &job.Refs{Org: "acme", Repo: "api", BaseRef: "main", Pulls: []job.Pull{{Number: 7}}},
			PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}},
	})
	require.NoError(t, err)

	require.NoError(t, te.run("get", "jobs", "-A", "-o", "wide"))
	golden(t, "get/jobs-all-wide.golden", te.out.String())

	te.out.Reset()
	require.NoError(t, te.run("get", "jobs", "-A", "-l", "team=api", "-o", "name"))
	assert.Equal(t, "job/deploy-api-1\n", te.out.String())

	te.out.Reset()
	require.NoError(t, te.run("get", "jobs", "-l", "team=api"))
	assert.Empty(t, te.out.String(), "no job of team api in namespace default")
}

// lines reports whether out has n lines.
func lines(n int) func(out string) bool {
	return func(out string) bool { return strings.Count(out, "\n") == n }
}

// watchRun is a -w command running on a testEnv whose watch of ConfigMaps
// is fw; what it prints goes to out.
type watchRun struct {
	fw     *watch.FakeWatcher
	out    *syncWriter
	cancel context.CancelFunc
	done   chan error
}

// startWatch runs args, a -w command, on te with fw as its watch of
// ConfigMaps, and returns once the command watches.
func startWatch(t *testing.T, te *testEnv, args ...string) *watchRun {
	t.Helper()
	w := &watchRun{fw: watch.NewFake(), out: &syncWriter{writes: make(chan string, 100)}, done: make(chan error, 1)}
	watching := make(chan struct{})
	te.cs.PrependWatchReactor("configmaps", func(k8stesting.Action) (bool, watch.Interface, error) {
		close(watching)
		return true, w.fw, nil
	})
	te.f.IOStreams.Out = w.out
	ctx, cancel := context.WithCancel(t.Context())
	w.cancel = cancel
	go func() { w.done <- Run(ctx, te.f, args) }()
	<-watching
	return w
}

// stop interrupts the command and returns its error.
func (w *watchRun) stop() error {
	w.cancel()
	return <-w.done
}

// syncWriter is a writer read while a command writes to it; each write is
// also sent on writes.
type syncWriter struct {
	mu     sync.Mutex
	b      strings.Builder
	writes chan string
}

func (w *syncWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.b.Write(p)
	w.writes <- string(p)
	return len(p), nil
}

func (w *syncWriter) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.String()
}

// TestRunGetJobsWatch: -w prints the table, then a row for each change the
// watch brings (not again for the jobs the informer lists first), until
// interrupted; -o name and -o json print one name or object each.
func TestRunGetJobsWatch(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		args   []string
		golden string
		// printed reports whether out holds all that the changes print.
		printed func(out string) bool
	}{
		{name: "table", args: []string{"get", "jobs", "-w"}, golden: "get/jobs-watch.golden", printed: lines(6)},
		{name: "names", args: []string{"get", "jobs", "-w", "-o", "name"}, golden: "get/jobs-watch-names.golden", printed: lines(5)},
		{name: "yaml", args: []string{"get", "jobs", "-w", "-o", "yaml"}, golden: "get/jobs-watch.yaml.golden",
			printed: func(out string) bool { return strings.Count(out, "\nkind: Job\n") == 5 }},
		{name: "one name", args: []string{"get", "jobs", "deploy-web-1", "-w", "-o", "name"}, golden: "get/jobs-watch-one.golden", printed: lines(2)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			storeJobs(t, te, "deploy-web-1", "deploy-web-2")
			w := startWatch(t, te, tt.args...)
			fw, out := w.fw, w.out
			// Both ends step the fake clock before the watch brings either:
			// a row's AGE is read when it is printed.
			ended := endJob(t, te, "deploy-web-1", job.Success, "", time.Minute)
			later := endJob(t, te, "deploy-web-2", job.Failure, "", time.Minute)
			fw.Modify(jobConfigMap(t, ended))
			fw.Modify(jobConfigMap(t, later))
			fw.Delete(jobConfigMap(t, later))
			for !tt.printed(out.String()) {
				<-out.writes
			}
			require.ErrorIs(t, w.stop(), context.Canceled, "-w ends when interrupted")
			golden(t, tt.golden, out.String())
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

// TestRunGetClustersForms: every -o form of a reading command works on
// the build clusters too: names by alias, templates over the status by
// alias, custom columns over the rows.
func TestRunGetClustersForms(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "names", args: []string{"-o", "name"}, want: "cluster/default\n"},
		{name: "jsonpath", args: []string{"-o", `jsonpath={.default.state}{"\n"}`}, want: "reachable\n"},
		{name: "go-template", args: []string{"-o", `go-template={{range $a, $c := .}}{{$a}}={{$c.state}}{{"\n"}}{{end}}`}, want: "default=reachable\n"},
		{name: "custom columns", args: []string{"-o", "custom-columns=CLUSTER:.cluster,STATE:.state", "--no-headers"}, want: "default   reachable\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			require.NoError(t, te.run("reconcile", "--once"))
			te.out.Reset()
			te.errOut.Reset()
			require.NoError(t, te.run(append([]string{"get", "clusters"}, tt.args...)...))
			assert.Equal(t, tt.want, te.out.String(), "%v", tt.args)
			assert.Empty(t, te.errOut.String(), "stderr")
		})
	}
}
