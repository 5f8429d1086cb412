package integrations_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestKrewInstall generates the krew manifest from a locally built
// release's checksums.txt (hack/krew-manifest, as a release does) and
// installs the plugin from it with krew itself, offline: krew checks the
// archive against the manifest's sha256 and installs kubectl-lockctl, which
// then runs. An archive whose bytes differ from the sum is refused.
func TestKrewInstall(t *testing.T) {
	t.Parallel()
	krew := tool(t, "krew")
	rel := serveRelease(t, "v0.2.0")
	manifest := filepath.Join(t.TempDir(), "lockctl.yaml")
	gen := exec.Command("go", "run", "./hack/krew-manifest", "-version", rel.Version,
		"-checksums", filepath.Join(rel.Dir, "checksums.txt"), "-base-url", rel.BaseURL, "-only", "linux/"+runtime.GOARCH, "-o", manifest)
	gen.Dir = repoRoot()
	out, err := gen.CombinedOutput()
	require.NoError(t, err, "hack/krew-manifest: %s", out)
	data, err := os.ReadFile(manifest)
	require.NoError(t, err)
	archive := rel.Archives["kubectl-lockctl"]
	assert.Contains(t, string(data), rel.SHA256[archive], "the manifest has the archive's real sum")
	assert.Contains(t, string(data), "version: "+rel.Version+"\n", "the manifest spells the version as the tag")

	install := func(archivePath string) (string, string, error) {
		root := t.TempDir()
		cmd := exec.Command(krew, "install", "--manifest="+manifest, "--archive="+archivePath)
		cmd.Env = append(os.Environ(), "KREW_ROOT="+root, "KREW_NO_UPGRADE_CHECK=1", "HOME="+t.TempDir())
		out, err := cmd.CombinedOutput()
		return root, string(out), err
	}
	root, log, err := install(filepath.Join(rel.Dir, archive))
	require.NoError(t, err, "krew install:\n%s", log)
	plugin := filepath.Join(root, "bin", "kubectl-lockctl")
	version, err := exec.Command(plugin, "version").CombinedOutput()
	require.NoError(t, err, "%s version: %s", plugin, version)
	assert.True(t, strings.HasPrefix(string(version), "lockctl "), "the installed plugin runs: %s", version)

	// The template in plugins/ is no manifest to install: krew refuses
	// its placeholder sums, for the very archive the release has.
	template := manifest
	manifest = filepath.Join(repoRoot(), "plugins", "lockctl.yaml")
	_, log, err = install(filepath.Join(rel.Dir, archive))
	require.Error(t, err, "krew installs from the template:\n%s", log)
	assert.Contains(t, log, "checksum does not match")
	manifest = template

	// A tampered archive is refused.
	bad := filepath.Join(t.TempDir(), archive)
	writeTarGz(t, bad, map[string][]byte{"kubectl-lockctl": []byte("#!/bin/sh\necho tampered\n")})
	_, log, err = install(bad)
	require.Error(t, err, "krew installs an archive whose sum differs:\n%s", log)
	assert.Contains(t, log, "checksum does not match", "krew names the checksum mismatch")
}
