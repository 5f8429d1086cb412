package main

import (
	"archive/tar"
	"bytes"
	"debug/elf"
	"errors"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/layout"
	"github.com/google/go-containerregistry/pkg/v1/types"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestImage builds the image tarball as `make image` does and reads it back
// as a runtime would: the index names the image, whose config runs the
// static binary as a non-root user, with time zone data inside.
//
// NOTE: to keep `make test` fast on two cores, it builds for linux/amd64
// only and without -trimpath: the binary is then compiled from the packages
// that the end-to-end tests' lockctl binary (CGO_ENABLED=0, no -trimpath,
// internal/testing/clitest) put in the build cache, and only linking is left to do.
func TestImage(t *testing.T) {
	if testing.Short() {
		t.Skip("builds lockctl: skipped with -short")
	}
	out := filepath.Join(t.TempDir(), "lockctl.tar")
	// A stand-in for hack/busybox.sh's static busybox: the layout is what
	// is tested here, not busybox.
	busybox := filepath.Join(t.TempDir(), "busybox")
	require.NoError(t, os.WriteFile(busybox, []byte("\x7fELF busybox stand-in"), 0o755))
	var stderr bytes.Buffer
	code := run([]string{"-o", out, "-version", "v9.8.7", "-platforms", "linux/amd64", "-trimpath=false", "-busybox", "linux/amd64=" + busybox}, &stderr)
	require.Equal(t, 0, code, "hack/image: %s", stderr.String())
	t.Run("shell variant", func(t *testing.T) { checkShellImage(t, strings.TrimSuffix(out, ".tar")+"-shell.tar") })

	dir := untar(t, out)
	lp, err := layout.FromPath(dir)
	require.NoError(t, err, "an OCI image layout")
	top, err := lp.ImageIndex()
	require.NoError(t, err)
	tm, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, tm.Manifests, 1, "index.json lists the image")
	assert.Equal(t, "lockctl:v9.8.7", tm.Manifests[0].Annotations["org.opencontainers.image.ref.name"], "named for load")
	assert.Equal(t, types.OCIImageIndex, tm.Manifests[0].MediaType, "a multi-platform index")

	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	require.NotNil(t, im.Manifests[0].Platform)
	assert.Equal(t, v1.Platform{OS: "linux", Architecture: "amd64"}, *im.Manifests[0].Platform, "platform in the index")

	img, err := idx.Image(im.Manifests[0].Digest)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Equal(t, "linux", cf.OS)
	assert.Equal(t, "amd64", cf.Architecture)
	assert.Equal(t, []string{"/usr/local/bin/lockctl"}, cf.Config.Entrypoint, "entrypoint")
	assert.Equal(t, "65532:65532", cf.Config.User, "non-root user")
	assert.Equal(t, "v9.8.7", cf.Config.Labels["org.opencontainers.image.version"])

	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 1, "one layer on an empty base")
	files := layerFiles(t, layers[0])
	assert.ElementsMatch(t, []string{"usr/", "usr/local/", "usr/local/bin/", "usr/local/bin/lockctl"}, keys(files), "nothing but the binary")
	bin := files["usr/local/bin/lockctl"]
	f, err := elf.NewFile(bytes.NewReader(bin))
	require.NoError(t, err, "an ELF binary")
	assert.Equal(t, elf.EM_X86_64, f.Machine)
	for _, p := range f.Progs {
		assert.NotEqual(t, elf.PT_INTERP, p.Type, "static: no dynamic loader")
	}
	assert.True(t, bytes.Contains(bin, []byte("America/New_York")), "time zone data embedded")
	assert.True(t, bytes.Contains(bin, []byte("v9.8.7")), "version linked in")
}

// checkShellImage reads the shell variant as a runtime would: named
// VERSION-shell, a busybox layer with /bin/sh under the lockctl layer, no
// entrypoint and /bin/sh as the command (what a CI job image needs),
// lockctl and the shell on PATH, the same non-root user.
func checkShellImage(t *testing.T, path string) {
	lp, err := layout.FromPath(untar(t, path))
	require.NoError(t, err, "an OCI image layout")
	top, err := lp.ImageIndex()
	require.NoError(t, err)
	tm, err := top.IndexManifest()
	require.NoError(t, err)
	require.Len(t, tm.Manifests, 1)
	assert.Equal(t, "lockctl:v9.8.7-shell", tm.Manifests[0].Annotations["org.opencontainers.image.ref.name"])
	idx, err := top.ImageIndex(tm.Manifests[0].Digest)
	require.NoError(t, err)
	im, err := idx.IndexManifest()
	require.NoError(t, err)
	require.Len(t, im.Manifests, 1)
	img, err := idx.Image(im.Manifests[0].Digest)
	require.NoError(t, err)
	cf, err := img.ConfigFile()
	require.NoError(t, err)
	assert.Empty(t, cf.Config.Entrypoint, "no entrypoint: CI systems run their script with the image's shell")
	assert.Equal(t, []string{"/bin/sh"}, cf.Config.Cmd)
	assert.Contains(t, cf.Config.Env, "PATH=/usr/local/bin:/bin")
	assert.Equal(t, "65532:65532", cf.Config.User, "non-root user")
	layers, err := img.Layers()
	require.NoError(t, err)
	require.Len(t, layers, 2, "busybox, then lockctl")
	bb := layerEntries(t, layers[0])
	require.Contains(t, bb, "bin/busybox")
	assert.Equal(t, int64(0o755), bb["bin/busybox"].Mode)
	for _, applet := range []string{"sh", "sha256sum", "tar", "wget", "cat"} {
		require.Contains(t, bb, "bin/"+applet)
		assert.Equal(t, byte(tar.TypeSymlink), bb["bin/"+applet].Typeflag, applet)
		assert.Equal(t, "busybox", bb["bin/"+applet].Linkname, applet)
	}
	assert.Equal(t, int64(0o1777), bb["tmp/"].Mode, "a writable /tmp for scripts")
	assert.Contains(t, layerFiles(t, layers[1]), "usr/local/bin/lockctl")
}

// layerEntries returns the headers of the layer's entries by name.
func layerEntries(t *testing.T, l v1.Layer) map[string]*tar.Header {
	t.Helper()
	rc, err := l.Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	out := map[string]*tar.Header{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		out[hdr.Name] = hdr
	}
}

func untar(t *testing.T, path string) string {
	t.Helper()
	f, err := os.Open(path)
	require.NoError(t, err)
	defer f.Close()
	dir := t.TempDir()
	tr := tar.NewReader(f)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return dir
		}
		require.NoError(t, err)
		target := filepath.Join(dir, filepath.FromSlash(hdr.Name))
		if hdr.Typeflag == tar.TypeDir {
			require.NoError(t, os.MkdirAll(target, 0o755))
			continue
		}
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		require.NoError(t, os.WriteFile(target, data, 0o644))
	}
}

// layerFiles returns the entries of the layer by name (directories with a
// trailing slash and no content).
func layerFiles(t *testing.T, l v1.Layer) map[string][]byte {
	t.Helper()
	rc, err := l.Uncompressed()
	require.NoError(t, err)
	defer rc.Close()
	out := map[string][]byte{}
	tr := tar.NewReader(rc)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return out
		}
		require.NoError(t, err)
		data, err := io.ReadAll(tr)
		require.NoError(t, err)
		name := strings.TrimPrefix(hdr.Name, "/")
		if hdr.Name == "usr/local/bin/lockctl" {
			assert.Equal(t, int64(0o755), hdr.Mode, "executable by the non-root user")
		}
		out[name] = data
	}
}

func keys(m map[string][]byte) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// TestReleaseBuildsImage checks the release's image: `make image` runs this
// program, linking the same variables as the release's builds, before the
// tag (deploy/ is pinned to the image it writes); the release checks that
// tarball against deploy/'s pin (hack/pin-image -check) and attaches it.
func TestReleaseBuildsImage(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(filepath.Join("..", "..", ".goreleaser.yml"))
	require.NoError(t, err)
	var rel struct {
		Before  struct{ Hooks []string }
		Builds  []struct{ Ldflags []string }
		Release struct {
			ExtraFiles []struct{ Glob string } `json:"extra_files"`
		}
	}
	require.NoError(t, yaml.Unmarshal(data, &rel))
	var hook string
	for _, h := range rel.Before.Hooks {
		if strings.HasPrefix(h, "go run ./hack/pin-image -check ") {
			hook = h
		}
	}
	require.NotEmpty(t, hook, "a before hook checks the image against deploy/'s pin")
	_, out, ok := strings.Cut(hook, " -oci ")
	require.True(t, ok, "the hook names the tarball: %s", hook)
	out, _, _ = strings.Cut(out, " ")
	var globs []string
	for _, f := range rel.Release.ExtraFiles {
		globs = append(globs, strings.TrimPrefix(f.Glob, "./"))
	}
	assert.Contains(t, globs, out, "the release attaches the tarball")

	mk, err := os.ReadFile(filepath.Join("..", "..", "Makefile"))
	require.NoError(t, err)
	assert.Regexp(t, `(?m)^\tgo run ./hack/image -o `+regexp.QuoteMeta(out)+` .*-ldflags "\$\(LDFLAGS\)"`, string(mk), "make image writes the tarball the release checks")
	ldflags := regexp.MustCompile(`(?m)^LDFLAGS\s*:=\s*(.*)$`).FindStringSubmatch(string(mk))
	require.NotNil(t, ldflags, "the Makefile sets LDFLAGS")
	vars := regexp.MustCompile(`-X (?:\$\(MODULE\)|` + regexp.QuoteMeta(Module) + `)(/\S+)=`)
	names := func(s string) []string {
		var out []string
		for _, m := range vars.FindAllStringSubmatch(s, -1) {
			out = append(out, m[1])
		}
		return out
	}
	require.NotEmpty(t, rel.Builds)
	require.Len(t, names(ldflags[1]), 3, "make image links version, commit and date")
	assert.Equal(t, names(rel.Builds[0].Ldflags[0]), names(ldflags[1]), "the image binary links what the release's builds link")
}
