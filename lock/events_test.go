package lock

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// eventLog is an EventRecorder that keeps what it is given.
type eventLog struct {
	mu     sync.Mutex
	events []string
}

var _ EventRecorder = (*eventLog)(nil)

func (l *eventLog) Event(_ context.Context, cm *corev1.ConfigMap, warning bool, action, reason, note string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	typ := "Normal"
	if warning {
		typ = "Warning"
	}
	l.events = append(l.events, typ+" "+action+"/"+reason+" on "+cm.Name+": "+note)
}

func TestLockEvents(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	mine := held(claim("a", "web", "main", "42"), t0)
	theirs := held(claim("b", "api", "main", "7"), t0)
	expired := held(claim("b", "api", "main", "7"), t0.Add(-2*time.Hour))
	waiter := queued(claim("w", "db", "main", "1"), now)
	tests := []struct {
		name string
		objs []runtime.Object
		do   func(ctx context.Context, c *Client) error
		want []string
	}{
		{
			name: "acquired",
			do:   acquireAs("42"),
			want: []string{"Normal Lock/Acquired on lockctl-lock-staging: acquired by acme/web@main#42, fencing token "},
		},
		{
			name: "released, nobody waiting",
			objs: []runtime.Object{lockObject(t, recordOf(mine))},
			do:   releaseAs("42", ReleaseOptions{}),
			want: []string{"Normal Lock/Released on lockctl-lock-staging: released by acme/web@main#42"},
		},
		{
			name: "released, handed over",
			objs: []runtime.Object{lockObject(t, recordOf(mine, waiter))},
			do:   releaseAs("42", ReleaseOptions{}),
			want: []string{"Normal Lock/HandedOver on lockctl-lock-staging: released by acme/web@main#42, handed over to acme/db@main#1"},
		},
		{
			name: "broken with --force: by whom",
			objs: []runtime.Object{lockObject(t, recordOf(theirs))},
			do:   releaseAs("42", ReleaseOptions{Force: true, By: "alice@laptop"}),
			want: []string{"Warning Lock/ForceReleased on lockctl-lock-staging: hold of acme/api@main#7 broken with --force by alice@laptop"},
		},
		{
			name: "broken with --force, handed over",
			objs: []runtime.Object{lockObject(t, recordOf(theirs, waiter))},
			do:   releaseAs("42", ReleaseOptions{Force: true}),
			want: []string{
				"Warning Lock/ForceReleased on lockctl-lock-staging: hold of acme/api@main#7 broken with --force by acme/web@main#42",
				"Normal Lock/HandedOver on lockctl-lock-staging: released by acme/api@main#7, handed over to acme/db@main#1",
			},
		},
		{
			name: "expired holder removed: why",
			objs: []runtime.Object{lockObject(t, recordOf(expired))},
			do:   acquireAs("42"),
			want: []string{
				"Warning Lock/StaleHolderRemoved on lockctl-lock-staging: stale holder acme/api@main#7 removed: expired at 2026-12-02T09:00:00Z; taken by acme/web@main#42",
				"Normal Lock/Acquired on lockctl-lock-staging: acquired by acme/web@main#42, fencing token ",
			},
		},
		{
			name: "superseded by a newer build",
			objs: []runtime.Object{lockObject(t, recordOf(held(claim("b", "web", "main", "43"), t0)))},
			do:   acquireAs("42"),
			want: []string{"Normal Lock/Superseded on lockctl-lock-staging: acme/web@main#42 gave up: superseded by acme/web@main#43"},
		},
		{
			name: "an older run asked to stop (cancel-in-progress)",
			objs: []runtime.Object{lockObject(t, recordOf(runClaim(held(claim("b", "web", "main", "41"), t0))))},
			do: func(ctx context.Context, c *Client) error {
				req := request("42")
				req.CancelInProgress = true
				_, _, err := c.TryAcquire(ctx, req)
				return err
			},
			want: []string{"Normal Lock/CancelRequested on lockctl-lock-staging: acme/web@main#42 asked acme/web@main#41 to stop (cancel-in-progress)"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, _ := newTestClient(t, now, nil, tt.objs...)
			log := &eventLog{}
			c.events = log
			_ = tt.do(t.Context(), c)
			require.Len(t, log.events, len(tt.want), "events: %q", log.events)
			for i, w := range tt.want {
				assert.Contains(t, log.events[i], w, "event %d", i)
			}
		})
	}
}

func acquireAs(build string) func(context.Context, *Client) error {
	return func(ctx context.Context, c *Client) error {
		_, _, err := c.TryAcquire(ctx, request(build))
		return err
	}
}

// releaseAs releases lock "staging" as build with o.
func releaseAs(build string, o ReleaseOptions) func(context.Context, *Client) error {
	return func(ctx context.Context, c *Client) error {
		_, err := c.Release(ctx, "staging", request(build).Identity, o)
		return err
	}
}
