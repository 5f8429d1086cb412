package main

import (
	"archive/tar"
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"

// ociTar writes an OCI layout tar whose index.json names ref with digest,
// as hack/image writes one.
func ociTar(t *testing.T, ref, digest string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "lockctl.tar")
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	index := `{"schemaVersion":2,"manifests":[{"mediaType":"application/vnd.oci.image.index.v1+json","size":1,"digest":"` + digest +
		`","annotations":{"org.opencontainers.image.ref.name":"` + ref + `"}}]}`
	for name, data := range map[string]string{"oci-layout": `{"imageLayoutVersion":"1.0.0"}`, "index.json": index} {
		require.NoError(t, tw.WriteHeader(&tar.Header{Name: name, Mode: 0o644, Size: int64(len(data)), Typeflag: tar.TypeReg}))
		_, err := tw.Write([]byte(data))
		require.NoError(t, err)
	}
	require.NoError(t, tw.Close())
	require.NoError(t, os.WriteFile(path, buf.Bytes(), 0o644))
	return path
}

// repoCopy copies the repository's deploy/ into a temporary root.
func repoCopy(t *testing.T) string {
	t.Helper()
	root := t.TempDir()
	out, err := exec.Command("cp", "-r", filepath.Join("..", "..", "deploy"), root).CombinedOutput()
	require.NoError(t, err, "%s", out)
	return root
}

func TestPin(t *testing.T) {
	t.Parallel()
	root := repoCopy(t)
	oci := ociTar(t, "lockctl:v0.2.0", digest)
	var stderr bytes.Buffer
	require.Equal(t, 1, run([]string{"-check", "-version", "v0.2.0", "-oci", oci, "-root", root}, &stderr), "the development tree is not pinned")
	assert.Contains(t, stderr.String(), "runs lockctl:dev, not the released image")

	stderr.Reset()
	require.Equal(t, 0, run([]string{"-image", "OWNER/IMAGE", "-version", "v0.2.0", "-oci", oci, "-root", root}, &stderr), stderr.String())
	for _, b := range Bases {
		e, err := Read(filepath.Join(root, b))
		require.NoError(t, err)
		assert.Equal(t, Entry{Name: "lockctl", NewName: "OWNER/IMAGE", NewTag: "v0.2.0", Digest: digest}, e, b)
		data, err := os.ReadFile(filepath.Join(root, b))
		require.NoError(t, err)
		assert.Contains(t, string(data), "# The image", "%s keeps its comments", b)
	}
	stderr.Reset()
	assert.Equal(t, 0, run([]string{"-check", "-version", "v0.2.0", "-oci", oci, "-root", root}, &stderr), stderr.String())

	// kustomize renders the pinned image by tag and digest.
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "deploy"))
	require.NoError(t, err)
	out, err := m.AsYaml()
	require.NoError(t, err)
	assert.Contains(t, string(out), "image: OWNER/IMAGE:v0.2.0@"+digest)
	assert.NotContains(t, string(out), "image: lockctl")
	m, err = krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(root, "deploy", "cronjob"))
	require.NoError(t, err)
	out, err = m.AsYaml()
	require.NoError(t, err)
	assert.Contains(t, string(out), "image: OWNER/IMAGE:v0.2.0@"+digest, "deploy/cronjob, through the component")

	// Another build of the image does not pass the check.
	other := ociTar(t, "lockctl:v0.2.0", "sha256:"+strings.Repeat("f", 64))
	stderr.Reset()
	assert.Equal(t, 1, run([]string{"-check", "-version", "v0.2.0", "-oci", other, "-root", root}, &stderr))
	assert.Contains(t, stderr.String(), "not the released image")
}

func TestRunRefuses(t *testing.T) {
	t.Parallel()
	oci := ociTar(t, "lockctl:v0.2.0", digest)
	for _, tt := range []struct {
		name string
		args []string
		code int
		want string
	}{
		{name: "no version", args: []string{"-image", "OWNER/IMAGE", "-oci", oci}, code: 2, want: "is not a release tag"},
		{name: "a bare version", args: []string{"-image", "OWNER/IMAGE", "-version", "0.2.0", "-oci", oci}, code: 2, want: "is not a release tag"},
		{name: "an image with a tag", args: []string{"-image", "OWNER/IMAGE:v0.2.0", "-version", "v0.2.0", "-oci", oci}, code: 2, want: "without tag or digest"},
		{name: "the bare name", args: []string{"-image", "lockctl", "-version", "v0.2.0", "-oci", oci}, code: 2, want: "without tag or digest"},
		{name: "no tar", args: []string{"-image", "OWNER/IMAGE", "-version", "v0.2.0"}, code: 2, want: "-oci is required"},
		{name: "the image of another version", args: []string{"-image", "OWNER/IMAGE", "-version", "v0.3.0", "-oci", oci}, code: 1, want: "not lockctl:v0.3.0"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			root := repoCopy(t)
			var stderr bytes.Buffer
			assert.Equal(t, tt.code, run(append(tt.args, "-root", root), &stderr))
			assert.Contains(t, stderr.String(), tt.want)
			e, err := Read(filepath.Join(root, Bases[0]))
			require.NoError(t, err)
			assert.Equal(t, Entry{Name: "lockctl", NewTag: "dev"}, e, "nothing written")
		})
	}
}
