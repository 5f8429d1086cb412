package cmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
)

// TestRunUsageErrors: usage errors exit 2 everywhere, with a message that
// says what to do and no Go parser text.
func TestRunUsageErrors(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		wantErr string
	}{
		{name: "unknown command, with a suggestion", args: []string{"aquire"}, wantErr: `unknown command "aquire" for "lockctl"; did you mean "acquire"?`}, //nolint:misspell // the typo is the input
		{name: "unknown command", args: []string{"frobnicate"}, wantErr: `unknown command "frobnicate" for "lockctl"`},
		{name: "unknown resource, with a suggestion", args: []string{"get", "jbos"}, wantErr: `unknown resource "jbos" for "lockctl get": did you mean "jobs"?`},
		{name: "locks are status", args: []string{"get", "locks"}, wantErr: `unknown resource "locks" for "lockctl get": locks are shown by "lockctl status"`},
		{name: "unknown resource", args: []string{"get", "deployments"}, wantErr: `unknown resource "deployments" for "lockctl get": use jobs or clusters`},
		{name: "no resource", args: []string{"get"}, wantErr: "name a resource to get: jobs or clusters"},
		{name: "verbosity not a number", args: []string{"status", "-v", "abc"}, wantErr: `invalid argument "abc" for "-v, --verbosity" flag: want an integer`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			err := te.run(tt.args...)
			require.Error(t, err, "args %v", tt.args)
			assert.Equal(t, tt.wantErr, err.Error(), "args %v", tt.args)
			assert.NotContains(t, err.Error(), "strconv", "args %v", tt.args)
			assert.Equal(t, cmdutil.CodeUsage, cmdutil.ExitCode(err), "args %v exit 2", tt.args)
			assert.Empty(t, te.out.String(), "no help on stdout for %v", tt.args)
		})
	}
}
