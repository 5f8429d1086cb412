package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestGenerate fills the template in from a checksums.txt: every platform
// gets its archive's URI and sum; a platform whose archive is missing from
// checksums.txt is an error, not a made-up sum.
func TestGenerate(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	var sums strings.Builder
	want := map[string]string{}
	for i, p := range []string{"linux_amd64", "linux_arm64", "darwin_amd64", "darwin_arm64"} {
		file := "kubectl-lockctl_0.2.0_" + p + ".tar.gz"
		want[file] = strings.Repeat(fmt.Sprint(i+1), 64)
		fmt.Fprintf(&sums, "%s  %s\n", want[file], file)
		fmt.Fprintf(&sums, "%s  lockctl_0.2.0_%s.tar.gz\n", strings.Repeat("f", 64), p)
	}
	checksums := filepath.Join(dir, "checksums.txt")
	require.NoError(t, os.WriteFile(checksums, []byte(sums.String()), 0o644))
	template := filepath.Join("..", "..", "plugins", "lockctl.yaml")

	var out, errOut bytes.Buffer
	require.Equal(t, 0, run([]string{"-version", "v0.2.0", "-checksums", checksums, "-template", template}, &out, &errOut), errOut.String())
	var plugin struct {
		Kind     string
		Metadata struct{ Name string }
		Spec     struct {
			Version   string
			Platforms []struct {
				URI, Sha256, Bin string
			}
		}
	}
	require.NoError(t, yaml.Unmarshal(out.Bytes(), &plugin))
	assert.Equal(t, "Plugin", plugin.Kind)
	assert.Equal(t, "v0.2.0", plugin.Spec.Version)
	require.Len(t, plugin.Spec.Platforms, 4)
	for _, p := range plugin.Spec.Platforms {
		file := filepath.Base(p.URI)
		assert.Equal(t, DefaultBaseURL+"/v0.2.0/"+file, p.URI)
		assert.Equal(t, want[file], p.Sha256, file)
		assert.Equal(t, "kubectl-lockctl", p.Bin)
	}

	short := filepath.Join(dir, "short.txt")
	require.NoError(t, os.WriteFile(short, []byte(strings.SplitN(sums.String(), "\n", 2)[0]+"\n"), 0o644))
	errOut.Reset()
	assert.Equal(t, 1, run([]string{"-version", "v0.2.0", "-checksums", short, "-template", template}, &out, &errOut))
	assert.Contains(t, errOut.String(), "lists no kubectl-lockctl_0.2.0_linux_arm64.tar.gz")
}
