package run

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// orderObserver keeps the order of what a Run says.
type orderObserver struct {
	NopObserver
	mu     sync.Mutex
	events []string
}

func (o *orderObserver) add(format string, args ...any) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.events = append(o.events, fmt.Sprintf(format, args...))
}

func (o *orderObserver) Waited(err error) { o.add("waited: %v", err) }
func (o *orderObserver) Acquired(h *lock.Held, describe string) {
	o.add("acquired %s (%s) by %s", h.Target, describe, h.Holder.Identity)
}
func (o *orderObserver) Started(argv []string)                    { o.add("started %s", QuoteCommand(argv)) }
func (o *orderObserver) Released(target string, _ *lock.Released) { o.add("released %s", target) }

// TestRun: Run waits for every lock, says so, runs the command holding
// them and releases them, last taken first; a run that does not get its
// locks is an *AcquireError that says whether it was interrupted, and runs
// nothing.
func TestRun(t *testing.T) {
	t.Parallel()
	id := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}
	reqs := []lock.Request{
		{Target: "staging", Identity: id, TTL: 30 * time.Second},
		{Target: "db-migrations", Identity: id, TTL: 30 * time.Second},
	}
	// NOTE: the waits below never end on their own: the lock is held by
	// another build; the contexts end them.
	tests := []struct {
		name        string
		held        bool
		ctx         func(t *testing.T) context.Context
		timeout     time.Duration
		wantErr     string
		interrupted bool
		want        []string
	}{
		{
			name: "held, ran and released",
			ctx:  func(t *testing.T) context.Context { return t.Context() },
			want: []string{
				"waited: <nil>",
				"acquired db-migrations (default/lockctl-lock-db-migrations) by acme/web@main#1",
				"acquired staging (default/lockctl-lock-staging) by acme/web@main#1",
				"started true",
				"released staging",
				"released db-migrations",
			},
		},
		{
			name: "interrupted while waiting",
			held: true,
			ctx: func(t *testing.T) context.Context {
				ctx, cancel := context.WithTimeout(t.Context(), 50*time.Millisecond)
				t.Cleanup(cancel)
				return ctx
			},
			wantErr:     `acquire locks ["staging" "db-migrations"]: `,
			interrupted: true,
		},
		{
			name:    "timed out",
			held:    true,
			ctx:     func(t *testing.T) context.Context { return t.Context() },
			timeout: 50 * time.Millisecond,
			wantErr: `acquire locks ["staging" "db-migrations"]: `,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newFakeEnv(t)
			c := lock.New(kubetest.CoreV1(te.cs.CoreV1()), kubetest.CoreV1(te.cs.CoreV1()), "default", te.clock, lock.Options{})
			if tt.held {
				other := record.Identity{Owner: "acme", Repo: "api", Branch: "main", Build: "7"}
				_, _, err := c.TryAcquire(t.Context(), lock.Request{Target: "db-migrations", Identity: other, TTL: time.Hour})
				require.NoError(t, err)
			}
			cmd, err := NewCommand([]string{"true"}, CommandOptions{})
			require.NoError(t, err)
			obs := &orderObserver{}
			res, err := Run(tt.ctx(t), Options{Locks: c, Requests: reqs, Timeout: tt.timeout, Command: cmd, Observer: obs})
			if tt.wantErr != "" {
				require.ErrorContains(t, err, tt.wantErr, "run %s", tt.name)
				var ae *AcquireError
				require.ErrorAs(t, err, &ae)
				assert.Equal(t, tt.interrupted, ae.Interrupted, "interrupted")
				tt.want = []string{"waited: " + err.Error()}
			} else {
				require.NoError(t, err)
			}
			assert.NoError(t, res.ReleaseErr)
			assert.Equal(t, tt.want, obs.events, "what the observer was told")
		})
	}
}

// TestLockFromJob: spec.lock gives the lock when --lock does not, must be
// among those given otherwise, and leaves the job.
func TestLockFromJob(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		lock    string // spec.lock.namespace; "" for none
		targets []string
		want    []string
		wantErr string
	}{
		{name: "no spec.lock", targets: []string{"prod"}, want: []string{"prod"}},
		{name: "spec.lock alone", lock: "staging", want: []string{"staging"}},
		{name: "the same", lock: "staging", targets: []string{"staging"}, want: []string{"staging"}},
		{name: "among several", lock: "staging", targets: []string{"db", "staging"}, want: []string{"db", "staging"}},
		{name: "differ", lock: "staging", targets: []string{"prod"}, wantErr: `--lock "prod" and the job's spec.lock.namespace "staging" differ`},
		{name: "not among several", lock: "staging", targets: []string{"db", "prod"}, wantErr: `the job's spec.lock.namespace "staging" is not among --lock ["db" "prod"]`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			j := &job.Job{}
			if tt.lock != "" {
				j.Spec.Lock = &job.LockSpec{Namespace: tt.lock}
			}
			got, err := LockFromJob(j, tt.targets)
			if tt.wantErr != "" {
				assert.ErrorContains(t, err, tt.wantErr, "%s over %q", tt.lock, tt.targets)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got, "%s over %q", tt.lock, tt.targets)
			assert.Nil(t, j.Spec.Lock, "spec.lock leaves the job")
		})
	}
}
