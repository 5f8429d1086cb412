package cmd

import (
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/cobra/doc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// commandReferenceDir holds the command reference, one page per command,
// generated from the command tree by cobra's doc package (as kubectl's and
// gh's reference pages are).
var commandReferenceDir = filepath.Join("..", "docs", "commands")

// TestCommandReferenceGolden keeps docs/commands what the commands
// generate: make docs (go test ./cmd -run TestCommandReferenceGolden
// -update) rewrites it. The pages carry no date, so the same commands give
// the same bytes. NOTE: only this test imports cobra/doc (and go-md2man
// with it); the lockctl binary links neither.
func TestCommandReferenceGolden(t *testing.T) {
	t.Parallel()
	root := newRootCmd(newTestEnv(t).f)
	disableAutoGenTag(root)
	gen := t.TempDir()
	require.NoError(t, doc.GenMarkdownTree(root, gen), "generate the command reference")
	want := markdownFiles(t, gen)

	if *update {
		require.NoError(t, os.RemoveAll(commandReferenceDir))
		require.NoError(t, os.MkdirAll(commandReferenceDir, 0o755))
		for _, name := range want {
			b, err := os.ReadFile(filepath.Join(gen, name))
			require.NoError(t, err)
			require.NoError(t, os.WriteFile(filepath.Join(commandReferenceDir, name), b, 0o644))
		}
		return
	}
	assert.Equal(t, want, markdownFiles(t, commandReferenceDir),
		"docs/commands has a page per command and no other: run make docs")
	for _, name := range want {
		generated, err := os.ReadFile(filepath.Join(gen, name))
		require.NoError(t, err)
		checkedIn, err := os.ReadFile(filepath.Join(commandReferenceDir, name))
		if !assert.NoError(t, err, "docs/commands/%s is missing: run make docs", name) {
			continue
		}
		assert.Equal(t, string(generated), string(checkedIn),
			"docs/commands/%s is not what the commands generate: run make docs", name)
	}
}

// disableAutoGenTag leaves out the "Auto generated … on DATE" line of every
// page, which would change each day.
func disableAutoGenTag(c *cobra.Command) {
	c.DisableAutoGenTag = true
	for _, sub := range c.Commands() {
		disableAutoGenTag(sub)
	}
}

// markdownFiles lists the .md files in dir, sorted; none when dir does not
// exist.
func markdownFiles(t *testing.T, dir string) []string {
	t.Helper()
	matches, err := filepath.Glob(filepath.Join(dir, "*.md"))
	require.NoError(t, err)
	names := []string{}
	for _, m := range matches {
		names = append(names, filepath.Base(m))
	}
	sort.Strings(names)
	return names
}
