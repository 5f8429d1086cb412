package progress

import (
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/cmd/internal/cli/term/termtest"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

var testNow = termtest.Now

func TestWaitProgress(t *testing.T) {
	t.Parallel()
	pr := lock.Progress{
		Target:      "staging",
		Holder:      record.Claim{Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "41"}, Since: metav1.NewMicroTime(testNow.Add(-time.Minute))},
		HolderAlive: true,
		Position:    1,
		Started:     testNow,
	}
	tests := []struct {
		name     string
		terminal bool
		env      map[string]string
		check    func(t *testing.T, out string)
	}{
		{
			name: "plain: a line on each change and every 30s",
			check: func(t *testing.T, out string) {
				assert.Equal(t, "10:00:00 waiting for lock \"staging\": held by acme/web@main#41 for 1m; queue position 1; waited 0s\n"+
					"10:00:30 waiting for lock \"staging\": held by acme/web@main#41 for 1m30s; queue position 1; waited 30s\n", out)
			},
		},
		{
			name: "json: the wait's fields",
			env:  map[string]string{"JX_LOG_FORMAT": "json"},
			check: func(t *testing.T, out string) {
				lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
				require.Len(t, lines, 2)
				var m map[string]any
				require.NoError(t, json.Unmarshal([]byte(lines[1]), &m))
				assert.Equal(t, map[string]any{
					"level": "info", "time": "2026-12-02T10:00:30Z",
					"msg":  `waiting for lock "staging": held by acme/web@main#41 for 1m30s; queue position 1; waited 30s`,
					"lock": "staging", "holder": "acme/web@main#41", "held_for": "1m30s", "stale": false, "position": float64(1), "waited": "30s",
				}, m)
			},
		},
		{
			name:     "terminal: the live line in the form that fits 40 columns, the holder kept",
			terminal: true,
			check: func(t *testing.T, out string) {
				live := term.ClearLine + `"staging": held by acme/web@main#41`
				assert.Equal(t, strings.Repeat(live, 31)+term.ClearLine, out, "drawn at once and every second, then cleared")
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, buf, clk := termtest.Console(t, tt.terminal, 40, tt.env)
			p := NewWait(c, WaitOptions{Clock: clk})
			p.Update(pr)
			for i := 0; i < 30; i++ {
				require.Eventually(t, clk.HasWaiters, 5*time.Second, time.Millisecond)
				before := len(buf.String())
				clk.Step(time.Second)
				if tt.terminal || i == 29 {
					require.Eventually(t, func() bool { return len(buf.String()) > before }, 5*time.Second, time.Millisecond, "tick %d shows", i)
				}
			}
			p.Finish()
			tt.check(t, buf.String())
		})
	}
}

// TestWaitLiveLineForms: the live line's forms, longest first; the
// console shows the first that fits the terminal. The holder is in every
// form, and comes before the queue and the time waited.
func TestWaitLiveLineForms(t *testing.T) {
	t.Parallel()
	web := record.Claim{Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "41"}, Since: metav1.NewMicroTime(testNow.Add(-time.Minute))}
	tests := []struct {
		name string
		pr   lock.Progress
		want []string
	}{
		{
			name: "held",
			pr:   lock.Progress{Target: "staging", Holder: web, HolderAlive: true, Position: 2, Started: testNow.Add(-30 * time.Second)},
			want: []string{
				`waiting for lock "staging": held by acme/web@main#41 for 1m; queue position 2; waited 30s`,
				`"staging": held by acme/web@main#41 for 1m; #2 in queue; waited 30s`,
				`"staging": held by acme/web@main#41 for 1m`,
				`"staging": held by acme/web@main#41`,
			},
		},
		{
			name: "held, with an estimate from the history",
			pr: lock.Progress{Target: "production", Holder: web, HolderAlive: true, Position: 3, Started: testNow.Add(-30 * time.Second),
				Ahead: []record.Claim{{Identity: record.Identity{Owner: "acme", Repo: "api", Branch: "main", Build: "7"}}, {Identity: record.Identity{Owner: "acme", Repo: "db", Branch: "main", Build: "3"}}},
				Wait:  &record.EstimateInput{Target: "production", History: regularHolds(4*time.Minute, 20), Ahead: 2, HolderSince: &web.Since.Time}},
			want: []string{
				`waiting for lock "production": held by acme/web@main#41 for 1m; queue position 3 (after acme/api@main#7, acme/db@main#3); about 11 min (median hold 4m over the last 20); waited 30s`,
				`"production": held by acme/web@main#41 for 1m; #3 in queue, about 11 min; waited 30s`,
				`"production": held by acme/web@main#41 for 1m`,
				`"production": held by acme/web@main#41`,
			},
		},
		{
			name: "stale holder",
			pr:   lock.Progress{Target: "staging", Holder: web, Position: 1, Started: testNow},
			want: []string{
				`waiting for lock "staging": held by acme/web@main#41 for 1m, stale; queue position 1; waited 0s`,
				`"staging": held by acme/web@main#41 for 1m, stale; #1 in queue; waited 0s`,
				`"staging": held by acme/web@main#41 for 1m, stale`,
				`"staging": held by acme/web@main#41, stale`,
			},
		},
		{
			name: "not held",
			pr:   lock.Progress{Target: "staging", Position: 1, Started: testNow},
			want: []string{
				`waiting for lock "staging": not held; queue position 1; waited 0s`,
				`"staging": not held; #1 in queue; waited 0s`,
				`"staging": not held`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			p := &Wait{last: &tt.pr}
			assert.Equal(t, tt.want, strings.Split(p.line(testNow), "\n"))
		})
	}
}

// TestDescribeWaitCancelRequested: the waiting line says when the holder
// was asked to stop (cancel-in-progress), and by whom.
func TestDescribeWaitCancelRequested(t *testing.T) {
	t.Parallel()
	newer := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "42"}
	pr := lock.Progress{
		Target: "staging",
		Holder: record.Claim{
			Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "41"}, Since: metav1.NewMicroTime(testNow.Add(-time.Minute)),
			CancelRequest: &record.CancelRequest{Identity: newer, ClaimID: "s42"},
		},
		HolderAlive: true,
		Position:    1,
		Started:     testNow,
	}
	assert.Equal(t, `waiting for lock "staging": held by acme/web@main#41 for 1m, asked to stop by acme/web@main#42 (cancel-in-progress); queue position 1; waited 0s`,
		describeWait(pr, testNow))
	assert.Equal(t, "acme/web@main#42", waitFields(pr, testNow)["stop_asked_by"])
}

// regularHolds is a history of n holds of d each, back to back, ending an
// hour before testNow.
func regularHolds(d time.Duration, n int) []record.HistoryEntry {
	out := make([]record.HistoryEntry, n)
	start := testNow.Add(-time.Hour - time.Duration(n)*d)
	for i := range out {
		out[i] = record.HistoryEntry{Since: metav1.NewMicroTime(start.Add(time.Duration(i) * d)), Until: metav1.NewMicroTime(start.Add(time.Duration(i+1) * d)), Ended: record.EndHandedOver}
	}
	return out
}

// TestWaitFieldsEstimate: the structured wait has the estimate and its
// basis; without history it has neither.
func TestWaitFieldsEstimate(t *testing.T) {
	t.Parallel()
	pr := lock.Progress{Target: "production", Position: 2, Started: testNow,
		Wait: &record.EstimateInput{Target: "production", History: regularHolds(2*time.Minute, 5), Ahead: 1}}
	f := waitFields(pr, testNow)
	assert.Equal(t, "about 2 min", f["estimated_wait"])
	assert.Equal(t, "median hold 2m over the last 5", f["basis"])
	pr.Wait.History = nil
	assert.NotContains(t, waitFields(pr, testNow), "estimated_wait")
}
