package cmd

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/lock/record"
)

func TestNewEnforceCmd(t *testing.T) {
	t.Parallel()
	var defaultKinds []string
	for _, k := range enforce.DefaultKinds {
		defaultKinds = append(defaultKinds, k.String())
	}
	tests := []struct {
		name    string
		args    []string
		want    enforceOptions
		wantErr string
	}{
		{
			name: "defaults",
			args: []string{"prod"},
			want: enforceOptions{Targets: []string{"prod"}, EnforceFlags: cli.EnforceFlags{Mode: "warn", Kinds: defaultKinds}, Timeout: 30 * time.Second},
		},
		{
			name: "deny, strict, agent, two targets",
			args: []string{"prod", "web", "--mode", "deny", "--strict", "--require-holder", "--agent", "system:serviceaccount:argocd:argocd-application-controller", "--exempt", "ops", "--kinds", "deployments.apps,services"},
			want: enforceOptions{
				Targets: []string{"prod", "web"}, Timeout: 30 * time.Second, EnforceFlags: cli.EnforceFlags{
					Mode: "deny", Strict: true, RequireHolder: true,
					Agents: []string{"system:serviceaccount:argocd:argocd-application-controller"}, Exempt: []string{"ops"},
					Kinds: []string{"deployments.apps", "services"},
				},
			},
		},
		{
			name: "dry run",
			args: []string{"prod", "--dry-run", "-o", "yaml"},
			want: enforceOptions{Targets: []string{"prod"}, EnforceFlags: cli.EnforceFlags{Mode: "warn", Kinds: defaultKinds}, DryRun: true, Output: "yaml", Timeout: 30 * time.Second},
		},
		{name: "no namespace", args: nil, wantErr: "requires at least 1 arg(s), only received 0"},
		{name: "bad mode", args: []string{"prod", "--mode", "block"}, wantErr: `invalid --mode: unknown mode "block": use "warn", "audit" or "deny"`},
		{name: "bad kind", args: []string{"prod", "--kinds", "Deployments"}, wantErr: `invalid --kinds: kind "Deployments" is not a plural resource name such as deployments.apps or services`},
		{name: "dry run without output", args: []string{"prod", "--dry-run"}, wantErr: "--dry-run prints the manifests: add -o yaml or -o json"},
		{name: "output without dry run", args: []string{"prod", "-o", "yaml"}, wantErr: "-o prints the manifests of --dry-run: add --dry-run, or drop -o"},
		{name: "uninstall dry run", args: []string{"prod", "--uninstall", "--dry-run", "-o", "yaml"}, wantErr: "--uninstall and --dry-run cannot be combined: --dry-run prints what enforce installs"},
		{name: "empty agent", args: []string{"prod", "--agent", " "}, wantErr: "--agent and --exempt take a user name, got an empty one"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			got, err := parseArgsIn(t, te, []string{"enforce"}, tt.args, newEnforceCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *enforceOptions) { o.f = nil })
		})
	}
}

func TestRunEnforce(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	require.NoError(t, te.run("acquire", "prod", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1"))
	// A record as a lockctl before 1.8 leaves it: no summary.
	cm, err := te.cs.CoreV1().ConfigMaps("default").Get(t.Context(), "lockctl-lock-prod", metav1.GetOptions{})
	require.NoError(t, err)
	for k := range cm.Annotations {
		if strings.HasPrefix(k, record.SummaryPrefix) {
			delete(cm.Annotations, k)
		}
	}
	_, err = te.cs.CoreV1().ConfigMaps("default").Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	te.errOut.Reset()
	te.out.Reset()

	err = te.run("enforce", "prod", "--strict")
	require.Error(t, err, "held by a claim without a user")
	assert.Contains(t, err.Error(), `lock "prod" is held by acme/web@main#1, whose claim has no Kubernetes user`)
	require.NoError(t, te.run("enforce", "prod", "--strict", "--force"))
	assert.Equal(t, "10:00:00 lock \"prod\": made its lock readable by the policy and marked it enforced (default/lockctl-lock-prod)\n"+
		"10:00:00 lock \"prod\" enforced (warn, strict) by ValidatingAdmissionPolicy lockctl-enforce-prod; the API server applies it within seconds\n", te.errOut.String())
	cm, err = te.cs.CoreV1().ConfigMaps("default").Get(t.Context(), "lockctl-lock-prod", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "acme/web@main#1", cm.Annotations[record.SummaryHolderAnnotation], "the summary is written")
	adm := te.cs.AdmissionregistrationV1()
	p, err := adm.ValidatingAdmissionPolicies().Get(t.Context(), "lockctl-enforce-prod", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "true", p.Annotations[enforce.StrictAnnotation])
	_, err = adm.ValidatingAdmissionPolicyBindings().Get(t.Context(), "lockctl-enforce-prod", metav1.GetOptions{})
	require.NoError(t, err)

	te.errOut.Reset()
	require.NoError(t, te.run("status", "prod"))
	assert.Contains(t, te.errOut.String(), "lock \"prod\" is enforced by the API server: warn, strict; its holder has no Kubernetes user, so only writes carrying its fencing token 3 are admitted\n")
	te.out.Reset()

	te.errOut.Reset()
	require.NoError(t, te.run("enforce", "prod", "--uninstall"))
	assert.Equal(t, "10:00:00 lock \"prod\" is no longer enforced (removed ValidatingAdmissionPolicy and binding lockctl-enforce-prod)\n", te.errOut.String())
	list, err := adm.ValidatingAdmissionPolicies().List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, list.Items, "policies left behind")
	te.errOut.Reset()
	require.NoError(t, te.run("enforce", "prod", "--uninstall"))
	assert.Equal(t, "10:00:00 lock \"prod\" was not enforced\n", te.errOut.String())
	assert.Empty(t, te.out.String(), "stdout")
}

func TestRunEnforceDryRun(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	require.NoError(t, te.run("enforce", "prod", "--mode", "deny", "--strict", "--agent", "system:serviceaccount:argocd:argocd-application-controller", "--dry-run", "-o", "yaml", "--lock-namespace", "locks"))
	golden(t, "enforce/dry-run.golden", te.out.String())
	assert.Empty(t, te.errOut.String())
	assert.Empty(t, te.cs.Actions(), "a dry run calls nothing")
}

func TestNewStampCmd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    stampOptions
		wantErr string
	}{
		{name: "token flag", args: []string{"--token", "42"}, want: stampOptions{Token: "42"}},
		{name: "token from the environment", env: map[string]string{"LOCKCTL_FENCING_TOKEN": "7"}, want: stampOptions{Token: "7"}},
		{name: "no token", wantErr: "no fencing token: pass --token TOKEN, or run under lockctl run, which sets $LOCKCTL_FENCING_TOKEN"},
		{name: "arguments", args: []string{"x.yaml", "--token", "1"}, wantErr: `unknown command "x.yaml" for "lockctl stamp"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			for k, v := range tt.env {
				te.env[k] = v
			}
			got, err := parseArgsIn(t, te, []string{"stamp"}, tt.args, newStampCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *stampOptions) { o.f = nil })
		})
	}
}

func TestRunStamp(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	te.f.IOStreams.In = strings.NewReader(`# the app
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web # the name
spec:
  replicas: 2
---
{"apiVersion":"v1","kind":"List","items":[{"apiVersion":"v1","kind":"Service","metadata":{"name":"web","annotations":{"lockctl.dev/fencing-token":"1"}}}]}
`)
	require.NoError(t, te.run("stamp", "--token", "42"))
	golden(t, "stamp/stamped.golden", te.out.String())
	assert.Empty(t, te.errOut.String())
}

// TestRunEnforceRefusesTargets: the lock namespace and the system
// namespaces are refused as targets with exit status 2 and a line that
// says why, and nothing is installed or marked; --force enforces them.
func TestRunEnforceRefusesTargets(t *testing.T) {
	t.Parallel()
	for _, target := range []string{"default", "kube-system"} {
		t.Run(target, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			err := te.run("enforce", target)
			require.Error(t, err)
			assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err))
			assert.Contains(t, err.Error(), `namespace "`+target+`" is `)
			assert.Contains(t, err.Error(), "enforce it only with --force")
			_, err = te.cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Get(t.Context(), enforce.Name(target), metav1.GetOptions{})
			assert.Error(t, err, "nothing installed")
			_, err = te.cs.CoreV1().ConfigMaps("default").Get(t.Context(), record.Name(target), metav1.GetOptions{})
			assert.Error(t, err, "nothing marked")
			require.NoError(t, te.run("enforce", target, "--force"))
		})
	}
}
