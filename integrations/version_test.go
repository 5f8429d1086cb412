package integrations_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestReleaseVersionSpelling builds lockctl as a release does, with the
// ldflags of .goreleaser.yml's builds filled in as goreleaser fills them
// ({{.Version}} is the tag without its v), and checks that `lockctl version`
// and `version -o json` spell the version as the tag, v0.2.0, the spelling
// `go install …@v0.2.0` gives (TestBuildVersion in cmd), the krew manifest
// and the install script use.
func TestReleaseVersionSpelling(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds lockctl: skipped with -short")
	}
	data, err := os.ReadFile(filepath.Join(repoRoot(), ".goreleaser.yml"))
	require.NoError(t, err)
	var cfg struct {
		Builds []struct {
			ID      string   `json:"id"`
			Ldflags []string `json:"ldflags"`
		} `json:"builds"`
	}
	require.NoError(t, yaml.Unmarshal(data, &cfg))
	require.NotEmpty(t, cfg.Builds)
	fill := strings.NewReplacer("{{.Version}}", "0.2.0", "{{.ShortCommit}}", "abc1234", "{{.Date}}", "2026-12-05T00:00:00Z")
	var flags []string
	for _, b := range cfg.Builds {
		require.NotEmpty(t, b.Ldflags, "build %s has ldflags", b.ID)
		flags = append(flags, fill.Replace(strings.Join(b.Ldflags, " ")))
	}
	for _, f := range flags[1:] {
		require.Equal(t, flags[0], f, "every build links the same metadata")
	}
	bin := filepath.Join(t.TempDir(), "lockctl")
	build := exec.Command("go", "build", "-trimpath", "-ldflags", flags[0], "-o", bin, ".")
	build.Dir = repoRoot()
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build: %s", out)

	out, err = exec.Command(bin, "version").Output()
	require.NoError(t, err)
	assert.True(t, strings.HasPrefix(string(out), "lockctl v0.2.0 (commit abc1234, "), "lockctl version: %s", out)
	out, err = exec.Command(bin, "version", "-o", "json").Output()
	require.NoError(t, err)
	var v map[string]any
	require.NoError(t, json.Unmarshal(out, &v), "%s", out)
	assert.Equal(t, "v0.2.0", v["version"], "version -o json")
}
