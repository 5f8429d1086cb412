package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/lock"
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
		{name: "one lock as json", args: []string{"staging", "-o", "json"}, want: statusOptions{Target: "staging", Output: "json"}},
		{name: "every namespace", args: []string{"-A"}, want: statusOptions{AllNamespaces: true}},
		{name: "two namespaces", args: []string{"a", "b"}, wantErr: "accepts at most 1 arg(s), received 2"},
		{name: "name across namespaces", args: []string{"staging", "-A"}, wantErr: "a lock cannot be shown by name across all namespaces"},
		{name: "bad output", args: []string{"-o", "table"}, wantErr: "must be one of json, yaml"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			got, err := parseArgsIn(t, te, []string{"status"}, tt.args, newStatusCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *statusOptions) { o.f = nil })
		})
	}
}

func TestRunStatus(t *testing.T) {
	t.Parallel()
	waiter := lock.Claim{
		Identity: lock.Identity{Owner: "acme", Repo: "api", Branch: "main", Build: "5"},
		Session:  "w", Since: metav1.NewMicroTime(testNow), Expires: ptrMicro(testNow.Add(time.Minute)),
	}
	hotfix := lock.Claim{
		Identity: lock.Identity{Owner: "acme", Repo: "web", Branch: "hotfix", Build: "9"},
		Session:  "hf", Since: metav1.NewMicroTime(testNow), Expires: ptrMicro(testNow.Add(time.Minute)), Priority: lock.PriorityHigh,
	}
	aged := lock.Claim{
		Identity: lock.Identity{Owner: "acme", Repo: "docs", Branch: "main", Build: "3"},
		Session:  "lo", Since: metav1.NewMicroTime(testNow.Add(-lock.PriorityAgeing)), Expires: ptrMicro(testNow.Add(time.Minute)), Priority: lock.PriorityLow,
	}
	tokened := heldLock(t, "43")
	tokened.Name, tokened.Namespace = lock.Name("prod"), "ops"
	tokened.Annotations[lock.RecordAnnotation] = strings.NewReplacer(`"target":"staging"`, `"target":"prod"`, `"session":"s43"`, `"session":"s43","token":"17"`).
		Replace(tokened.Annotations[lock.RecordAnnotation])
	corrupt := heldLock(t, "1")
	corrupt.Name = lock.Name("broken")
	corrupt.Labels[lock.TargetLabel] = "broken"
	corrupt.Annotations[lock.RecordAnnotation] = `{"target":"broken"`
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
