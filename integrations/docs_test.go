package integrations_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// snippet is a fenced block of docs/ci.md preceded by
// <!-- snippet: PATH -->: an excerpt of the shipped file PATH.
var snippet = regexp.MustCompile("(?s)<!-- snippet: (\\S+) -->\n```[a-z]*\n(.*?)```")

// TestCIDocSnippets checks that every snippet of docs/ci.md is an excerpt
// of the file it names, as that file is shipped (its lines in a row, the
// same relative indentation; in a comment of the file or not), so the guide
// cannot drift from integrations/.
func TestCIDocSnippets(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "ci.md"))
	require.NoError(t, err)
	found := snippet.FindAllStringSubmatch(string(data), -1)
	require.GreaterOrEqual(t, len(found), 4, "docs/ci.md has snippets")
	for _, m := range found {
		file, block := m[1], dedent(strings.Split(strings.TrimRight(m[2], "\n"), "\n"))
		shipped, err := os.ReadFile(filepath.Join(repoRoot(), file))
		require.NoError(t, err, "docs/ci.md quotes %s", file)
		assert.True(t, excerpt(strings.Split(string(shipped), "\n"), block), "docs/ci.md quotes %s, which does not have:\n%s", file, strings.Join(block, "\n"))
	}
	// The check bites: a changed input is not an excerpt.
	shipped, err := os.ReadFile(filepath.Join(repoRoot(), "integrations", "github", "example-workflow.yml"))
	require.NoError(t, err)
	assert.False(t, excerpt(strings.Split(string(shipped), "\n"), []string{"- id: lock", "  uses: lockctl/lockctl/integrations/github@v0.2.0", "  with:", "    namespace: staging", "    timeout: 1h"}))
}

// TestDocsKrewInstall checks every `kubectl krew install` in the docs: it
// installs the manifest a release attaches, which `make krew-manifest`
// generates with the archives' real sums (TestKrewInstall has krew install
// from one), never plugins/lockctl.yaml, the template whose placeholder sums
// krew refuses.
func TestDocsKrewInstall(t *testing.T) {
	t.Parallel()
	mk, err := os.ReadFile(filepath.Join(repoRoot(), "Makefile"))
	require.NoError(t, err)
	gen := regexp.MustCompile(`go run ./hack/krew-manifest .* -o dist/(\S+)`).FindStringSubmatch(string(mk))
	require.NotNil(t, gen, "make krew-manifest writes a manifest under dist/")
	url := regexp.MustCompile(`^kubectl krew install --manifest-url=https://github\.com/lockctl/lockctl/releases/download/v\d+\.\d+\.\d+/` + regexp.QuoteMeta(gen[1]) + `$`)
	files, err := filepath.Glob(filepath.Join(repoRoot(), "docs", "*.md"))
	require.NoError(t, err)
	files = append(files, filepath.Join(repoRoot(), "README.md"), filepath.Join(repoRoot(), "plugins", "lockctl.yaml"))
	n := 0
	for _, f := range files {
		data, err := os.ReadFile(f)
		require.NoError(t, err)
		for _, line := range strings.Split(string(data), "\n") {
			line = strings.TrimSpace(strings.TrimLeft(strings.TrimSpace(line), "#"))
			if !strings.HasPrefix(line, "kubectl krew install") {
				continue
			}
			n++
			assert.Regexp(t, url, line, "%s: krew installs the manifest make krew-manifest generates (dist/%s), attached to the release", f, gen[1])
		}
	}
	assert.NotZero(t, n, "the docs say how to install with krew")
}

// excerpt reports whether block (dedented) is a run of lines of file,
// dedented, or of file's comment lines with their # taken off.
func excerpt(file, block []string) bool {
	uncommented := make([]string, len(file))
	for i, l := range file {
		if t := strings.TrimLeft(l, " \t"); strings.HasPrefix(t, "#") {
			uncommented[i] = strings.TrimPrefix(t, "#")
		}
	}
	for _, lines := range [][]string{file, uncommented} {
		for i := 0; i+len(block) <= len(lines); i++ {
			if slices.Equal(dedent(lines[i:i+len(block)]), block) {
				return true
			}
		}
	}
	return false
}

// dedent takes off the indentation lines share.
func dedent(lines []string) []string {
	indent := -1
	for _, l := range lines {
		if strings.TrimSpace(l) == "" {
			continue
		}
		if n := len(l) - len(strings.TrimLeft(l, " ")); indent < 0 || n < indent {
			indent = n
		}
	}
	out := make([]string, len(lines))
	for i, l := range lines {
		if len(l) >= indent && indent > 0 {
			l = l[indent:]
		}
		out[i] = strings.TrimRight(l, " ")
	}
	return out
}
