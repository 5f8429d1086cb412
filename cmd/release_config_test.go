package cmd

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"sigs.k8s.io/yaml"
)

// TestKrewManifestMatchesRelease checks that plugins/lockctl.yaml installs
// the kubectl-lockctl binary from the archives .goreleaser.yml builds, for
// every platform it builds.
func TestKrewManifestMatchesRelease(t *testing.T) {
	t.Parallel()
	var rel struct {
		Builds []struct {
			ID, Binary   string
			Goos, Goarch []string
			Ldflags      []string
		}
		Archives []struct {
			ID           string
			NameTemplate string `json:"name_template"`
			IDs          []string
		}
	}
	readYAML(t, ".goreleaser.yml", &rel)
	var plugin struct {
		APIVersion, Kind string
		Metadata         struct{ Name string }
		Spec             struct {
			Version   string
			Platforms []struct {
				Selector         struct{ MatchLabels map[string]string } `json:"selector"`
				URI, Sha256, Bin string
			}
		}
	}
	readYAML(t, "plugins/lockctl.yaml", &plugin)
	assert.Equal(t, "krew.googlecontainertools.github.com/v1alpha2", plugin.APIVersion)
	assert.Equal(t, "Plugin", plugin.Kind)
	assert.Equal(t, "lockctl", plugin.Metadata.Name, "installed as kubectl lockctl")

	var want []string
	for _, b := range rel.Builds {
		assert.Equal(t, rel.Builds[0].Ldflags, b.Ldflags, "build %s: the same flags as the others", b.ID)
		if b.Binary != "kubectl-lockctl" {
			continue
		}
		for _, goos := range b.Goos {
			for _, arch := range b.Goarch {
				want = append(want, goos+"/"+arch)
			}
		}
	}
	require.NotEmpty(t, want, ".goreleaser.yml builds kubectl-lockctl")
	var archive string
	for _, a := range rel.Archives {
		if len(a.IDs) == 1 && a.IDs[0] == "kubectl-lockctl" {
			archive = a.NameTemplate
		}
	}
	require.NotEmpty(t, archive, ".goreleaser.yml archives kubectl-lockctl on its own")
	version := strings.TrimPrefix(plugin.Spec.Version, "v")
	var got []string
	for _, p := range plugin.Spec.Platforms {
		goos, arch := p.Selector.MatchLabels["os"], p.Selector.MatchLabels["arch"]
		got = append(got, goos+"/"+arch)
		assert.Equal(t, "kubectl-lockctl", p.Bin)
		name := strings.NewReplacer("{{ .Version }}", version, "{{ .Os }}", goos, "{{ .Arch }}", arch).Replace(archive)
		assert.True(t, strings.HasSuffix(p.URI, fmt.Sprintf("/%s/%s.tar.gz", plugin.Spec.Version, name)), "%s: %s is the release's archive %s", goos+"/"+arch, p.URI, name)
		assert.Len(t, p.Sha256, 64)
	}
	assert.ElementsMatch(t, want, got, "one platform per kubectl-lockctl build")
}

// TestReleaseChecksumsCoverEverything checks that checksums.txt lists every
// file a release publishes: all archives (no ids filter) and each extra
// file, the OCI image tarballs, under the name it is published as.
func TestReleaseChecksumsCoverEverything(t *testing.T) {
	t.Parallel()
	type file struct {
		Glob         string `json:"glob"`
		NameTemplate string `json:"name_template"`
	}
	var rel struct {
		Checksum struct {
			NameTemplate string   `json:"name_template"`
			IDs          []string `json:"ids"`
			ExtraFiles   []file   `json:"extra_files"`
		}
		Release struct {
			ExtraFiles []file `json:"extra_files"`
		}
	}
	readYAML(t, ".goreleaser.yml", &rel)
	assert.Equal(t, "checksums.txt", rel.Checksum.NameTemplate, "the name install.sh reads")
	assert.Empty(t, rel.Checksum.IDs, "every archive is summed")
	require.NotEmpty(t, rel.Release.ExtraFiles)
	assert.ElementsMatch(t, rel.Release.ExtraFiles, rel.Checksum.ExtraFiles, "every extra file is summed under its published name")
	var names []string
	for _, f := range rel.Release.ExtraFiles {
		names = append(names, f.NameTemplate)
	}
	assert.Contains(t, names, "lockctl_{{ .Version }}_oci-image-shell.tar", "the shell image is published")
	assert.Contains(t, names, "lockctl-stamp-{{ .Version }}.tgz", "the Helm 4 plugin's archive is published, under the name helm plugin install needs")
}

func readYAML(t *testing.T, path string, into any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", path))
	require.NoError(t, err)
	require.NoError(t, yaml.Unmarshal(data, into), path)
}
