package cmd

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/events"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/scheduler"
)

func TestNewReconcileCmd(t *testing.T) {
	t.Parallel()
	defaults := func(mod func(o *reconcileOptions)) reconcileOptions {
		o := reconcileOptions{
			LoopFlags:  cli.LoopFlags{UnscheduledTimeout: 5 * time.Minute, PendingTimeout: 10 * time.Minute, RunningTimeout: 48 * time.Hour, RevivalLimit: 3, Workers: 16},
			KubeAPIQPS: DefaultKubeAPIQPS, KubeAPIBurst: DefaultKubeAPIBurst, JobEvents: events.JobEventsAll,
			RetentionFlags: cli.RetentionFlags{JobRetention: 7 * 24 * time.Hour, PodRetention: 24 * time.Hour},
			NotifyFlags:    cli.NotifyFlags{Format: "cloudevents", Events: []string{"turn", "release", "overdue", "freeze", "break-glass"}, FreezeAhead: 15 * time.Minute},
		}
		if mod != nil {
			mod(&o)
		}
		return o
	}
	tests := []struct {
		name    string
		args    []string
		want    reconcileOptions
		wantErr string
	}{
		{name: "loop", want: defaults(nil)},
		{name: "cron pass", args: []string{"--once", "--dry-run"}, want: defaults(func(o *reconcileOptions) { o.Once, o.DryRun = true, true })},
		{
			name: "limits and clusters",
			args: []string{"--max-concurrency", "5", "--pending-timeout", "1m", "--build-cluster", "gpu=gpu-ctx", "--build-cluster", "default=kind", "--metrics-addr", ":9090"},
			want: defaults(func(o *reconcileOptions) {
				o.MaxConcurrency, o.PendingTimeout, o.MetricsAddr = 5, time.Minute, ":9090"
				o.BuildClusters = []string{"gpu=gpu-ctx", "default=kind"}
			}),
		},
		{
			name: "client rate limit",
			args: []string{"--kube-api-qps", "20", "--kube-api-burst", "30"},
			want: defaults(func(o *reconcileOptions) { o.KubeAPIQPS, o.KubeAPIBurst = 20, 30 }),
		},
		{
			name: "no client rate limit",
			args: []string{"--kube-api-qps", "-1"},
			want: defaults(func(o *reconcileOptions) { o.KubeAPIQPS = -1 }),
		},
		{name: "warnings only", args: []string{"--job-events", "warnings"}, want: defaults(func(o *reconcileOptions) { o.JobEvents = events.JobEventsWarnings })},
		{name: "no job events", args: []string{"--job-events=none"}, want: defaults(func(o *reconcileOptions) { o.JobEvents = events.JobEventsNone })},
		{name: "bad job events", args: []string{"--job-events", "some"}, wantErr: `invalid argument "some" for "--job-events" flag: must be one of all, warnings, none, not "some"`},
		{name: "zero qps", args: []string{"--kube-api-qps", "0"}, wantErr: "--kube-api-qps must not be 0: give a positive limit, or a negative number for none"},
		{name: "zero burst", args: []string{"--kube-api-burst", "0"}, wantErr: "--kube-api-burst must be at least 1 with a positive --kube-api-qps"},
		{name: "dry run alone", args: []string{"--dry-run"}, wantErr: "--dry-run needs --once"},
		{name: "negative limit", args: []string{"--max-concurrency", "-1"}, wantErr: "--max-concurrency must be 0 (no limit) or more"},
		{name: "zero timeout", args: []string{"--pending-timeout", "0"}, wantErr: "--pending-timeout must not be 0: give a duration such as 10m, or a negative one for never"},
		{name: "zero running timeout", args: []string{"--running-timeout", "0s"}, wantErr: "--running-timeout must not be 0: give a duration such as 10m, or a negative one for never"},
		{name: "zero revival limit", args: []string{"--revival-limit", "0"}, wantErr: "--revival-limit must not be 0: give how often a lost pod is recreated, or a negative number for no limit"},
		{name: "zero workers", args: []string{"--workers", "0"}, wantErr: "--workers must be at least 1"},
		{
			name: "notifications to Slack of turns and freezes",
			args: []string{"--notify-webhook", "https://hooks.example.com/x", "--notify-format", "slack", "--notify-events", "turn,freeze", "--notify-freeze-ahead", "1h"},
			want: defaults(func(o *reconcileOptions) {
				o.NotifyFlags = cli.NotifyFlags{Webhook: "https://hooks.example.com/x", Format: "slack", Events: []string{"turn", "freeze"}, FreezeAhead: time.Hour}
			}),
		},
		{name: "webhook not a URL", args: []string{"--notify-webhook", "hooks"}, wantErr: "--notify-webhook must be an http or https URL"},
		{name: "unknown event", args: []string{"--notify-webhook", "https://h/x", "--notify-events", "lunch"}, wantErr: `--notify-events: unknown event "lunch": use turn, release, overdue, freeze, break-glass`},
		{name: "unknown format", args: []string{"--notify-webhook", "https://h/x", "--notify-format", "xml"}, wantErr: `--notify-format must be cloudevents or slack, got "xml"`},
		{name: "dashboard", args: []string{"--dashboard-address", "127.0.0.1:8081"}, want: defaults(func(o *reconcileOptions) { o.DashboardAddress = "127.0.0.1:8081" })},
		{name: "dashboard of a pass", args: []string{"--once", "--dashboard-address", "127.0.0.1:8081"}, wantErr: "--dashboard-address needs the loop: drop --once, or run lockctl dashboard"},
		{name: "dashboard on every address", args: []string{"--dashboard-address", ":8081"}, wantErr: `--dashboard-address ":8081" is not a loopback address`},
		{
			name: "never time out, revive without limit",
			args: []string{"--running-timeout", "-1s", "--revival-limit", "-1"},
			want: defaults(func(o *reconcileOptions) { o.RunningTimeout, o.RevivalLimit = -time.Second, -1 }),
		},
		{name: "bad cluster", args: []string{"--build-cluster", "=ctx"}, wantErr: `invalid --build-cluster "=ctx": want ALIAS=CONTEXT`},
		{name: "positional", args: []string{"x"}, wantErr: `unknown command "x" for "lockctl reconcile"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseArgs(t, []string{"reconcile"}, tt.args, newReconcileCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *reconcileOptions) { o.f, o.changed = nil, nil })
		})
	}
}

func TestReconcileRetention(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		config   string
		args     []string
		wantJobs time.Duration
		wantPods time.Duration
		wantErr  string
	}{
		{name: "defaults", wantJobs: 0, wantPods: 0},
		{name: "config file", config: "retention: {jobs: 720h, pods: 6h}\n", wantJobs: 720 * time.Hour, wantPods: 6 * time.Hour},
		{name: "config file keeps everything", config: "retention: {jobs: 0s, pods: 0s}\n", wantJobs: -1, wantPods: -1},
		{name: "flags", args: []string{"--job-retention", "48h", "--pod-retention", "0"}, wantJobs: 48 * time.Hour, wantPods: -1},
		{
			name:   "a flag wins, the file fills the rest",
			config: "retention: {jobs: 720h, pods: 6h}\n", args: []string{"--pod-retention", "1h"},
			wantJobs: 720 * time.Hour, wantPods: time.Hour,
		},
		{name: "negative age in the file", config: "retention: {pods: -1h}\n", wantErr: "config c.yaml: retention.pods: must be 0 (keep everything) or more"},
		{name: "bad age in the file", config: "retention: {jobs: 7d}\n", wantErr: `config c.yaml: retention.jobs: "7d" is not a duration such as 168h or 24h`},
		{name: "unknown retention key", config: "retention: {job: 1h}\n", wantErr: "config c.yaml: retention.job: unknown key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg, err := scheduler.ParseConfig([]byte(tt.config), "c.yaml")
			if tt.wantErr != "" {
				require.Error(t, err, tt.config)
				assert.ErrorContains(t, err, tt.wantErr, tt.config)
				return
			}
			require.NoError(t, err, tt.config)
			got, err := parseArgs(t, []string{"reconcile"}, tt.args, newReconcileCmd)
			require.NoError(t, err, tt.args)
			opts, err := cfg.Retention.Apply(got.PruneOptions(got.changed))
			require.NoError(t, err)
			assert.Equal(t, tt.wantJobs, opts.JobRetention, "job retention of %q with %v", tt.config, tt.args)
			assert.Equal(t, tt.wantPods, opts.PodRetention, "pod retention of %q with %v", tt.config, tt.args)
		})
	}
}

func TestRunReconcile(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(badConfig, []byte("timeouts: {pending: soon}\n"), 0o644))
	goodConfig := filepath.Join(dir, "good.yaml")
	require.NoError(t, os.WriteFile(goodConfig, []byte("maxConcurrency: 2\n"), 0o644))
	tests := []struct {
		name      string
		args      []string
		wantOut   string
		wantErr   string
		wantCode  int
		wantState job.State
	}{
		{
			name:      "dry run prints the plan and changes nothing",
			args:      []string{"reconcile", "--once", "--dry-run", "--config", goodConfig},
			wantOut:   "would start deploy-web-1\nwould keep deploy-web-3 waiting: global limit of 2 running jobs reached\n",
			wantState: job.Triggered,
		},
		{
			name:      "one pass starts the job",
			args:      []string{"reconcile", "--once"},
			wantState: job.Pending,
		},
		{
			name:     "bad config names the key",
			args:     []string{"reconcile", "--once", "--config", badConfig},
			wantErr:  "config " + badConfig + `: timeouts.pending: "soon" is not a duration such as 10m or 48h`,
			wantCode: cmdutil.CodeUsage,
		},
		{
			name:     "missing config",
			args:     []string{"reconcile", "--once", "--config", filepath.Join(dir, "nope.yaml")},
			wantErr:  "read config: open " + filepath.Join(dir, "nope.yaml") + ": no such file or directory",
			wantCode: cmdutil.CodeUsage,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			storeJobs(t, te, "deploy-web-1", "deploy-web-2", "deploy-web-3")
			createJobPod(t, te, "deploy-web-2", func(pod *corev1.Pod) { pod.Status.Phase = corev1.PodRunning })

			err := te.run(tt.args...)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Equal(t, tt.wantErr, err.Error())
				assert.Equal(t, tt.wantCode, cmdutil.ExitCode(err))
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantOut, te.out.String())
			got, err := job.NewStore(kubetest.CoreV1(te.cs.CoreV1()), "default", job.StoreOptions{}).Get(t.Context(), "deploy-web-1")
			require.NoError(t, err)
			assert.Equal(t, tt.wantState, got.Status.State)
		})
	}
}

// TestReconcileLogTimeOfDay: outside a terminal every line lockctl
// reconcile writes to stderr (log entries, status lines, errors) starts
// with the UTC time of day, as every other command's lines do; no line is
// logrus's own logfmt (time="..." level=...).
func TestReconcileLogTimeOfDay(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	badConfig := filepath.Join(dir, "bad.yaml")
	require.NoError(t, os.WriteFile(badConfig, []byte("timeouts: {pending: soon}\n"), 0o644))
	te := newTestEnv(t)
	storeJobs(t, te, "deploy-web-1")

	require.NoError(t, te.run("reconcile", "--once", "-v", "2"))
	err := te.run("reconcile", "--once", "--config", badConfig)
	require.Error(t, err)
	cmdutil.PrintConsoleError(te.f.Console(), err, 0)

	out := te.errOut.String()
	assert.Regexp(t, `(?m)^\d\d:\d\d:\d\d error: config `, out, "the error")
	assert.Regexp(t, `(?m)^\d\d:\d\d:\d\d DEBUG: `, out, "the loop's log entries")
	for _, line := range strings.Split(strings.TrimSuffix(out, "\n"), "\n") {
		assert.Regexp(t, `^\d\d:\d\d:\d\d \S`, line)
		assert.NotContains(t, line, "level=")
	}
}

// TestReconcileJobEvents: --job-events picks which job state changes become
// Events, written through the Events' own client (Factory.EventsClientset),
// none through the client of the state machine's writes.
func TestReconcileJobEvents(t *testing.T) {
	t.Parallel()
	tests := []struct {
		args []string
		want []string // the Events' type and reason
	}{
		{args: nil, want: []string{"Normal Pending"}},
		{args: []string{"--job-events", "all"}, want: []string{"Normal Pending"}},
		{args: []string{"--job-events", "warnings"}, want: nil},
		{args: []string{"--job-events", "none"}, want: nil},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			evcs := fake.NewClientset()
			te.f.EventsClientset = func() (kube.Interface, error) { return kubetest.Clients(evcs), nil }
			storeJobs(t, te, "deploy-web-1")

			require.NoError(t, te.run(append([]string{"reconcile", "--once"}, tt.args...)...))
			got, err := job.NewStore(kubetest.CoreV1(te.cs.CoreV1()), "default", job.StoreOptions{}).Get(t.Context(), "deploy-web-1")
			require.NoError(t, err)
			require.Equal(t, job.Pending, got.Status.State)

			list, err := evcs.EventsV1().Events("default").List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			var reasons []string
			for _, ev := range list.Items {
				reasons = append(reasons, ev.Type+" "+ev.Reason)
			}
			assert.Equal(t, tt.want, reasons, "Events written by the time reconcile --once returned")
			for _, a := range te.cs.Actions() {
				assert.NotEqual(t, "events", a.GetResource().Resource, "no Event goes through the state machine's client")
			}
		})
	}
}
