package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/identity"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/servertime"
)

func TestLockFlagsIdentity(t *testing.T) {
	t.Parallel()
	flags := LockFlags{Owner: "acme", Repo: "web", Branch: "main", Build: "7"}
	with := func(f func(*LockFlags)) LockFlags {
		l := flags
		f(&l)
		return l
	}
	tests := []struct {
		name          string
		flags         LockFlags
		env           map[string]string
		local         *identity.LocalEnv
		want          record.Identity
		wantJob       record.CIJob
		wantUnordered bool
		wantErr       string
	}{
		{name: "flags", flags: flags, want: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "7"}},
		{
			name: "github actions: the workflow is the sequence, the job on its runner holds",
			env: map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/web", "GITHUB_REF_NAME": "main",
				"GITHUB_RUN_NUMBER": "88", "GITHUB_WORKFLOW_REF": "acme/web/.github/workflows/deploy.yml@refs/heads/main",
				"GITHUB_JOB": "deploy", "RUNNER_NAME": "GitHub Actions 3", "GITHUB_RUN_ATTEMPT": "1"},
			want:    record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "88", Sequence: ".github/workflows/deploy.yml"},
			wantJob: record.CIJob{Job: "deploy", JobID: "GitHub Actions 3", Attempt: 1},
		},
		{
			name: "github actions with --build: the number is the flag's, counted in no workflow",
			env: map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/web", "GITHUB_REF_NAME": "main",
				"GITHUB_RUN_NUMBER": "88", "GITHUB_WORKFLOW_REF": "acme/web/.github/workflows/deploy.yml@refs/heads/main",
				"GITHUB_JOB": "deploy", "RUNNER_NAME": "r1", "GITHUB_RUN_ATTEMPT": "2"},
			flags:   LockFlags{Build: "4021"},
			want:    record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "4021"},
			wantJob: record.CIJob{Job: "deploy", JobID: "r1", Attempt: 2},
		},
		{
			name: "a job name with control characters, named by its variable",
			env: map[string]string{"GITLAB_CI": "true", "CI_PROJECT_NAMESPACE": "acme", "CI_PROJECT_NAME": "web",
				"CI_COMMIT_REF_NAME": "main", "CI_PIPELINE_IID": "9", "CI_JOB_NAME": "deploy\x1b[2J", "CI_JOB_ID": "100"},
			wantErr: `invalid identity: job "deploy\x1b[2J" contains control characters (from $CI_JOB_NAME): fix the variable`,
		},
		{
			name:  "prow environment, flags win",
			env:   map[string]string{"REPO_OWNER": "org", "REPO_NAME": "api", "PULL_BASE_REF": "release", "BUILD_ID": "12"},
			flags: LockFlags{Build: "13"},
			want:  record.Identity{Owner: "org", Repo: "api", Branch: "release", Build: "13"},
		},
		{
			name: "local defaults: user@host, the terminal session as build, first come first served",
			env:  map[string]string{"USER": "me"},
			want: record.Identity{Owner: "me@laptop", Repo: "local", Branch: "local", Build: "4242"}, wantUnordered: true,
		},
		{
			name: "local defaults without $USER",
			want: record.Identity{Owner: "dev@laptop", Repo: "local", Branch: "local", Build: "4242"}, wantUnordered: true,
		},
		{
			name:  "lockctl run: the process, not the session",
			flags: LockFlags{PerProcess: true},
			want:  record.Identity{Owner: "dev@laptop", Repo: "local", Branch: "local", Build: "5151"}, wantUnordered: true,
		},
		{
			name:  "no session: the process",
			local: &identity.LocalEnv{User: "dev", Host: "laptop", PID: 99},
			want:  record.Identity{Owner: "dev@laptop", Repo: "local", Branch: "local", Build: "99"}, wantUnordered: true,
		},
		{
			name:  "local with --repo: still first come first served",
			flags: LockFlags{Repo: "one"},
			want:  record.Identity{Owner: "dev@laptop", Repo: "one", Branch: "local", Build: "4242"}, wantUnordered: true,
		},
		{
			name: "unknown CI: the session, never a per-call number",
			env:  map[string]string{"CI": "true"},
			want: record.Identity{Owner: "dev@laptop", Repo: "local", Branch: "local", Build: "4242"}, wantUnordered: true,
		},
		{
			name: "argo: hashed build, first come first served, nothing from the step's host",
			env:  map[string]string{"ARGO_WORKFLOW_NAME": "deploy-1"},
			want: record.Identity{Owner: "argo", Repo: "deploy-1", Branch: "workflow", Build: "2454434888"}, wantUnordered: true,
		},
		{
			name:  "argo with --build: ordered",
			env:   map[string]string{"ARGO_WORKFLOW_NAME": "deploy-1"},
			flags: LockFlags{Build: "3"},
			want:  record.Identity{Owner: "argo", Repo: "deploy-1", Branch: "workflow", Build: "3"},
		},
		{
			name:    "terminal escape in a flag",
			flags:   with(func(l *LockFlags) { l.Owner = "acme\x1b[2J" }),
			wantErr: `invalid identity: --owner "acme\x1b[2J" contains control characters: set --owner to printable text of at most 253 bytes`,
		},
		{
			name:    "newline in a flag",
			flags:   with(func(l *LockFlags) { l.Branch = "main\nfake line" }),
			wantErr: `invalid identity: --branch "main\nfake line" contains control characters: set --branch to printable text of at most 253 bytes`,
		},
		{
			name:    "oversized flag",
			flags:   with(func(l *LockFlags) { l.Repo = strings.Repeat("r", 100<<10) }),
			wantErr: "invalid identity: --repo is 102400 bytes long, more than the 253 allowed: set --repo to printable text of at most 253 bytes",
		},
		{
			name:    "invalid UTF-8 in a flag",
			flags:   with(func(l *LockFlags) { l.Repo = "web\xff" }),
			wantErr: `invalid identity: --repo "web\xff" is not valid UTF-8: set --repo to printable text of at most 253 bytes`,
		},
		{
			name:    "build not a number",
			flags:   with(func(l *LockFlags) { l.Build = "1e9" }),
			wantErr: `invalid identity: --build "1e9" is not a non-negative integer: set --build to a non-negative integer that grows with every build of the branch`,
		},
		{
			name:    "blank flag",
			flags:   with(func(l *LockFlags) { l.Owner = " " }),
			wantErr: "invalid identity: --owner is empty: set --owner to printable text of at most 253 bytes",
		},
		{
			name: "control character from prow",
			env:  map[string]string{"REPO_OWNER": "org", "REPO_NAME": "api", "BRANCH_NAME": "main\r", "BUILD_NUMBER": "3"},
			wantErr: `invalid identity: branch "main\r" contains control characters (from $BRANCH_NAME): ` +
				"fix the variable, or override it with --branch set to printable text of at most 253 bytes",
		},
		{
			name: "oversized value from github actions",
			env: map[string]string{"GITHUB_ACTIONS": "true", "GITHUB_REPOSITORY": "acme/" + strings.Repeat("r", 300),
				"GITHUB_REF_NAME": "main", "GITHUB_RUN_NUMBER": "5"},
			wantErr: "invalid identity: repo is 300 bytes long, more than the 253 allowed (from $GITHUB_REPOSITORY): " +
				"fix the variable, or override it with --repo set to printable text of at most 253 bytes",
		},
		{
			name:    "bad build from gitlab",
			env:     map[string]string{"GITLAB_CI": "true", "CI_PROJECT_NAMESPACE": "g", "CI_PROJECT_NAME": "p", "CI_COMMIT_REF_NAME": "main", "CI_PIPELINE_IID": "x"},
			wantErr: `invalid identity: build "x" is not a non-negative integer (from $CI_PIPELINE_IID): fix the variable, or override it with --build set to a non-negative integer that grows with every build of the branch`,
		},
		{
			name:  "bad environment overridden by a flag",
			env:   map[string]string{"REPO_OWNER": "org\x1b", "REPO_NAME": "api", "BRANCH_NAME": "main", "BUILD_NUMBER": "3"},
			flags: LockFlags{Owner: "org"},
			want:  record.Identity{Owner: "org", Repo: "api", Branch: "main", Build: "3"},
		},
		{
			name:    "control character in $USER",
			env:     map[string]string{"USER": "me\x07"},
			wantErr: `invalid identity: owner "me\a@laptop" contains control characters (from $USER): fix the variable, or override it with --owner set to printable text of at most 253 bytes`,
		},
		{name: "pod name", flags: with(func(l *LockFlags) { l.Pod = "ci/runner-1" }), want: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "7"}},
		{
			name:    "pod with a control character",
			flags:   with(func(l *LockFlags) { l.Pod = "runner\x1b" }),
			wantErr: `invalid --pod "runner\x1b": name: a lowercase RFC 1123 subdomain must consist of`,
		},
		{
			name:    "pod with a bad namespace",
			flags:   with(func(l *LockFlags) { l.Pod = "/runner" }),
			wantErr: `invalid --pod "/runner": namespace: a lowercase RFC 1123 label must consist of`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestFactory(t)
			for k, v := range tt.env {
				te.env[k] = v
			}
			l := tt.flags
			if tt.local != nil {
				te.local = *tt.local
			}
			h, err := l.Identity(te.f)
			if tt.wantErr == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.want, h.Identity)
				assert.Equal(t, tt.wantJob, h.Job, "CI job")
				assert.Equal(t, tt.wantUnordered, h.Unordered, "unordered")
				return
			}
			require.Error(t, err)
			assert.True(t, strings.HasPrefix(err.Error(), tt.wantErr), "error %q\nwant prefix %q", err.Error(), tt.wantErr)
			assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "exit code")
			var flagErr *cmdutil.FlagError
			assert.True(t, errors.As(err, &flagErr), "a *cmdutil.FlagError")
			assert.NotContains(t, err.Error(), "\x1b", "no control characters in the message")
			assert.Less(t, len(err.Error()), 1024, "a readable message, not the whole value")
		})
	}
}

// TestLockNamespaceDefault pins the order docs/configuration.md and --help give:
// --lock-namespace, else -n, else the pod's namespace, else the context's.
func TestLockNamespaceDefault(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name         string
		flag, n, pod string
		want         string
	}{
		{name: "the flag wins", flag: "locks", n: "ci", pod: "build", want: "locks"},
		{name: "-n before the pod's namespace", n: "ci", pod: "build", want: "ci"},
		{name: "the pod's namespace before the context's", pod: "build", want: "build"},
		{name: "the context's last", want: "default"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newTestFactory(t).f
			f.ConfigFlags.Namespace = tt.n
			f.InPod = func() (string, string, bool) { return tt.pod, "p", tt.pod != "" }
			got, err := (&LockFlags{LockNamespace: tt.flag}).ResolveLockNamespace(f)
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "flag %q, -n %q, pod namespace %q", tt.flag, tt.n, tt.pod)
		})
	}
}

// TestNewLockClientClock: lock clients judge expiries on the API server's
// clock (Factory.ServerClock), and read nodes (docs/adr/0015-lock-clock.md).
func TestNewLockClientClock(t *testing.T) {
	t.Parallel()
	te := newTestFactory(t)
	c, err := NewLockClient(te.f, &LockFlags{}, LockClientOptions{})
	require.NoError(t, err)
	assert.Same(t, te.clock, c.Clock(), "without a server clock, the factory's clock")
	assert.NotNil(t, c.Options().Nodes, "holder pods' nodes are read")

	te.f.ServerClock = servertime.New(te.clock)
	c, err = NewLockClient(te.f, &LockFlags{}, LockClientOptions{})
	require.NoError(t, err)
	assert.Same(t, te.f.ServerClock, c.Clock(), "the API server's clock")
}

// TestLockFlagsPodRef: --pod as NAMESPACE/NAME, or NAME in the namespace
// of the pod lockctl runs in, else the context's; no --pod is this pod.
func TestLockFlagsPodRef(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		flag, podNS string
		want        *record.PodRef
	}{
		{name: "outside a pod, no --pod: none", want: nil},
		{name: "in a pod, no --pod: this pod", podNS: "build", want: &record.PodRef{Namespace: "build", Name: "self"}},
		{name: "NAMESPACE/NAME", flag: "ci/runner", podNS: "build", want: &record.PodRef{Namespace: "ci", Name: "runner"}},
		{name: "NAME in a pod: the pod's namespace", flag: "runner", podNS: "build", want: &record.PodRef{Namespace: "build", Name: "runner"}},
		{name: "NAME outside a pod: the context's namespace", flag: "runner", want: &record.PodRef{Namespace: "default", Name: "runner"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := newTestFactory(t).f
			f.InPod = func() (string, string, bool) { return tt.podNS, "self", tt.podNS != "" }
			assert.Equal(t, tt.want, (&LockFlags{Pod: tt.flag}).PodRef(f), "--pod %q, pod namespace %q", tt.flag, tt.podNS)
		})
	}
}
