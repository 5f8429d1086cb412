package cmd

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestRunEmptyListsAreLists: the reading commands' -o json of nothing is
// a List whose items are [], never null, and no list in what they print
// is null: a script reading `.items | length` must not fail on a namespace
// where nothing happened yet.
func TestRunEmptyListsAreLists(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"status", "-o", "json"},
		{"status", "-A", "-o", "json"},
		{"get", "jobs", "-o", "json"},
		{"freeze-windows", "list", "-o", "json"},
		{"history", "staging", "-o", "json"},
		{"status", "staging", "-o", "json"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			te := newTestEnv(t)
			require.NoError(t, te.run(args...), te.errOut.String())
			assert.NotContains(t, te.out.String(), "null", "%v printed:\n%s", args, te.out.String())
		})
	}
}
