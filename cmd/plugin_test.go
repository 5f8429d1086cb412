package cmd

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
)

// TestKubectlPlugin checks that lockctl started as kubectl-lockctl (kubectl
// runs it for `kubectl lockctl`) names itself that way in usage and hints.
func TestKubectlPlugin(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		executable string
		wantUsage  string
		wantHint   string
	}{
		{name: "plain", executable: "lockctl", wantUsage: "  lockctl acquire NAMESPACE [NAMESPACE...] [flags]", wantHint: "lockctl acquire"},
		{name: "kubectl plugin", executable: "kubectl-lockctl", wantUsage: "  kubectl lockctl acquire NAMESPACE [NAMESPACE...] [flags]", wantHint: "kubectl lockctl acquire"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			te.f.Executable = tt.executable
			require.NoError(t, te.run("acquire", "--help"))
			assert.Contains(t, te.out.String(), "Usage:\n"+tt.wantUsage+"\n")

			err := te.run("acquire", "--bogus")
			var flagErr *cmdutil.FlagError
			require.ErrorAs(t, err, &flagErr)
			assert.Equal(t, tt.wantHint, flagErr.Command, "the hint names the command as typed")
		})
	}
}
