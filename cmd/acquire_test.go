package cmd

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

func TestNewAcquireCmd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    acquireOptions
		wantErr string
	}{
		{
			name: "defaults",
			args: []string{"staging"},
			want: acquireOptions{Target: "staging", Targets: []string{"staging"}, ContenderFlags: cli.ContenderFlags{TTL: time.Hour, Policy: record.PolicyNewest, Priority: record.PriorityNormal, Progress: "auto"}},
		},
		{
			name: "every flag",
			args: []string{"staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "42", "--pod", "ci/p",
				"--lock-namespace", "locks", "--ttl", "5m", "--timeout", "30s", "--policy", "fifo", "--priority", "high", "--progress", "plain", "-o", "yaml"},
			want: acquireOptions{
				LockFlags: cli.LockFlags{Owner: "acme", Repo: "web", Branch: "main", Build: "42", Pod: "ci/p", LockNamespace: "locks"},
				Target:    "staging", Targets: []string{"staging"}, ContenderFlags: cli.ContenderFlags{TTL: 5 * time.Minute, Timeout: 30 * time.Second, Policy: record.PolicyFIFO, Priority: record.PriorityHigh, Progress: "plain"}, Output: "yaml",
			},
		},
		{
			name: "flags from LOCKCTL_ environment, command line wins",
			args: []string{"staging", "--ttl", "2m"},
			env:  map[string]string{"LOCKCTL_LOCK_NAMESPACE": "locks", "LOCKCTL_TTL": "9m", "LOCKCTL_TIMEOUT": "1m"},
			want: acquireOptions{LockFlags: cli.LockFlags{LockNamespace: "locks"}, Target: "staging", Targets: []string{"staging"}, ContenderFlags: cli.ContenderFlags{TTL: 2 * time.Minute, Timeout: time.Minute, Policy: record.PolicyNewest, Priority: record.PriorityNormal, Progress: "auto"}},
		},
		{
			name: "no-wait",
			args: []string{"staging", "--no-wait"},
			want: acquireOptions{Target: "staging", Targets: []string{"staging"}, ContenderFlags: cli.ContenderFlags{TTL: time.Hour, Policy: record.PolicyNewest, Priority: record.PriorityNormal, Progress: "auto"}, NoWait: true},
		},
		{
			name: "across clusters",
			args: []string{"production", "--contexts", "prod-us,prod-eu,prod-ap"},
			want: acquireOptions{
				LockFlags: cli.LockFlags{Contexts: []string{"prod-us", "prod-eu", "prod-ap"}},
				Target:    "production", Targets: []string{"production"}, ContenderFlags: cli.ContenderFlags{TTL: time.Hour, Policy: record.PolicyNewest, Priority: record.PriorityNormal, Progress: "auto"},
			},
		},
		{
			name: "across clusters from LOCKCTL_CONTEXTS",
			args: []string{"production"},
			env:  map[string]string{"LOCKCTL_CONTEXTS": "prod-us,prod-eu"},
			want: acquireOptions{
				LockFlags: cli.LockFlags{Contexts: []string{"prod-us", "prod-eu"}},
				Target:    "production", Targets: []string{"production"}, ContenderFlags: cli.ContenderFlags{TTL: time.Hour, Policy: record.PolicyNewest, Priority: record.PriorityNormal, Progress: "auto"},
			},
		},
		{
			name: "applications, repeated and listed, from the command line and the environment",
			args: []string{"staging", "--app", "argocd/web", "--app", "flux/kustomization/apps/web,argocd/web"},
			want: acquireOptions{Target: "staging", Targets: []string{"staging"}, ContenderFlags: cli.ContenderFlags{TTL: time.Hour, Policy: record.PolicyNewest, Priority: record.PriorityNormal, Progress: "auto",
				Apps: []record.App{{Kind: record.AppArgoCD, Name: "web"}, {Kind: record.AppFluxKustomization, Namespace: "apps", Name: "web"}}}},
		},
		{
			name: "applications from LOCKCTL_APP",
			args: []string{"staging"},
			env:  map[string]string{"LOCKCTL_APP": "argocd/team-a/web,flux/helmrelease/apps/web"},
			want: acquireOptions{Target: "staging", Targets: []string{"staging"}, ContenderFlags: cli.ContenderFlags{TTL: time.Hour, Policy: record.PolicyNewest, Priority: record.PriorityNormal, Progress: "auto",
				Apps: []record.App{{Kind: record.AppArgoCD, Namespace: "team-a", Name: "web"}, {Kind: record.AppFluxHelmRelease, Namespace: "apps", Name: "web"}}}},
		},
		{name: "bad application", args: []string{"staging", "--app", "flux/web"}, wantErr: `invalid argument "flux/web" for "--app" flag: application "flux/web" names Flux kind "web": use argocd/NAME, argocd/NAMESPACE/NAME, flux/kustomization/NAMESPACE/NAME or flux/helmrelease/NAMESPACE/NAME`},
		{name: "no-wait with a timeout", args: []string{"staging", "--no-wait", "--timeout", "1m"}, wantErr: "--no-wait and --timeout exclude each other"},
		{
			name: "a budget from history",
			args: []string{"staging", "--timeout", "auto"},
			want: acquireOptions{Target: "staging", Targets: []string{"staging"}, ContenderFlags: cli.ContenderFlags{TTL: time.Hour, TimeoutAuto: true, Policy: record.PolicyNewest, Priority: record.PriorityNormal, Progress: "auto"}},
		},
		{name: "no-wait with a budget", args: []string{"staging", "--no-wait", "--timeout", "auto"}, wantErr: "--no-wait and --timeout exclude each other"},
		{name: "bad timeout", args: []string{"staging", "--timeout", "soon"}, wantErr: `invalid argument "soon" for "--timeout" flag: "soon" is neither a duration (30m, 1h) nor auto`},
		{name: "no namespace", args: []string{}, wantErr: "requires at least 1 arg(s), only received 0"},
		{name: "a namespace twice", args: []string{"a", "b", "a"}, wantErr: `namespace "a" is named twice`},
		{name: "invalid namespace", args: []string{"Not_A_Namespace"}, wantErr: `invalid namespace "Not_A_Namespace"`},
		{name: "bad policy", args: []string{"staging", "--policy", "lifo"}, wantErr: `invalid argument "lifo" for "--policy" flag: unknown policy "lifo": use "newest" or "fifo"`},
		{name: "bad priority", args: []string{"staging", "--priority", "urgent"}, wantErr: `invalid argument "urgent" for "--priority" flag: unknown priority "urgent": use "high", "normal" or "low"`},
		{name: "bad ttl", args: []string{"staging", "--ttl", "0s"}, wantErr: "--ttl must be positive, got 0s"},
		{name: "bad progress", args: []string{"staging", "--progress", "fancy"}, wantErr: `--progress must be auto, tty or plain, got "fancy"`},
		{name: "bad output", args: []string{"staging", "-o", "wide"}, wantErr: `invalid argument "wide" for "-o, --output" flag: must be one of json, yaml`},
		{name: "bad env value", args: []string{"staging"}, env: map[string]string{"LOCKCTL_TTL": "soon"}, wantErr: `invalid value "soon" in LOCKCTL_TTL for --ttl`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			for k, v := range tt.env {
				te.env[k] = v
			}
			got, err := parseArgsIn(t, te, []string{"acquire"}, tt.args, newAcquireCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *acquireOptions) { o.f = nil })
		})
	}
}

func TestRunAcquire(t *testing.T) {
	t.Parallel()
	heldBy41 := func() *corev1.ConfigMap {
		return lockConfigMap(t, "staging", record.Claim{
			Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "43"},
			ClaimID:  "s43", Since: metav1.NewMicroTime(testNow.Add(-time.Minute)),
			Expires: ptrMicro(testNow.Add(time.Hour)),
		})
	}
	tests := []struct {
		name       string
		args       []string
		env        map[string]string
		objs       []*corev1.ConfigMap
		wantOut    string
		wantJSON   bool
		wantErrOut string
		wantCode   int
		// wantUntouched: the lock is left exactly as it was.
		wantUntouched bool
	}{
		{
			name:       "lock object with its token as json",
			args:       []string{"acquire", "staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "42", "-o", "json"},
			wantJSON:   true,
			wantErrOut: "10:00:00 lock \"staging\" acquired by acme/web@main#42 after 0s (default/lockctl-lock-staging)\n",
		},
		{
			name:       "free lock, identity from flags",
			args:       []string{"acquire", "staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "42"},
			wantOut:    "1\n",
			wantErrOut: "10:00:00 lock \"staging\" acquired by acme/web@main#42 after 0s (default/lockctl-lock-staging)\n",
		},
		{
			name:       "identity from the Prow / Jenkins X environment",
			args:       []string{"acquire", "staging"},
			env:        map[string]string{"REPO_OWNER": "acme", "REPO_NAME": "web", "BRANCH_NAME": "main", "BUILD_NUMBER": "7"},
			wantOut:    "1\n",
			wantErrOut: "10:00:00 lock \"staging\" acquired by acme/web@main#7 after 0s (default/lockctl-lock-staging)\n",
		},
		{
			name:       "identity from GitHub Actions",
			args:       []string{"acquire", "staging", "--lock-namespace", "ci"},
			env:        map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/web", "GITHUB_REF_NAME": "main", "GITHUB_RUN_NUMBER": "9"},
			wantOut:    "1\n",
			wantErrOut: "lock \"staging\" acquired by acme/web@main#9 after 0s (ci/lockctl-lock-staging)\n",
		},
		{
			name:       "identity from GitLab CI",
			args:       []string{"acquire", "staging"},
			env:        map[string]string{"GITLAB_CI": "true", "CI_PROJECT_NAMESPACE": "acme", "CI_PROJECT_NAME": "web", "CI_COMMIT_REF_NAME": "main", "CI_PIPELINE_IID": "11"},
			wantOut:    "1\n",
			wantErrOut: "lock \"staging\" acquired by acme/web@main#11 after 0s (default/lockctl-lock-staging)\n",
		},
		{
			name:       "newer build of the branch holds the lock: superseded",
			args:       []string{"acquire", "staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "42"},
			objs:       []*corev1.ConfigMap{heldBy41()},
			wantErrOut: "",
			wantCode:   cmdutil.CodeSuperseded,
		},
		{
			name:     "held, --no-wait: exit 4 without queueing",
			args:     []string{"acquire", "staging", "--no-wait", "--owner", "acme", "--repo", "api", "--branch", "main", "--build", "1"},
			objs:     []*corev1.ConfigMap{heldBy41()},
			wantCode: cmdutil.CodeTimeout, wantUntouched: true,
		},
		{
			name:       "free, --no-wait: acquired",
			args:       []string{"acquire", "staging", "--no-wait", "--owner", "acme", "--repo", "api", "--branch", "main", "--build", "1"},
			wantOut:    "1\n",
			wantErrOut: "10:00:00 lock \"staging\" acquired by acme/api@main#1 after 0s (default/lockctl-lock-staging)\n",
		},
		{
			name:     "non-numeric build",
			args:     []string{"acquire", "staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "abc"},
			wantCode: cmdutil.CodeUsage,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			for _, o := range tt.objs {
				_, err := te.cs.CoreV1().ConfigMaps("default").Create(t.Context(), o, metav1.CreateOptions{})
				require.NoError(t, err)
			}
			for k, v := range tt.env {
				te.env[k] = v
			}
			err := te.run(tt.args...)
			assert.Equal(t, tt.wantCode, cmdutil.ExitCode(err), "exit code, err %v", err)
			if tt.wantJSON {
				// The session is random: check the fields that tell.
				var l lock.LockView
				require.NoError(t, json.Unmarshal(te.out.Bytes(), &l), "stdout: %s", te.out)
				assert.Equal(t, "Lock", l.Kind, "kind")
				assert.Equal(t, lock.StateHeld, l.Status.State, "state")
				assert.Equal(t, "1", l.Status.Token, "token")
				require.NotNil(t, l.Status.Holder, "holder")
				assert.Equal(t, "acme/web@main#42", l.Status.Holder.Identity.String(), "holder")
				assert.Equal(t, testNow, l.Status.Holder.Since.UTC(), "since")
			} else {
				assert.Equal(t, tt.wantOut, te.out.String(), "stdout")
			}
			assert.Equal(t, tt.wantErrOut, te.errOut.String(), "stderr")
			if tt.wantUntouched {
				cm, err := te.cs.CoreV1().ConfigMaps("default").Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
				require.NoError(t, err)
				assert.Equal(t, tt.objs[0].Annotations, cm.Annotations, "the lock is left as it was")
			}
		})
	}
}

// TestRunAcquireSeveral: several locks are taken in name order, one token
// line each, and released together.
func TestRunAcquireSeveral(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	idFlags := []string{"--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1"}
	require.NoError(t, te.run(append([]string{"acquire", "staging", "db-migrations"}, idFlags...)...))
	lines := strings.Split(strings.TrimSpace(te.out.String()), "\n")
	require.Len(t, lines, 2, te.out.String())
	assert.True(t, strings.HasPrefix(lines[0], "db-migrations "), "name order first: %q", lines[0])
	assert.True(t, strings.HasPrefix(lines[1], "staging "), "then: %q", lines[1])
	assert.Contains(t, te.errOut.String(), `lock "db-migrations" acquired by acme/web@main#1`)
	assert.Contains(t, te.errOut.String(), `lock "staging" acquired by acme/web@main#1`)

	te.errOut.Reset()
	require.NoError(t, te.run(append([]string{"release", "staging", "db-migrations"}, idFlags...)...))
	assert.Contains(t, te.errOut.String(), `lock "staging" released`)
	assert.Contains(t, te.errOut.String(), `lock "db-migrations" released`)
}

func TestRunAcquireRefusesHostileIdentity(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "terminal escape in the owner", args: []string{"--owner", "acme\x1b[2J"}, wantErr: `invalid identity: --owner "acme\x1b[2J" contains control characters`},
		{name: "newline in the branch", args: []string{"--branch", "main\nfake line"}, wantErr: `invalid identity: --branch "main\nfake line" contains control characters`},
		{name: "oversized owner", args: []string{"--owner", strings.Repeat("o", 100<<10)}, wantErr: "invalid identity: --owner is 102400 bytes long"},
	}
	for _, tt := range tests {
		for _, verb := range []string{"acquire", "release"} {
			t.Run(verb+" "+tt.name, func(t *testing.T) {
				t.Parallel()
				te := newTestEnv(t)
				args := append([]string{verb, "staging", "--repo", "web", "--build", "1"}, tt.args...)
				err := te.run(args...)
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "exit code")
				assert.Empty(t, te.cs.Actions(), "no API call")
			})
		}
	}
}
