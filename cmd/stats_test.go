package cmd

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/lock/record"
)

func TestNewStatsCmd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    statsOptions
		wantErr string
	}{
		{name: "every lock", args: nil, want: statsOptions{StatsFlags: cli.StatsFlags{Targets: []string{}}}},
		{name: "two, a week, json", args: []string{"staging", "prod", "--since", "168h", "-o", "json"},
			want: statsOptions{StatsFlags: cli.StatsFlags{Targets: []string{"staging", "prod"}, Since: 168 * time.Hour}, PrintFlags: printers.PrintFlags{Output: "json"}}},
		{name: "negative window", args: []string{"--since", "-1h"}, wantErr: "--since must not be negative, got -1h0m0s"},
		{name: "bad namespace", args: []string{"Staging"}, wantErr: `invalid namespace "Staging"`},
		{name: "named twice", args: []string{"staging", "staging"}, wantErr: `namespace "staging" is named twice`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			got, err := parseArgsIn(t, te, []string{"stats"}, tt.args, newStatsCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *statsOptions) { o.f, o.out, o.Forms = nil, nil, printers.Forms{} })
		})
	}
}

func TestRunStats(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		args       []string
		holds      bool // statsLock
		golden     string
		wantErrOut string
	}{
		{name: "no lock at all", args: []string{"stats"}, wantErrOut: "10:00:00 no locks in namespace \"default\"\n"},
		{name: "never taken", args: []string{"stats", "staging"}, wantErrOut: "10:00:00 lock \"staging\" has no history (default/lockctl-lock-staging)\n"},
		{name: "table", args: []string{"stats"}, holds: true, golden: "stats/table.golden"},
		{name: "wide, the last 10 minutes", args: []string{"stats", "staging", "-o", "wide", "--since", "10m"}, holds: true, golden: "stats/wide.golden"},
		{name: "json", args: []string{"stats", "staging", "-o", "json"}, holds: true, golden: "stats/stats.json.golden"},
		{name: "yaml list", args: []string{"stats", "-o", "yaml"}, holds: true, golden: "stats/list.yaml.golden"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			if tt.holds {
				_, err := te.cs.CoreV1().ConfigMaps("default").Create(t.Context(), statsLock(t), metav1.CreateOptions{})
				require.NoError(t, err)
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

// statsLock is a lock held by build 44 for a minute, after four holds: 40
// three hours ago (expired, its wait not recorded), 41 (10 minutes, broken
// with --force), 42 (5 minutes, handed over) and 43 (4 minutes, released,
// after waiting 4 minutes for 42).
func statsLock(t *testing.T) *corev1.ConfigMap {
	t.Helper()
	at := func(d time.Duration) metav1.MicroTime { return metav1.NewMicroTime(testNow.Add(d)) }
	id := func(build string) record.Identity {
		return record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: build}
	}
	entry := func(build string, since, until, queued time.Duration, how record.Ending) record.HistoryEntry {
		e := record.HistoryEntry{Identity: id(build), Since: at(since), Until: at(until), Ended: how, Queued: ptrMicro(testNow.Add(queued))}
		return e
	}
	old := entry("40", -3*time.Hour, -150*time.Minute, 0, record.EndExpired)
	old.Queued = nil
	holder := record.Claim{Identity: id("44"), ClaimID: "s44", Since: at(-time.Minute), Queued: ptrMicro(testNow.Add(-time.Minute)), Expires: ptrMicro(testNow.Add(time.Hour))}
	rec := record.Record{Target: "staging", Policy: record.PolicyNewest, Holder: holder, Updated: holder.Since, History: []record.HistoryEntry{
		old,
		entry("41", -20*time.Minute, -10*time.Minute, -20*time.Minute, record.EndBroken),
		entry("42", -10*time.Minute, -5*time.Minute, -10*time.Minute, record.EndHandedOver),
		entry("43", -5*time.Minute, -time.Minute, -9*time.Minute, record.EndReleased),
	}}
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	cm := lockConfigMap(t, "staging", holder)
	cm.Annotations[record.RecordAnnotation] = string(raw)
	return cm
}
