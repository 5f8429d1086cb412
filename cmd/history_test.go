package cmd

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/lock/record"
)

func TestNewHistoryCmd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    historyOptions
		wantErr string
	}{
		{name: "table", args: []string{"staging"}, want: historyOptions{Target: "staging"}},
		{name: "json", args: []string{"staging", "-o", "json"}, want: historyOptions{Target: "staging", PrintFlags: printers.PrintFlags{Output: "json"}}},
		{name: "no namespace", args: nil, wantErr: "accepts 1 arg(s), received 0"},
		{name: "bad output", args: []string{"staging", "-o", "wide"}, wantErr: `invalid --output "wide": this command has no wide table`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			got, err := parseArgsIn(t, te, []string{"history"}, tt.args, newHistoryCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *historyOptions) { o.f, o.out, o.Forms = nil, nil, printers.Forms{} })
		})
	}
}

func TestRunHistory(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		holds      bool // build 41 held, broken with --force, then build 43 held and released, then build 44 holding
		golden     string
		wantErrOut string
	}{
		{name: "never taken", args: []string{"history", "staging"}, wantErrOut: "10:00:00 lock \"staging\" has no history (default/lockctl-lock-staging)\n"},
		{name: "table", args: []string{"history", "staging"}, holds: true, golden: "history/table.golden"},
		{name: "yaml", args: []string{"history", "staging", "-o", "yaml"}, holds: true, golden: "history/history.yaml.golden"},
		{name: "json", args: []string{"history", "staging", "-o", "json"}, holds: true, golden: "history/history.json.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			if tt.holds {
				_, err := te.cs.CoreV1().ConfigMaps("default").Create(t.Context(), heldLock(t, "41"), metav1.CreateOptions{})
				require.NoError(t, err)
				te.clock.Step(10 * time.Minute)
				require.NoError(t, te.run("release", "staging", "--force", "--owner", "ops", "--repo", "console", "--branch", "main", "--build", "1"))
				require.NoError(t, te.run("acquire", "staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "43"))
				te.clock.Step(5 * time.Minute)
				require.NoError(t, te.run("release", "staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "43"))
				require.NoError(t, te.run("acquire", "staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "44"))
				te.clock.Step(time.Minute)
				te.out.Reset()
				te.errOut.Reset()
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

// TestRunHistoryWatchShowsAHandOverOnce: history -w shows the waiter
// handed the lock as holding once, not again when it confirms (which
// moves its since), then the end of its hold and the next holder.
func TestRunHistoryWatchShowsAHandOverOnce(t *testing.T) {
	t.Parallel()
	web := record.Claim{Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "42"},
		ClaimID: "s42", Since: metav1.NewMicroTime(testNow.Add(-time.Minute)), Expires: ptrMicro(testNow.Add(time.Hour))}
	api := record.Claim{Identity: record.Identity{Owner: "acme", Repo: "api", Branch: "main", Build: "5"},
		ClaimID: "w", Since: metav1.NewMicroTime(testNow.Add(-30 * time.Second)), Expires: ptrMicro(testNow.Add(time.Hour))}
	webEnded := record.HistoryEntry{Identity: web.Identity, Since: web.Since, Until: metav1.NewMicroTime(testNow), Ended: record.EndHandedOver, By: api.Identity.String()}
	version := func(rv string, holder record.Claim, history ...record.HistoryEntry) *corev1.ConfigMap {
		cm := lockConfigMap(t, "staging", holder)
		cm.ResourceVersion = rv
		rec := record.Record{Target: "staging", Policy: record.PolicyNewest, Holder: holder, Updated: metav1.NewMicroTime(testNow), History: history}
		raw, err := json.Marshal(rec)
		require.NoError(t, err)
		cm.Annotations[record.RecordAnnotation] = string(raw)
		return cm
	}

	te := newTestEnv(t)
	first := lockConfigMap(t, "staging", web, api)
	first.ResourceVersion = "1"
	_, err := te.cs.CoreV1().ConfigMaps("default").Create(t.Context(), first, metav1.CreateOptions{})
	require.NoError(t, err)
	w := startWatch(t, te, "history", "staging", "-w")
	fw, out := w.fw, w.out

	handed := api
	handed.HandedOver, handed.Since = true, metav1.NewMicroTime(testNow)
	fw.Modify(version("2", handed, webEnded))
	confirmed := api
	confirmed.Since = metav1.NewMicroTime(testNow.Add(time.Second))
	fw.Modify(version("3", confirmed, webEnded))
	db := record.Claim{Identity: record.Identity{Owner: "acme", Repo: "db", Branch: "main", Build: "3"},
		ClaimID: "d", Since: metav1.NewMicroTime(testNow.Add(2 * time.Second)), Expires: ptrMicro(testNow.Add(time.Hour)), HandedOver: true}
	apiEnded := record.HistoryEntry{Identity: api.Identity, Since: confirmed.Since, Until: db.Since, Ended: record.EndHandedOver, By: db.Identity.String()}
	fw.Modify(version("4", db, webEnded, apiEnded))
	for strings.Count(out.String(), "\n") < 6 {
		select {
		case <-out.writes:
		case <-time.After(10 * time.Second):
			require.Failf(t, "history -w printed no more rows", "so far:\n%s", out.String())
		}
	}
	require.ErrorIs(t, w.stop(), context.Canceled, "-w ends when interrupted")
	var ended []string
	for _, l := range strings.Split(strings.TrimSpace(out.String()), "\n")[1:] {
		f := strings.Fields(l)
		ended = append(ended, f[0]+" "+f[len(f)-1])
	}
	assert.Equal(t, []string{"acme/web@main#42 holding", "acme/web@main#42 acme/api@main#5", "acme/api@main#5 holding",
		"acme/api@main#5 acme/db@main#3", "acme/db@main#3 holding"}, ended,
		"one row per holder and per hold that ended:\n%s", out.String())
}
