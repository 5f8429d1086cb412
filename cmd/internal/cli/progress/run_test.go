package progress

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli/term/termtest"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// TestPodGone: an aborted job's pod is said to be deleted only if one was
// ever created.
func TestPodGone(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		st   job.JobStatus
		want string
	}{
		{name: "aborted while triggered: no pod", st: job.JobStatus{State: job.Aborted}, want: " before its pod was created"},
		{name: "aborted while pending", st: job.JobStatus{State: job.Aborted, PodName: "deploy-1"}, want: `, pod "deploy-1" deleted`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, podGone(&job.Job{Status: tt.st}), "status %+v", tt.st)
		})
	}
}

// TestRunLockLines: the lines of a run's locks at its start and end, taken
// and released, or re-entered and left held.
func TestRunLockLines(t *testing.T) {
	t.Parallel()
	web := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "812"}
	api := record.Identity{Owner: "acme", Repo: "api", Branch: "main", Build: "7"}
	since := metav1.NewMicroTime(time.Date(2026, 12, 5, 7, 0, 0, 0, time.UTC))
	holder := record.Claim{Identity: web, Since: since}
	tests := []struct {
		name string
		held *lock.Held
		rel  *lock.Released
		want []string
	}{
		{name: "taken, released", held: &lock.Held{Target: "production", Holder: holder, Token: "48213", Waited: 0},
			rel: &lock.Released{Previous: &holder},
			want: []string{`lock "production" acquired by acme/web@main#812 after 0s (locks/lockctl-lock-production), fencing token 48213`,
				`lock "production" released`}},
		{name: "taken, handed over", held: &lock.Held{Target: "production", Holder: holder, Token: "48213"},
			rel:  &lock.Released{Previous: &holder, HandedTo: &record.Claim{Identity: api}},
			want: []string{`lock "production" acquired by acme/web@main#812`, `lock "production" released`, `lock "production" now held by acme/api@main#7`}},
		{name: "re-entered, left held", held: &lock.Held{Target: "production", Holder: holder, Token: "48213", Reentered: true},
			rel: &lock.Released{Left: true, Kept: &holder},
			want: []string{`lock "production" already held by acme/web@main#812 since 2026-12-05T07:00:00Z (locks/lockctl-lock-production), fencing token 48213; this run re-enters the hold and leaves it held`,
				`lock "production" still held by acme/web@main#812: it was held before this run`}},
		{name: "re-entered, the hold ended meanwhile", held: &lock.Held{Target: "production", Holder: holder, Token: "48213", Reentered: true},
			rel:  &lock.Released{Left: true},
			want: []string{`this run re-enters the hold`, `lock "production" left as it was: the hold this run re-entered has ended`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, buf, clk := termtest.Console(t, false, 200, nil)
			r := &Run{Console: c, Clock: clk}
			r.Acquired(tt.held, "locks/lockctl-lock-production")
			r.Released(tt.held.Target, tt.rel)
			out := buf.String()
			lines := strings.Split(strings.TrimSpace(out), "\n")
			require.Len(t, lines, len(tt.want), out)
			for i, w := range tt.want {
				assert.Contains(t, lines[i], w, "line %d", i)
			}
		})
	}
}
