package e2e

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// timestamped matches the "HH:MM:SS " UTC prefix of every stderr line
// outside a terminal.
var timestamped = regexp.MustCompile(`^\d\d:\d\d:\d\d `)

// TestIntegrationCLIUsageErrors: a mistyped command, resource or flag value
// exits 2 with one timestamped line that says what to do, and no help text.
func TestIntegrationCLIUsageErrors(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "misspelt command", args: []string{"aquire", "staging"}, wantErr: `error: unknown command "aquire" for "lockctl"; did you mean "acquire"?`}, //nolint:misspell // the typo is the input
		{name: "misspelt resource", args: []string{"get", "jbos"}, wantErr: `error: unknown resource "jbos" for "lockctl get": did you mean "jobs"?`},
		{name: "locks are status", args: []string{"get", "locks"}, wantErr: `error: unknown resource "locks" for "lockctl get": locks are shown by "lockctl status"`},
		{name: "verbosity not a number", args: []string{"status", "-v", "abc"}, wantErr: `error: invalid argument "abc" for "-v, --verbosity" flag: want an integer`},
		{name: "unknown context", args: []string{"status", "--context", "nosuch"},
			wantErr: `error: context "nosuch" not found in the kubeconfig (available: ` + testenv.ContextName + `)`},
		{name: "revival limit 0", args: []string{"reconcile", "--once", "--revival-limit", "0"},
			wantErr: "error: --revival-limit must not be 0: give how often a lost pod is recreated, or a negative number for no limit"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			o := c.run(t, tt.args...)
			assert.Equal(t, 2, o.code, "exit status of %v: %s", tt.args, o.stderr)
			assert.Empty(t, o.stdout, "no help on stdout for %v", tt.args)
			lines := strings.Split(strings.TrimRight(o.stderr, "\n"), "\n")
			require.NotEmpty(t, lines)
			assert.Equal(t, tt.wantErr, timestamped.ReplaceAllString(lines[0], ""), "first stderr line of %v", tt.args)
			for _, l := range lines {
				assert.Regexp(t, timestamped, l, "every stderr line of %v is timestamped", tt.args)
			}
			assert.NotContains(t, o.stderr, "strconv", "args %v", tt.args)
		})
	}
}

// TestIntegrationCLIReconcileConfig: docs/configuration.md's config file works as
// pasted; a bad one, or a build cluster naming a context the kubeconfig
// does not have, exits 2 naming the key or the contexts there are.
func TestIntegrationCLIReconcileConfig(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	dir := t.TempDir()

	page, err := os.ReadFile(filepath.Join("..", "docs", "configuration.md"))
	require.NoError(t, err)
	_, rest, ok := strings.Cut(string(page), "cat > lockctl.yaml <<'EOF'\n")
	require.True(t, ok, "docs/configuration.md has the config example")
	example, _, ok := strings.Cut(rest, "\nEOF\n")
	require.True(t, ok)
	require.Contains(t, example, "default: "+testenv.ContextName, "the example names the local control plane's context")
	// NOTE: pods go to the test's own namespace, not "default", where the
	// pruning of the pass could meet other tests' pods.
	require.Contains(t, example, "\npodNamespace: default ")
	example = strings.Replace(example, "\npodNamespace: default ", "\npodNamespace: "+c.namespace+" ", 1)
	good := filepath.Join(dir, "lockctl.yaml")
	require.NoError(t, os.WriteFile(good, []byte(example+"\n"), 0o644))
	o := c.run(t, "reconcile", "--once", "--config", good)
	assert.Equal(t, 0, o.code, "the documented config works: %s", o.stderr)

	for _, tt := range []struct {
		name, doc, want string
	}{
		{name: "unknown key", doc: "timeouts: {pendng: 1m}\n", want: "timeouts.pendng: unknown key; valid keys here: unscheduled, pending, running"},
		{name: "wrong type", doc: "timeouts: {pending: 10}\n", want: "timeouts.pending: must be a duration such as 10m or 48h, not a number"},
		{name: "zero revival limit", doc: "revivalLimit: 0\n", want: "revivalLimit: must not be 0"},
	} {
		path := filepath.Join(dir, strings.ReplaceAll(tt.name, " ", "-")+".yaml")
		require.NoError(t, os.WriteFile(path, []byte(tt.doc), 0o644))
		o := c.run(t, "reconcile", "--once", "--config", path)
		assert.Equal(t, 2, o.code, "%s: %s", tt.name, o.stderr)
		assert.Contains(t, o.stderr, "config "+path+": "+tt.want, tt.name)
	}

	o = c.run(t, "reconcile", "--once", "--build-cluster", "gpu=no-such-context")
	assert.Equal(t, 2, o.code, "an unknown context is bad input: %s", o.stderr)
	// NOTE: reconcile logs in logfmt (full dates), which escapes quotes.
	assert.Regexp(t, `build cluster \\?"gpu\\?": context \\?"no-such-context\\?" not found in the kubeconfig \(available: `+
		regexp.QuoteMeta(testenv.ContextName)+`\)`, o.stderr)
	assert.Contains(t, o.stderr, "--build-cluster")
}
