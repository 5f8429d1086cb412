package identity

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestGitCheckout(t *testing.T) {
	t.Parallel()
	write := func(t *testing.T, path, content string) {
		t.Helper()
		require.NoError(t, os.MkdirAll(filepath.Dir(path), 0o755))
		require.NoError(t, os.WriteFile(path, []byte(content), 0o644))
	}
	tests := []struct {
		name       string
		files      map[string]string
		dir        string
		wantRepo   string
		wantBranch string
	}{
		{name: "no checkout", files: map[string]string{"x/readme": ""}, dir: "x"},
		{
			name: "origin and branch, from a subdirectory",
			files: map[string]string{
				"web/.git/HEAD":   "ref: refs/heads/feature/login\n",
				"web/.git/config": "[core]\n\tbare = false\n[remote \"upstream\"]\n\turl = https://git.example/other/thing.git\n[remote \"origin\"]\n\turl = git@git.example:acme/shop.git\n\tfetch = +refs/heads/*:refs/remotes/origin/*\n",
				"web/src/a.go":    "",
			},
			dir: "web/src", wantRepo: "shop", wantBranch: "feature/login",
		},
		{
			name:  "no remote: the directory name; detached HEAD: the short commit",
			files: map[string]string{"web/.git/HEAD": "1a2b3c4d5e6f7a8b9c0d1e2f3a4b5c6d7e8f9a0b\n", "web/.git/config": "[core]\n"},
			dir:   "web", wantRepo: "web", wantBranch: "1a2b3c4d5e6f",
		},
		{
			name: "worktree: HEAD of its own, config of the main checkout",
			files: map[string]string{
				"main/.git/config":                 "[remote \"origin\"]\n\turl = https://git.example/acme/web\n",
				"main/.git/worktrees/wt/HEAD":      "ref: refs/heads/first-hour\n",
				"main/.git/worktrees/wt/commondir": "../..\n",
				"wt/.git":                          "gitdir: ../main/.git/worktrees/wt\n",
			},
			dir: "wt", wantRepo: "web", wantBranch: "first-hour",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := t.TempDir()
			for p, c := range tt.files {
				write(t, filepath.Join(root, p), c)
			}
			repo, branch := gitCheckout(filepath.Join(root, tt.dir))
			assert.Equal(t, tt.wantRepo, repo, "repository of %s", tt.dir)
			assert.Equal(t, tt.wantBranch, branch, "branch of %s", tt.dir)
		})
	}
}
