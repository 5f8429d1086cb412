package cmd

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		{name: "json", args: []string{"staging", "-o", "json"}, want: historyOptions{Target: "staging", Output: "json"}},
		{name: "no namespace", args: nil, wantErr: "accepts 1 arg(s), received 0"},
		{name: "bad output", args: []string{"staging", "-o", "wide"}, wantErr: `invalid --output "wide": this command has no wide table`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			got, err := parseArgsIn(t, te, []string{"history"}, tt.args, newHistoryCmd)
			assertParsed(t, got, err, tt.wantErr, tt.want, func(o *historyOptions) { o.f, o.out = nil, nil })
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
