package cmd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/lock/record"
)

func TestNewReleaseCmd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    releaseOptions
		wantErr string
	}{
		{name: "defaults", args: []string{"staging"}, want: releaseOptions{Target: "staging", Targets: []string{"staging"}}},
		{name: "force", args: []string{"staging", "--force", "--build", "3"}, want: releaseOptions{Target: "staging", Targets: []string{"staging"}, Force: true, LockFlags: cli.LockFlags{Build: "3"}}},
		{name: "token", args: []string{"staging", "--token", "1234"}, want: releaseOptions{Target: "staging", Targets: []string{"staging"}, Token: "1234"}},
		{name: "token and force", args: []string{"staging", "--token", "1234", "--force"}, wantErr: "--token and --force exclude each other"},
		{name: "a token for two locks", args: []string{"a", "b", "--token", "7"}, wantErr: "--token names the hold of one lock: give one NAMESPACE"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			got, err := parseArgsIn(t, te, []string{"release"}, tt.args, newReleaseCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *releaseOptions) { o.f = nil })
		})
	}
}

func heldLock(t *testing.T, build string, waiters ...record.Claim) *corev1.ConfigMap {
	return lockConfigMap(t, "staging", record.Claim{
		Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: build},
		ClaimID:  "s" + build, Since: metav1.NewMicroTime(testNow.Add(-time.Minute)),
		Expires: ptrMicro(testNow.Add(time.Hour)),
	}, waiters...)
}

// tokenLock is a lock held by build with the fencing token token.
func tokenLock(t *testing.T, build, token string) *corev1.ConfigMap {
	return lockConfigMap(t, "staging", record.Claim{
		Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: build},
		ClaimID:  "s" + build, Since: metav1.NewMicroTime(testNow.Add(-time.Minute)),
		Expires: ptrMicro(testNow.Add(time.Hour)), Token: token,
	})
}

func TestRunRelease(t *testing.T) {
	t.Parallel()
	id := []string{"--owner", "acme", "--repo", "web", "--branch", "main", "--build", "42"}
	waiter := record.Claim{
		Identity: record.Identity{Owner: "acme", Repo: "api", Branch: "main", Build: "5"},
		ClaimID:  "w", Since: metav1.NewMicroTime(testNow), Expires: ptrMicro(testNow.Add(time.Minute)),
	}
	tests := []struct {
		name       string
		args       []string
		objs       []*corev1.ConfigMap
		wantErrOut string
		wantCode   int
		wantLock   bool
	}{
		{
			name:       "not held",
			args:       append([]string{"release", "staging"}, id...),
			wantErrOut: "10:00:00 lock \"staging\" is not held; nothing to release\n",
		},
		{
			name:       "held by me",
			args:       append([]string{"release", "staging"}, id...),
			objs:       []*corev1.ConfigMap{heldLock(t, "42")},
			wantErrOut: "10:00:00 lock \"staging\" released\n",
		},
		{
			name:       "held by me, handed to the next waiter",
			args:       append([]string{"release", "staging"}, id...),
			objs:       []*corev1.ConfigMap{heldLock(t, "42", waiter)},
			wantErrOut: "10:00:00 lock \"staging\" released\n10:00:00 lock \"staging\" now held by acme/api@main#5\n",
			wantLock:   true,
		},
		{
			name:     "held by another build: refused, lock kept",
			args:     append([]string{"release", "staging"}, id...),
			objs:     []*corev1.ConfigMap{heldLock(t, "41")},
			wantCode: cmdutil.CodeError,
			wantLock: true,
		},
		{
			name:       "by token, whatever the caller's identity",
			args:       []string{"release", "staging", "--token", "77", "--owner", "someone", "--repo", "else", "--branch", "x", "--build", "1"},
			objs:       []*corev1.ConfigMap{tokenLock(t, "41", "77")},
			wantErrOut: "10:00:00 lock \"staging\" released (held by acme/web@main#41 under fencing token 77)\n",
		},
		{
			name:     "by a wrong token: refused, lock kept",
			args:     []string{"release", "staging", "--token", "76"},
			objs:     []*corev1.ConfigMap{tokenLock(t, "41", "77")},
			wantCode: cmdutil.CodeError,
			wantLock: true,
		},
		{
			name:       "by token, not held: nothing to release",
			args:       []string{"release", "staging", "--token", "76"},
			wantErrOut: "10:00:00 lock \"staging\" is not held; nothing to release\n",
		},
		{
			name:       "held by another build, forced",
			args:       []string{"release", "staging", "--force"},
			objs:       []*corev1.ConfigMap{heldLock(t, "41")},
			wantErrOut: "10:00:00 broke lock \"staging\" held by acme/web@main#41 since 2026-12-02T09:59:00Z\n",
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
			err := te.run(tt.args...)
			assert.Equal(t, tt.wantCode, cmdutil.ExitCode(err), "exit code, err %v", err)
			assert.Equal(t, tt.wantErrOut, te.errOut.String(), "stderr")
			assert.Empty(t, te.out.String(), "stdout")
			assert.Equal(t, tt.wantLock, lockHeld(t, te), "lock still held")
		})
	}
}
