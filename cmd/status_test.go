package cmd

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/lock/record"
)

func TestNewStatusCmd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    statusOptions
		wantErr string
	}{
		{name: "all locks", args: nil, want: statusOptions{}},
		{name: "one lock as json", args: []string{"staging", "-o", "json"}, want: statusOptions{Target: "staging", PrintFlags: printers.PrintFlags{Output: "json"}}},
		{name: "every namespace", args: []string{"-A"}, want: statusOptions{AllNamespaces: true}},
		{name: "two namespaces", args: []string{"a", "b"}, wantErr: "accepts at most 1 arg(s), received 2"},
		{name: "name across namespaces", args: []string{"staging", "-A"}, wantErr: "a lock cannot be shown by name across all namespaces"},
		{name: "bad output", args: []string{"-o", "table"}, wantErr: `invalid --output "table": use json, yaml, name, wide, jsonpath=`},
		{name: "watch, kubectl's forms", args: []string{"-w", "--timeout", "1m", "-o", "custom-columns=T:.spec.target", "--no-headers", "--sort-by", ".metadata.name"},
			want: statusOptions{WatchFlags: cli.WatchFlags{Watch: true, Timeout: time.Minute}, PrintFlags: printers.PrintFlags{Output: "custom-columns=T:.spec.target", NoHeaders: true, SortBy: ".metadata.name"}}},
		{name: "jsonpath", args: []string{"staging", "-o", "jsonpath={.status.estimatedWait}"}, want: statusOptions{Target: "staging", PrintFlags: printers.PrintFlags{Output: "jsonpath={.status.estimatedWait}"}}},
		{name: "bad jsonpath", args: []string{"-o", "jsonpath={.status"}, wantErr: `invalid --output "jsonpath={.status": unclosed action`},
		{name: "bad column", args: []string{"-o", "custom-columns=TARGET"}, wantErr: `column "TARGET" is not HEADER:.json.path`},
		{name: "template without its argument", args: []string{"-o", "go-template"}, wantErr: `go-template needs an argument`},
		{name: "bad sort", args: []string{"--sort-by", "{.a"}, wantErr: `invalid --sort-by "{.a"`},
		{name: "negative timeout", args: []string{"-w", "--timeout", "-1s"}, wantErr: "invalid --timeout -1s"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			got, err := parseArgsIn(t, te, []string{"status"}, tt.args, newStatusCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *statusOptions) { o.f, o.out, o.Forms = nil, nil, printers.Forms{} })
		})
	}
}

func TestRunStatus(t *testing.T) {
	t.Parallel()
	waiter := record.Claim{
		Identity: record.Identity{Owner: "acme", Repo: "api", Branch: "main", Build: "5"},
		ClaimID:  "w", Since: metav1.NewMicroTime(testNow), Expires: ptrMicro(testNow.Add(time.Minute)),
	}
	hotfix := record.Claim{
		Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "hotfix", Build: "9"},
		ClaimID:  "hf", Since: metav1.NewMicroTime(testNow), Expires: ptrMicro(testNow.Add(time.Minute)), Priority: record.PriorityHigh,
	}
	aged := record.Claim{
		Identity: record.Identity{Owner: "acme", Repo: "docs", Branch: "main", Build: "3"},
		ClaimID:  "lo", Since: metav1.NewMicroTime(testNow.Add(-record.PriorityAgeing)), Expires: ptrMicro(testNow.Add(time.Minute)), Priority: record.PriorityLow,
	}
	tokened := heldLock(t, "43")
	tokened.Name, tokened.Namespace = record.Name("prod"), "ops"
	tokened.Annotations[record.RecordAnnotation] = strings.NewReplacer(`"target":"staging"`, `"target":"prod"`, `"session":"s43"`, `"apps":["argocd/web","flux/kustomization/apps/web"],"session":"s43","token":"17"`).
		Replace(tokened.Annotations[record.RecordAnnotation])
	corrupt := heldLock(t, "1")
	corrupt.Name = record.Name("broken")
	corrupt.Labels[record.TargetLabel] = "broken"
	corrupt.Annotations[record.RecordAnnotation] = `{"target":"broken"`
	tests := []struct {
		name       string
		args       []string
		objs       []*corev1.ConfigMap
		golden     string
		wantErrOut string
	}{
		{name: "no locks", args: []string{"status"}, wantErrOut: "10:00:00 no locks in namespace \"default\"\n"},
		{name: "no locks anywhere", args: []string{"status", "-A"}, wantErrOut: "10:00:00 no locks in any namespace\n"},
		{name: "free lock", args: []string{"status", "staging"}, wantErrOut: "10:00:00 lock \"staging\" is free (default/lockctl-lock-staging)\n"},
		{
			name: "free lock as json", args: []string{"status", "staging", "-o", "json"}, golden: "status/free.json.golden",
			wantErrOut: "10:00:00 lock \"staging\" is free (default/lockctl-lock-staging)\n",
		},
		{name: "table", args: []string{"status"}, objs: []*corev1.ConfigMap{heldLock(t, "42", waiter), corrupt, tokened}, golden: "status/table.golden"},
		{name: "one lock as table", args: []string{"status", "prod", "--lock-namespace", "ops"}, objs: []*corev1.ConfigMap{tokened}, golden: "status/one.golden"},
		{name: "every namespace", args: []string{"status", "-A"}, objs: []*corev1.ConfigMap{heldLock(t, "42", waiter), tokened}, golden: "status/all.golden"},
		{name: "every namespace as yaml", args: []string{"status", "-A", "-o", "yaml"}, objs: []*corev1.ConfigMap{tokened}, golden: "status/all.yaml.golden"},
		{name: "yaml", args: []string{"status", "staging", "-o", "yaml"}, objs: []*corev1.ConfigMap{heldLock(t, "42", waiter)}, golden: "status/lock.yaml.golden"},
		{name: "priorities table", args: []string{"status"}, objs: []*corev1.ConfigMap{heldLock(t, "42", hotfix, aged, waiter)}, golden: "status/priorities.golden"},
		{name: "priorities yaml", args: []string{"status", "staging", "-o", "yaml"}, objs: []*corev1.ConfigMap{heldLock(t, "42", hotfix, aged, waiter)}, golden: "status/priorities.yaml.golden"},
		{name: "json list", args: []string{"status", "-o", "json"}, objs: []*corev1.ConfigMap{heldLock(t, "42")}, golden: "status/list.json.golden"},
		{name: "estimates", args: []string{"status"}, objs: []*corev1.ConfigMap{withHistory(t, heldLock(t, "42", waiter, hotfix), 5, 4*time.Minute)}, golden: "status/estimate.golden"},
		{name: "estimates, wide", args: []string{"status", "-o", "wide"}, objs: []*corev1.ConfigMap{withHistory(t, heldLock(t, "42", waiter, hotfix), 5, 4*time.Minute)}, golden: "status/estimate-wide.golden"},
		{name: "estimates as json", args: []string{"status", "staging", "-o", "json"}, objs: []*corev1.ConfigMap{withHistory(t, heldLock(t, "42", waiter), 5, 4*time.Minute)}, golden: "status/estimate.json.golden"},
		{name: "estimate by jsonpath", args: []string{"status", "staging", "-o", `jsonpath={.status.estimatedWait} ({.status.basis}){range .status.waiters[*]}|{.build}: {.estimatedWait}{end}`},
			objs: []*corev1.ConfigMap{withHistory(t, heldLock(t, "42", waiter), 5, 4*time.Minute)}, golden: "status/estimate.jsonpath.golden"},
		{name: "names", args: []string{"status", "-o", "name"}, objs: []*corev1.ConfigMap{heldLock(t, "42"), tokened}, golden: "status/names.golden"},
		{name: "list by jsonpath", args: []string{"status", "-A", "-o", `jsonpath={range .items[*]}{.spec.target}={.status.holder.build}{"\n"}{end}`},
			objs: []*corev1.ConfigMap{heldLock(t, "42"), tokened}, golden: "status/list.jsonpath.golden"},
		{name: "go-template", args: []string{"status", "-A", "-o", `go-template={{range .items}}{{.spec.target}} {{.status.state}}{{"\n"}}{{end}}`},
			objs: []*corev1.ConfigMap{heldLock(t, "42"), tokened}, golden: "status/list.template.golden"},
		{name: "custom columns sorted, no headers", args: []string{"status", "-A", "-o", "custom-columns=TARGET:.spec.target,BUILD:.status.holder.build,MISSING:.status.nothing", "--sort-by", "{.spec.target}", "--no-headers"},
			objs: []*corev1.ConfigMap{heldLock(t, "42"), tokened}, golden: "status/columns.golden"},
		{name: "sorted by token, wide, no headers", args: []string{"status", "-A", "-o", "wide", "--sort-by", ".status.holder.build", "--no-headers"},
			objs: []*corev1.ConfigMap{tokened, heldLock(t, "42")}, golden: "status/sorted.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			for _, o := range tt.objs {
				_, err := te.cs.CoreV1().ConfigMaps(o.Namespace).Create(t.Context(), o, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			require.NoError(t, te.run(tt.args...))
			assert.Equal(t, tt.wantErrOut, te.errOut.String(), "stderr")
			if tt.golden != "" {
				golden(t, tt.golden, te.out.String())
			} else {
				assert.Empty(t, te.out.String(), "stdout")
			}
		})
	}
}

// withHistory adds n past holds of d each, back to back and ended an hour
// before testNow, to the lock record of cm.
func withHistory(t *testing.T, cm *corev1.ConfigMap, n int, d time.Duration) *corev1.ConfigMap {
	t.Helper()
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(cm.Annotations[record.RecordAnnotation]), &rec))
	start := testNow.Add(-time.Hour - time.Duration(n)*d)
	var hist []any
	for i := 0; i < n; i++ {
		hist = append(hist, map[string]any{
			"owner": "acme", "repo": "web", "branch": "main", "build": fmt.Sprint(30 + i),
			"since": metav1.NewMicroTime(start.Add(time.Duration(i) * d)), "until": metav1.NewMicroTime(start.Add(time.Duration(i+1) * d)), "ended": "released",
		})
	}
	rec["history"] = hist
	data, err := json.Marshal(rec)
	require.NoError(t, err)
	cm.Annotations[record.RecordAnnotation] = string(data)
	return cm
}

// TestRunStatusWatch: status -w and history -w print the table (or the
// objects), then a row (an object) for every change of the lock: a
// hand-over, then the lock deleted.
func TestRunStatusWatch(t *testing.T) {
	t.Parallel()
	web := record.Claim{
		Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "42"},
		ClaimID:  "s42", Since: metav1.NewMicroTime(testNow.Add(-time.Minute)), Expires: ptrMicro(testNow.Add(time.Hour)),
	}
	api := record.Claim{
		Identity: record.Identity{Owner: "acme", Repo: "api", Branch: "main", Build: "5"},
		ClaimID:  "w", Since: metav1.NewMicroTime(testNow), Expires: ptrMicro(testNow.Add(time.Hour)),
	}
	tests := []struct {
		name    string
		args    []string
		golden  string
		printed func(out string) bool
	}{
		{name: "table", args: []string{"status", "-w"}, golden: "status/watch.golden", printed: lines(4)},
		{name: "one lock as json", args: []string{"status", "staging", "-w", "-o", "json"}, golden: "status/watch.json.golden",
			printed: func(out string) bool { return strings.Count(out, "\n}\n") == 3 }},
		{name: "custom columns", args: []string{"status", "-w", "-o", "custom-columns=TARGET:.spec.target,STATE:.status.state,HOLDER:.status.holder.build"},
			golden: "status/watch-columns.golden", printed: lines(4)},
		{name: "history", args: []string{"history", "staging", "-w"}, golden: "history/watch.golden", printed: lines(4)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			first := lockConfigMap(t, "staging", web, api)
			first.ResourceVersion = "1"
			_, err := te.cs.CoreV1().ConfigMaps("default").Create(t.Context(), first, metav1.CreateOptions{})
			require.NoError(t, err)
			w := startWatch(t, te, tt.args...)
			fw, out := w.fw, w.out
			handed := lockConfigMap(t, "staging", api)
			handed.ResourceVersion = "2"
			var rec map[string]any
			require.NoError(t, json.Unmarshal([]byte(handed.Annotations[record.RecordAnnotation]), &rec))
			rec["history"] = []any{map[string]any{"owner": "acme", "repo": "web", "branch": "main", "build": "42",
				"since": web.Since, "until": metav1.NewMicroTime(testNow), "ended": "handedOver", "by": "acme/api@main#5"}}
			data, err := json.Marshal(rec)
			require.NoError(t, err)
			handed.Annotations[record.RecordAnnotation] = string(data)
			fw.Modify(handed)
			fw.Delete(handed)
			for !tt.printed(out.String()) {
				<-out.writes
			}
			require.ErrorIs(t, w.stop(), context.Canceled, "-w ends when interrupted")
			golden(t, tt.golden, out.String())
		})
	}
}

// TestRunStatusWatchTimeout: --timeout ends -w without an error.
func TestRunStatusWatchTimeout(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	require.NoError(t, te.run("status", "-w", "--timeout", "50ms"))
	assert.Equal(t, "10:00:00 no locks in namespace \"default\"\n", te.errOut.String())
}

// TestTimestamps: stderr lines start with the UTC time off a terminal,
// not in GitHub Actions or GitLab CI logs (which time each line), and as
// --timestamps says.
func TestTimestamps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string
	}{
		{name: "a pipe", want: "10:00:00 no locks in namespace \"default\"\n"},
		{name: "GitHub Actions", env: map[string]string{"GITHUB_ACTIONS": "true"}, want: "no locks in namespace \"default\"\n"},
		{name: "GitLab CI", env: map[string]string{"GITLAB_CI": "true"}, want: "no locks in namespace \"default\"\n"},
		{name: "GitLab CI, --timestamps=true", env: map[string]string{"GITLAB_CI": "true"}, args: []string{"--timestamps=true"}, want: "10:00:00 no locks in namespace \"default\"\n"},
		{name: "--timestamps=false", args: []string{"--timestamps=false"}, want: "no locks in namespace \"default\"\n"},
		{name: "LOCKCTL_TIMESTAMPS=false", env: map[string]string{"LOCKCTL_TIMESTAMPS": "false"}, want: "no locks in namespace \"default\"\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			for k, v := range tt.env {
				te.env[k] = v
			}
			require.NoError(t, te.run(append([]string{"status"}, tt.args...)...))
			assert.Equal(t, tt.want, te.errOut.String(), tt.name)
		})
	}
}

// TestSortByFindsNothing: a --sort-by path that finds nothing in any row
// (misspelt) is refused as kubectl refuses it, as a usage error (exit 2),
// and prints nothing.
func TestSortByFindsNothing(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{name: "status", args: []string{"status", "-A", "--sort-by", ".spec.targett"},
			want: `--sort-by ".spec.targett" finds no field in any of the 2 objects: give a path of the objects as -o json prints them, such as .metadata.name`},
		{name: "history", args: []string{"history", "staging", "--sort-by", ".sinc"},
			want: `--sort-by ".sinc" finds no field in any of the 6 objects: give a path of the objects as -o json prints them, such as .metadata.name`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			tokened := heldLock(t, "43")
			tokened.Name, tokened.Namespace = record.Name("prod"), "ops"
			for _, o := range []*corev1.ConfigMap{withHistory(t, heldLock(t, "42"), 5, 4*time.Minute), tokened} {
				_, err := te.cs.CoreV1().ConfigMaps(o.Namespace).Create(t.Context(), o, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			err := te.run(tt.args...)
			require.Error(t, err, "%v", tt.args)
			assert.Equal(t, tt.want, err.Error())
			assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "a usage error")
			assert.Empty(t, te.out.String(), "nothing printed")
		})
	}
}
