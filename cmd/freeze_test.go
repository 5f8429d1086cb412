package cmd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/cmd/internal/cli"
)

func TestNewFreezeCmd(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		want    freezeOptions
		wantErr string
	}{
		{
			name: "for a while",
			args: []string{"prod", "--for", "2h", "--reason", "release party"},
			want: freezeOptions{Target: "prod", EndFlags: cli.EndFlags{For: 2 * time.Hour}, Reason: "release party"},
		},
		{
			name: "until a time",
			args: []string{"prod", "--until", "2026-12-27T08:00:00Z", "--reason", "holidays", "-o", "yaml"},
			want: freezeOptions{Target: "prod", EndFlags: cli.EndFlags{Until: "2026-12-27T08:00:00Z"}, Reason: "holidays", Output: "yaml"},
		},
		{name: "no end", args: []string{"prod", "--reason", "x"}, wantErr: "say how long the freeze lasts with --for DURATION or --until TIME"},
		{name: "both ends", args: []string{"prod", "--for", "1h", "--until", "2026-12-27T08:00:00Z", "--reason", "x"}, wantErr: "give either --for or --until, not both"},
		{name: "negative for", args: []string{"prod", "--for", "-1h", "--reason", "x"}, wantErr: "--for must be positive, got -1h0m0s"},
		{name: "bad until", args: []string{"prod", "--until", "tomorrow", "--reason", "x"}, wantErr: `invalid --until "tomorrow": want an RFC 3339 time such as 2026-12-24T08:00:00Z`},
		{name: "no reason", args: []string{"prod", "--for", "1h"}, wantErr: "invalid --reason: the reason is empty: say why the namespace is frozen"},
		{name: "no namespace", args: []string{"--for", "1h", "--reason", "x"}, wantErr: "accepts 1 arg(s), received 0"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			got, err := parseArgsIn(t, te, []string{"freeze"}, tt.args, newFreezeCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *freezeOptions) { o.f = nil })
		})
	}
}

func TestRunFreeze(t *testing.T) {
	t.Parallel()
	te := newTestEnv(t)
	require.NoError(t, te.run("freeze", "prod", "--for", "2h", "--reason", "release party", "--owner", "alice", "--repo", "ops", "--branch", "main", "--build", "1"))
	assert.Contains(t, te.errOut.String(), "lock \"prod\" frozen until "+testNow.Add(2*time.Hour).UTC().Format(time.RFC3339)+" by alice/ops@main#1: \"release party\" (default/lockctl-lock-prod)\n")
	assert.Empty(t, te.out.String(), "stdout")

	te.errOut.Reset()
	require.NoError(t, te.run("status"))
	golden(t, "status/frozen.golden", te.out.String())

	te.errOut.Reset()
	require.NoError(t, te.run("unfreeze", "prod"))
	assert.Contains(t, te.errOut.String(), "lock \"prod\" unfrozen (was frozen until "+testNow.Add(2*time.Hour).UTC().Format(time.RFC3339)+" by alice/ops@main#1: \"release party\")\n")
	te.errOut.Reset()
	require.NoError(t, te.run("unfreeze", "prod"))
	assert.Contains(t, te.errOut.String(), "lock \"prod\" is not frozen; nothing to do (default/lockctl-lock-prod)\n")
}
