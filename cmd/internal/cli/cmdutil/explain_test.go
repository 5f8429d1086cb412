package cmdutil

import (
	"context"
	"fmt"
	"net/url"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

func TestExplainLockErrors(t *testing.T) {
	t.Parallel()
	holder := record.Claim{Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "7"}}
	tests := []struct {
		name     string
		err      error
		wantMsg  string
		wantHint string
	}{
		{
			name:     "missing lock namespace",
			err:      &lock.NamespaceError{Namespace: "does-not-exist"},
			wantMsg:  `lock namespace "does-not-exist" does not exist`,
			wantHint: "create it with `kubectl create namespace does-not-exist`, or keep locks in another namespace with --lock-namespace",
		},
		{
			name:     "corrupt record names the command that removes it",
			err:      &record.InvalidError{Namespace: "ci", Name: "lockctl-lock-staging", Target: "staging", Field: "holder.build", Reason: "empty"},
			wantMsg:  "lock ci/lockctl-lock-staging is invalid: holder.build: empty",
			wantHint: "inspect it with `kubectl get configmap -n ci lockctl-lock-staging -o yaml`; remove it with `lockctl release staging --lock-namespace ci --force`",
		},
		{
			name:     "release by a non-holder points to --force, not to the holder's identity",
			err:      &lock.NotHolderError{Target: "staging", Namespace: "ci", Holder: holder},
			wantMsg:  `lock on "staging" is held by acme/web@main#7, not by the caller`,
			wantHint: "only its holder releases it; to break it, run `lockctl release staging --lock-namespace ci --force` (it says whose lock it broke)",
		},
		{
			name: "release by another CI job of the build points to --token",
			err: &lock.NotHolderError{Target: "staging", Namespace: "ci",
				Holder: func() record.Claim {
					h := holder
					h.CIJob = record.CIJob{Job: "deploy", JobID: "1001", Attempt: 1001}
					return h
				}(), Caller: record.CIJob{Job: "cleanup", JobID: "1010", Attempt: 1010}},
			wantMsg:  `lock on "staging" is held by acme/web@main#7 in job deploy (1001, attempt 1001), another job than the caller's job cleanup (1010, attempt 1010)`,
			wantHint: "another job of a build releases its hold by the token acquire printed there: `lockctl release staging --token TOKEN`",
		},
		{
			name:     "release by a wrong token names both tokens",
			err:      &lock.TokenError{Target: "staging", Namespace: "ci", Token: "76", Holder: holder, HolderToken: "77"},
			wantMsg:  `lock on "staging" is held by acme/web@main#7 under fencing token 77, not 76; nothing released`,
			wantHint: "give the token `lockctl acquire` printed for this hold; to break the lock whoever holds it, run `lockctl release staging --lock-namespace ci --force`",
		},
		{
			name:     "acquire --no-wait on a held lock says who holds it",
			err:      &lock.HeldError{Target: "staging", Holder: holder, Waiters: 2},
			wantMsg:  `lock on "staging" is held by acme/web@main#7 since 0001-01-01T00:00:00Z, 2 waiting`,
			wantHint: "try again later, or wait for it: `lockctl acquire staging --timeout 10m`",
		},
		{
			name:     "a full queue says how full and what to do",
			err:      fmt.Errorf("acquire lock %q: %w", "staging", &lock.QueueFullError{Target: "staging", Holder: holder, Waiters: 650, Bytes: 197000}),
			wantMsg:  `acquire lock "staging": lock on "staging" is held by acme/web@main#7 and its queue is full: 650 waiting, and one more would make the lock record 193 KiB, over the 192 KiB a queue may reach; nothing was written, try again when the queue is shorter`,
			wantHint: "see the queue with `lockctl status staging`; a queue this long is served one holder at a time, so fewer waiting builds (--policy newest keeps one per branch) or more locks suit it better",
		},
		{
			name:     "a wait that timed out before the lock was read",
			err:      fmt.Errorf("acquire lock %q: %w", "staging", &lock.TimeoutError{Target: "staging", Waited: 3 * time.Millisecond}),
			wantMsg:  `acquire lock "staging": timed out after 3ms waiting for lock on "staging", before the lock could be read`,
			wantHint: "wait longer with --timeout, or see the queue with `lockctl status staging`",
		},
		{
			name: "a deadline that is not a wait names the request, not the context",
			err: fmt.Errorf("cleanup after the run: release lock %q: %w", "staging",
				&url.Error{Op: "Get", URL: "https://127.0.0.1:6443/api/v1/namespaces/ci/configmaps/x", Err: context.DeadlineExceeded}),
			wantMsg:  `cleanup after the run: release lock "staging": no answer in time from the API server at https://127.0.0.1:6443`,
			wantHint: "the API server did not answer in time; check that it is healthy and try again",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			msg, hint := Explain(tt.err)
			assert.Equal(t, tt.wantMsg, msg, "message of %T", tt.err)
			assert.Equal(t, tt.wantHint, hint, "hint of %T", tt.err)
		})
	}
}

// TestExitCodeTimeouts: exit 4 is for waits that timed out (and acquire
// --no-wait on a held lock), never for any other deadline.
func TestExitCodeTimeouts(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want int
	}{
		{name: "lock wait timed out", err: fmt.Errorf("acquire: %w", &lock.TimeoutError{Target: "staging"}), want: CodeTimeout},
		{name: "no-wait on a held lock", err: fmt.Errorf("acquire: %w", &lock.HeldError{Target: "staging"}), want: CodeTimeout},
		{name: "a full queue", err: fmt.Errorf("acquire: %w", &lock.QueueFullError{Target: "staging"}), want: CodeTimeout},
		{name: "another wait timed out", err: fmt.Errorf("job %q did not end within 1m: %w", "j", ErrWaitTimeout), want: CodeTimeout},
		{name: "a cleanup's deadline", err: fmt.Errorf("cleanup after the run: %w", context.DeadlineExceeded), want: CodeError},
		{name: "a request's deadline", err: &url.Error{Op: "Get", URL: "https://x", Err: context.DeadlineExceeded}, want: CodeError},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, ExitCode(tt.err), "exit code of %v", tt.err)
		})
	}
}

func TestJobsNotFound(t *testing.T) {
	t.Parallel()
	assert.NoError(t, JobsNotFound(nil, "ci"), "none missing")
	one := JobsNotFound([]string{"deploy-web-42"}, "ci")
	assert.Equal(t, &JobNotFoundError{Name: "deploy-web-42", Namespace: "ci"}, one, "one: the typed error, with its hint")
	assert.ErrorIs(t, one, job.ErrNotFound)
	assert.EqualError(t, JobsNotFound([]string{"a", "b\x1b"}, "ci"), `jobs "a", "b\x1b" not found in namespace "ci"`, "several, quoted")
}
