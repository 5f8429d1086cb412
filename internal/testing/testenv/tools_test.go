package testenv_test

import (
	"os"
	"path/filepath"
	"regexp"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/internal/testing/testenv"
)

// TestToolVersionsMatchBuildScript keeps the versions Start looks for equal to
// the ones hack/controlplane-tools.sh builds and hack/tools/go.mod pins.
func TestToolVersionsMatchBuildScript(t *testing.T) {
	t.Parallel()
	script, err := os.ReadFile(filepath.Join("..", "..", "..", "hack", "controlplane-tools.sh"))
	require.NoError(t, err)
	goMod, err := os.ReadFile(filepath.Join("..", "..", "..", "hack", "tools", "go.mod"))
	require.NoError(t, err)

	tests := []struct {
		name    string
		file    []byte
		pattern string
		want    string
	}{
		{name: "script KUBE_VERSION", file: script, pattern: `(?m)^KUBE_VERSION=(\S+)$`, want: testenv.KubeVersion},
		{name: "script ETCD_VERSION", file: script, pattern: `(?m)^ETCD_VERSION=(\S+)$`, want: testenv.EtcdVersion},
		{name: "script KWOK_VERSION", file: script, pattern: `(?m)^KWOK_VERSION=(\S+)$`, want: testenv.KwokVersion},
		{name: "go.mod k8s.io/kubernetes", file: goMod, pattern: `(?m)^\s*k8s\.io/kubernetes (\S+)`, want: testenv.KubeVersion},
		{name: "go.mod etcd server", file: goMod, pattern: `(?m)^\s*go\.etcd\.io/etcd/server/v3 (\S+)`, want: testenv.EtcdVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			m := regexp.MustCompile(tt.pattern).FindSubmatch(tt.file)
			require.NotNil(t, m, "%s: no match for %s", tt.name, tt.pattern)
			assert.Equal(t, tt.want, string(m[1]), tt.name)
		})
	}
}

func TestDefaultToolsDir(t *testing.T) {
	// Not parallel: it sets an environment variable.
	t.Setenv(testenv.ToolsDirEnv, "")
	dir, err := testenv.DefaultToolsDir()
	require.NoError(t, err)
	root, err := filepath.Abs(filepath.Join("..", "..", ".."))
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(root, "_output", "tools"), dir, "default")

	t.Setenv(testenv.ToolsDirEnv, "/opt/lockctl-tools")
	dir, err = testenv.DefaultToolsDir()
	require.NoError(t, err)
	assert.Equal(t, "/opt/lockctl-tools", dir, "from %s", testenv.ToolsDirEnv)
}

func TestStartReportsMissingTools(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	_, err := testenv.Start(t.Context(), testenv.Options{ToolsDir: dir})
	var missing *testenv.ToolsMissingError
	require.ErrorAs(t, err, &missing)
	assert.Equal(t, dir, missing.Dir, "dir")
	assert.Len(t, missing.Missing, 4, "missing binaries")
	assert.Contains(t, err.Error(), "control-plane binaries missing in "+dir+": run `make tools`", "message")
}
