package main

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The documents must stand on their own: a newcomer reading them inside the
// repository can follow every link, open every ADR they name and needs no
// tracker to understand why something was decided. These tests keep it so;
// they read files only and run under -short.

// adrDir holds the numbered decision records and their index.
const adrDir = "docs/adr"

// issueCitationExempt lists the documents still allowed to cite tracker
// numbers while their history is rewritten; the list may only shrink.
var issueCitationExempt = map[string]bool{}

var (
	// mdLink is an inline Markdown link or image, [text](target "title"),
	// and mdRefDef a reference definition, [label]: target.
	mdLink   = regexp.MustCompile(`!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+"[^"]*")?\s*\)`)
	mdRefDef = regexp.MustCompile(`(?m)^\s{0,3}\[[^\]]+\]:\s+<?(\S+?)>?(?:\s+.*)?$`)
	// codeSpan is inline code, whose brackets are not links.
	codeSpan = regexp.MustCompile("`[^`\n]*`")
	// adrRef is a reference to a decision record by number.
	adrRef = regexp.MustCompile(`\bADRs? (\d{4})\b`)
	// adrFile is a record's file name, NNNN-slug.md.
	adrFile = regexp.MustCompile(`^(\d{4})-[a-z0-9-]+\.md$`)
	// issueWords cites a tracker entry: the word and a number, as in
	// "issue", "issues #", "ticket" or "pull request" followed by digits.
	// A bare #NN is not matched: in this project it is a CI build number
	// (acme/web@main#41).
	issueWords = regexp.MustCompile(`(?i)\b(?:issues?|tickets?|pull requests?|PRs?)\s+#?\d+`)
)

// markdownFiles returns the repository's Markdown files, slash-separated
// and relative to the root, skipping build output and VCS data.
func markdownFiles(t *testing.T) []string {
	t.Helper()
	var files []string
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			switch d.Name() {
			case ".git", "_output", "node_modules", "vendor":
				return filepath.SkipDir
			}
			return nil
		}
		if strings.HasSuffix(path, ".md") {
			files = append(files, filepath.ToSlash(path))
		}
		return nil
	})
	require.NoError(t, err)
	require.NotEmpty(t, files)
	return files
}

// proseLines returns the lines of a Markdown file outside fenced code
// blocks, with inline code blanked, each with its line number.
func proseLines(t *testing.T, path string) map[int]string {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err, path)
	lines := map[int]string{}
	fence := ""
	for i, line := range strings.Split(string(b), "\n") {
		trimmed := strings.TrimSpace(line)
		if fence == "" && (strings.HasPrefix(trimmed, "```") || strings.HasPrefix(trimmed, "~~~")) {
			fence = trimmed[:3]
			continue
		}
		if fence != "" {
			if strings.HasPrefix(trimmed, fence) {
				fence = ""
			}
			continue
		}
		lines[i+1] = codeSpan.ReplaceAllString(line, "``")
	}
	return lines
}

// linkTargets returns the targets of the links on a line of prose.
func linkTargets(line string) []string {
	var out []string
	for _, m := range mdLink.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
	}
	for _, m := range mdRefDef.FindAllStringSubmatch(line, -1) {
		out = append(out, m[1])
	}
	return out
}

// isExternal reports whether a link target leaves the repository on
// purpose (a URL) or stays on the page (an anchor).
func isExternal(target string) bool {
	if strings.HasPrefix(target, "#") {
		return true
	}
	return regexp.MustCompile(`^[a-zA-Z][a-zA-Z0-9+.-]*:`).MatchString(target)
}

// TestDocLinksResolve: every relative link in a Markdown file names a file
// or folder that exists inside the repository.
func TestDocLinksResolve(t *testing.T) {
	t.Parallel()
	root, err := filepath.Abs(".")
	require.NoError(t, err)
	for _, path := range markdownFiles(t) {
		for n, line := range proseLines(t, path) {
			for _, target := range linkTargets(line) {
				if isExternal(target) {
					continue
				}
				rel := target
				if i := strings.IndexAny(rel, "#?"); i >= 0 {
					rel = rel[:i]
				}
				if rel == "" {
					continue
				}
				abs, err := filepath.Abs(filepath.Join(filepath.Dir(path), filepath.FromSlash(rel)))
				require.NoError(t, err)
				if !strings.HasPrefix(abs+string(filepath.Separator), root+string(filepath.Separator)) {
					t.Errorf("%s:%d: link %q leaves the repository", path, n, target)
					continue
				}
				if _, err := os.Stat(abs); err != nil {
					t.Errorf("%s:%d: link %q names nothing in the repository", path, n, target)
				}
			}
		}
	}
}

// adrNumbers returns the numbers of the records in docs/adr, in file order.
func adrNumbers(t *testing.T) []string {
	t.Helper()
	entries, err := os.ReadDir(adrDir)
	require.NoError(t, err)
	var nums []string
	seen := map[string]string{}
	for _, e := range entries {
		if e.Name() == "README.md" {
			continue
		}
		m := adrFile.FindStringSubmatch(e.Name())
		if !assert.NotNil(t, m, "%s/%s is not named NNNN-slug.md", adrDir, e.Name()) {
			continue
		}
		assert.Empty(t, seen[m[1]], "ADR %s has two records: %s and %s", m[1], seen[m[1]], e.Name())
		seen[m[1]] = e.Name()
		nums = append(nums, m[1])
	}
	require.NotEmpty(t, nums)
	return nums
}

// TestADRReferencesExist: every "ADR NNNN" in the Markdown files and the
// Go sources names a record that exists in docs/adr.
func TestADRReferencesExist(t *testing.T) {
	t.Parallel()
	exists := map[string]bool{}
	for _, n := range adrNumbers(t) {
		exists[n] = true
	}
	files := markdownFiles(t)
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "_output") {
			return filepath.SkipDir
		}
		if !d.IsDir() && strings.HasSuffix(path, ".go") {
			files = append(files, filepath.ToSlash(path))
		}
		return nil
	})
	require.NoError(t, err)
	for _, path := range files {
		b, err := os.ReadFile(path)
		require.NoError(t, err, path)
		for i, line := range strings.Split(string(b), "\n") {
			for _, m := range adrRef.FindAllStringSubmatch(line, -1) {
				assert.True(t, exists[m[1]], "%s:%d: ADR %s does not exist in %s", path, i+1, m[1], adrDir)
			}
		}
	}
}

// TestADRIndexListsEveryRecordInOrder: docs/adr/README.md has one row per
// record, in number order, linking to the record's file.
func TestADRIndexListsEveryRecordInOrder(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir(adrDir)
	require.NoError(t, err)
	var want []string
	for _, e := range entries {
		if adrFile.MatchString(e.Name()) {
			want = append(want, e.Name())
		}
	}
	sort.Strings(want)
	b, err := os.ReadFile(filepath.Join(adrDir, "README.md"))
	require.NoError(t, err)
	row := regexp.MustCompile(`(?m)^\| (\d{4}) \| \[[^\n]*?\]\((\d{4}-[a-z0-9-]+\.md)\)`)
	var got []string
	for _, m := range row.FindAllStringSubmatch(string(b), -1) {
		assert.True(t, strings.HasPrefix(m[2], m[1]+"-"), "index row %s links to %s", m[1], m[2])
		got = append(got, m[2])
	}
	assert.Equal(t, want, got, "the index lists every record once, in number order")
}

// TestDocsCiteNoIssueNumbers: no document, and no comment in the Go
// sources, cites a tracker entry by number; a decision says what was
// decided and why in the repository itself.
func TestDocsCiteNoIssueNumbers(t *testing.T) {
	t.Parallel()
	for _, path := range markdownFiles(t) {
		if issueCitationExempt[path] {
			continue
		}
		for n, line := range proseLines(t, path) {
			if m := issueWords.FindString(line); m != "" {
				t.Errorf("%s:%d: cites %q", path, n, m)
			}
		}
	}
	err := filepath.WalkDir(".", func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == ".git" || d.Name() == "_output" || d.Name() == "testdata") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for i, line := range strings.Split(string(b), "\n") {
			c := strings.Index(line, "//")
			if c < 0 {
				continue
			}
			if m := issueWords.FindString(line[c:]); m != "" {
				t.Errorf("%s:%d: comment cites %q", path, i+1, m)
			}
		}
		return nil
	})
	require.NoError(t, err)
}

// labNotes find what belongs in git, not in a decision: a commit hash of 7
// to 40 hex digits (in backticks or standing alone), a time of day, a
// branch named as such.
var labNotes = regexp.MustCompile("(^|[^0-9a-zA-Z/.-])[0-9a-f]{7,40}([^0-9a-zA-Z]|$)|[0-9]{1,2}:[0-9]{2}(:[0-9]{2})? ?UTC|T[0-9]{2}:[0-9]{2}:[0-9]{2}|on branch `")

// TestADRsCarryNoLabNotes: a decision record states context, decision and
// consequences; commit hashes, branch names and times stay in git.
func TestADRsCarryNoLabNotes(t *testing.T) {
	t.Parallel()
	paths, err := filepath.Glob("docs/adr/[0-9]*.md")
	require.NoError(t, err)
	require.NotEmpty(t, paths)
	for _, path := range paths {
		b, err := os.ReadFile(path)
		require.NoError(t, err)
		for n, line := range strings.Split(string(b), "\n") {
			if m := labNotes.FindString(line); m != "" {
				t.Errorf("%s:%d: %q belongs in git, not in the record", path, n+1, strings.TrimSpace(m))
			}
		}
	}
}

// TestDocsCheckersCatch: the patterns above catch what they are for and
// leave alone what looks like it.
func TestDocsCheckersCatch(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"issue" + " 23 asks", "Issue" + " 21 §3:", "(issues" + " #7, #8)", "pull request" + " 4"} {
		assert.True(t, issueWords.MatchString(s), "cites: %q", s)
	}
	for _, s := range []string{"held by acme/web@main#41", "the issuer", "ADR 0063", "two pull requests, 20 times", "(#41: the CI build number"} {
		assert.False(t, issueWords.MatchString(s), "cites nothing: %q", s)
	}
	assert.Equal(t, []string{"a.md", "../b/c.md#x", "https://example.com"},
		linkTargets(`[a](a.md) and ![b](../b/c.md#x "t") and [c](https://example.com)`))
	assert.Equal(t, []string{"d.md"}, linkTargets(`[d]: d.md`))
	assert.Empty(t, linkTargets("``"), "code is not a link")
	assert.True(t, isExternal("mailto:x@example.com"))
	assert.True(t, isExternal("#anchor"))
	assert.False(t, isExternal("docs/adr/README.md"))
	assert.Equal(t, []string{"0063"}, adrRef.FindStringSubmatch("see ADR 0063.")[1:])
}

// TestDocsIndexListsEveryGuide: docs/README.md, the index of the
// documentation, links every page in docs/.
func TestDocsIndexListsEveryGuide(t *testing.T) {
	t.Parallel()
	entries, err := os.ReadDir("docs")
	require.NoError(t, err)
	linked := map[string]bool{}
	for _, line := range proseLines(t, "docs/README.md") {
		for _, target := range linkTargets(line) {
			linked[target] = true
		}
	}
	for _, e := range entries {
		if e.IsDir() || e.Name() == "README.md" || !strings.HasSuffix(e.Name(), ".md") {
			continue
		}
		assert.True(t, linked[e.Name()], "docs/README.md does not list docs/%s", e.Name())
	}
}

// TestBenchmarksPageIsOneCurrentPicture: docs/benchmarks.md reads as one
// document, the current figures and their method, history kept in
// docs/benchmarks-history.md: one "Left open" and one "Knobs" section,
// those two last (nothing dated after the end), no heading dated, and no
// table broken by a blank line.
func TestBenchmarksPageIsOneCurrentPicture(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("docs/benchmarks.md")
	require.NoError(t, err)
	assert.Empty(t, benchmarksPageProblems(string(b)))
}

// datedHeading finds a date in a heading.
var datedHeading = regexp.MustCompile(`[0-9]{4}-[0-9]{2}-[0-9]{2}`)

// benchmarksPageProblems returns what keeps a figures page from reading as
// one current picture (TestBenchmarksPageIsOneCurrentPicture), one line
// each; fenced code is not read.
func benchmarksPageProblems(page string) []string {
	var (
		problems []string
		headings []string // "## Knobs", in order
		fenced   bool
		prev     string // the line before, outside fences
		blankIn  bool   // a blank line right after a table row
	)
	for n, line := range strings.Split(page, "\n") {
		if strings.HasPrefix(line, "```") {
			fenced = !fenced
			continue
		}
		if fenced {
			continue
		}
		row := strings.HasPrefix(strings.TrimSpace(line), "|")
		if row && blankIn {
			problems = append(problems, fmt.Sprintf("line %d: a table broken by a blank line", n+1))
		}
		blankIn = strings.TrimSpace(line) == "" && (blankIn || strings.HasPrefix(strings.TrimSpace(prev), "|"))
		prev = line
		if strings.HasPrefix(line, "#") {
			headings = append(headings, line)
			if datedHeading.MatchString(line) {
				problems = append(problems, fmt.Sprintf("line %d: a dated heading %q: a run's date goes in its text, earlier runs in benchmarks-history.md", n+1, line))
			}
		}
	}
	count := func(title string) (n int) {
		for _, h := range headings {
			if strings.HasPrefix(strings.TrimLeft(h, "# "), title) {
				n++
			}
		}
		return n
	}
	for _, title := range []string{"Left open", "Knobs"} {
		if n := count(title); n != 1 {
			problems = append(problems, fmt.Sprintf("%d headings %q: one section says it once", n, title))
		}
	}
	if k := len(headings); k < 2 || headings[k-2] != "## Left open" || headings[k-1] != "## Knobs" {
		problems = append(problems, `the page must end with "## Left open" then "## Knobs": nothing dated after the end`)
	}
	return problems
}

// TestBenchmarksPageProblemsCatch: the checker finds each problem and
// passes a page without them.
func TestBenchmarksPageProblemsCatch(t *testing.T) {
	t.Parallel()
	good := "# B\n\n## Current figures\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n```sh\n## Knobs in code\n```\n\n## Left open\n\n- x\n\n## Knobs\n\n| k | d |\n|---|---|\n| K | 1 |\n"
	assert.Empty(t, benchmarksPageProblems(good))
	for name, page := range map[string]string{
		"broken table":    strings.Replace(good, "| 1 | 2 |", "\n| 1 | 2 |", 1),
		"two Left open":   strings.Replace(good, "## Current figures", "## Current figures\n\n### Left open at scale", 1),
		"two Knobs":       strings.Replace(good, "## Left open", "### Knobs of the scale benchmarks\n\n## Left open", 1),
		"dated after end": good + "\n## The replay (2026-12-07)\n",
	} {
		assert.NotEmpty(t, benchmarksPageProblems(page), name)
	}
}
