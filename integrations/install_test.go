package integrations_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestInstallScript runs integrations/install.sh against a release built
// and served locally: it installs a verified archive, and installs nothing
// when the archive does not match checksums.txt or the pinned
// LOCKCTL_SHA256, or when the version is not a release tag.
func TestInstallScript(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds lockctl: skipped with -short")
	}
	rel := serveRelease(t, "v0.2.0")
	archive := rel.Archives["lockctl"]
	script := filepath.Join(repoRoot(), "integrations", "install.sh")
	install := func(env []string, args ...string) (string, string, error) {
		dir := filepath.Join(t.TempDir(), "bin")
		cmd := exec.Command(script, append(args, dir)...)
		cmd.Env = append([]string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "LOCKCTL_BASE_URL=" + rel.BaseURL}, env...)
		out, err := cmd.CombinedOutput()
		return dir, string(out), err
	}

	dir, out, err := install(nil, "v0.2.0")
	require.NoError(t, err, out)
	assert.Contains(t, out, "installed lockctl v0.2.0")
	assert.Contains(t, out, rel.SHA256[archive])
	version, err := exec.Command(filepath.Join(dir, "lockctl"), "version").CombinedOutput()
	require.NoError(t, err, "%s", version)

	_, out, err = install([]string{"LOCKCTL_SHA256=" + rel.SHA256[archive]}, "v0.2.0")
	assert.NoError(t, err, "the pinned sum matches: %s", out)

	for _, tt := range []struct {
		name    string
		env     []string
		version string
		tamper  bool
		want    string
	}{
		{name: "pinned sum differs", env: []string{"LOCKCTL_SHA256=" + strings.Repeat("0", 64)}, version: "v0.2.0", want: "is not the pinned LOCKCTL_SHA256"},
		{name: "archive differs from checksums.txt", version: "v0.2.0", tamper: true, want: "does not match checksums.txt"},
		{name: "not a release tag", version: "latest", want: "is not a release tag"},
		{name: "no such release", version: "v9.9.9", want: "download"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.tamper {
				path := filepath.Join(rel.Dir, archive)
				good, err := os.ReadFile(path)
				require.NoError(t, err)
				t.Cleanup(func() { require.NoError(t, os.WriteFile(path, good, 0o644)) })
				writeTarGz(t, path, map[string][]byte{"lockctl": []byte("#!/bin/sh\necho tampered\n")})
			}
			dir, out, err := install(tt.env, tt.version)
			require.Error(t, err, "installs: %s", out)
			assert.Contains(t, out, tt.want)
			assert.NoFileExists(t, filepath.Join(dir, "lockctl"), "nothing installed")
		})
	}
}
