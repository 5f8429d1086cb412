package main

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestArchive: the archive holds lockctl-stamp/plugin.yaml, the
// repository's plugin.yaml with the release's version, and is the same
// bytes each time.
func TestArchive(t *testing.T) {
	t.Parallel()
	source := filepath.Join("..", "..", "plugins", "helm", pluginName, "plugin.yaml")
	out := filepath.Join(t.TempDir(), "lockctl-stamp-1.2.3.tgz")
	var stderr bytes.Buffer
	require.Equal(t, 0, run([]string{"-version", "v1.2.3", "-plugin", source, "-o", out}, &stderr), stderr.String())

	data, err := os.ReadFile(out)
	require.NoError(t, err)
	zr, err := gzip.NewReader(bytes.NewReader(data))
	require.NoError(t, err)
	tr := tar.NewReader(zr)
	files := map[string][]byte{}
	for {
		h, err := tr.Next()
		if err == io.EOF {
			break
		}
		require.NoError(t, err)
		b, err := io.ReadAll(tr)
		require.NoError(t, err)
		files[h.Name] = b
	}
	require.Contains(t, files, "lockctl-stamp/plugin.yaml")
	assert.Len(t, files, 2, "the directory and its plugin.yaml")
	var got, want map[string]any
	require.NoError(t, yaml.Unmarshal(files["lockctl-stamp/plugin.yaml"], &got))
	orig, err := os.ReadFile(source)
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(orig, &want))
	assert.Equal(t, "1.2.3", got["version"])
	want["version"] = "1.2.3"
	assert.Equal(t, want, got, "the repository's plugin.yaml, the version replaced")

	again := filepath.Join(t.TempDir(), "lockctl-stamp-1.2.3.tgz")
	require.Equal(t, 0, run([]string{"-version", "v1.2.3", "-plugin", source, "-o", again}, &stderr), stderr.String())
	data2, err := os.ReadFile(again)
	require.NoError(t, err)
	assert.Equal(t, data, data2, "reproducible")
}

// TestUsage: a version that is not one, or an archive name helm cannot
// install from, is refused.
func TestUsage(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"no version", []string{"-o", "x/lockctl-stamp-1.2.3.tgz"}, "usage: helm-plugin"},
		{"not a version", []string{"-version", "main", "-o", "x/lockctl-stamp-1.2.3.tgz"}, "usage: helm-plugin"},
		{"another name", []string{"-version", "v1.2.3", "-o", "x/lockctl-stamp.tgz"}, "the archive must be named lockctl-stamp-1.2.3.tgz"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stderr bytes.Buffer
			assert.Equal(t, 2, run(tt.args, &stderr))
			assert.Contains(t, stderr.String(), tt.want)
		})
	}
}
