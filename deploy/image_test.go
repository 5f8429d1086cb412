package deploy_test

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// ReleaseVersionEnv names the release being made, for
// TestBaseImagePinnedForRelease; a tree checked out at a release tag is one
// without it.
const ReleaseVersionEnv = "LOCKCTL_RELEASE_VERSION"

// imageEntry is a kustomization's images: entry.
type imageEntry struct {
	Name    string `json:"name"`
	NewName string `json:"newName"`
	NewTag  string `json:"newTag"`
	Digest  string `json:"digest"`
}

var (
	releaseTag   = regexp.MustCompile(`^v\d+\.\d+\.\d+(-[0-9A-Za-z.-]+)?$`)
	sha256Digest = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)
)

// lockctlImage reads the images: entry for lockctl of a kustomization.
func lockctlImage(t *testing.T, file string) imageEntry {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), file))
	require.NoError(t, err)
	var k struct {
		Images []imageEntry `json:"images"`
	}
	require.NoError(t, yaml.Unmarshal(data, &k), file)
	for _, e := range k.Images {
		if e.Name == "lockctl" {
			return e
		}
	}
	t.Fatalf("%s has no images: entry for lockctl: the manifests' image would be pulled as the bare name lockctl", file)
	return imageEntry{}
}

// releaseVersion is the release this tree is: $LOCKCTL_RELEASE_VERSION, else
// the release tag HEAD is at; "" for a development tree.
func releaseVersion(t *testing.T) string {
	t.Helper()
	if v := os.Getenv(ReleaseVersionEnv); v != "" {
		require.Regexp(t, releaseTag, v, "%s is a release tag", ReleaseVersionEnv)
		return v
	}
	cmd := exec.Command("git", "describe", "--exact-match", "--tags", "--match", "v*", "HEAD")
	cmd.Dir = repoRoot()
	out, err := cmd.Output()
	if err != nil {
		return "" // no tag at HEAD, or no git: a development tree
	}
	if v := strings.TrimSpace(string(out)); releaseTag.MatchString(v) {
		return v
	}
	return ""
}

// TestBaseImagePinnedForRelease checks the image every container of
// deploy/ runs, as kustomize renders each overlay of variants (deploy/,
// deploy/cronjob, and deploy/ with the components). A release tree (HEAD at
// a release tag, or $LOCKCTL_RELEASE_VERSION set, as the release does
// before it tags) must pin the image it published by repository, its own
// tag and digest, in deploy/kustomization.yaml and in the cronjob
// component (hack/pin-image writes them): an unpinned base fails. A
// development tree may run the development image lockctl:dev, which a
// local cluster loads from make image, or a pinned one; never the bare name
// lockctl, which a real cluster would pull from wherever that name resolves.
func TestBaseImagePinnedForRelease(t *testing.T) {
	t.Parallel()
	version := releaseVersion(t)
	var want string
	for _, file := range []string{"deploy/kustomization.yaml", "deploy/components/cronjob/kustomization.yaml"} {
		e := lockctlImage(t, file)
		pinned := e.NewName != "" && e.NewName != "lockctl" && releaseTag.MatchString(e.NewTag) && sha256Digest.MatchString(e.Digest)
		image := "lockctl:dev"
		switch {
		case version != "":
			require.True(t, pinned, "%s is not pinned for release %s (%+v): run hack/pin-image (docs/in-cluster.md)", file, version, e)
			require.Equal(t, version, e.NewTag, "%s pins the image of this release", file)
			image = e.NewName + ":" + e.NewTag + "@" + e.Digest
		case pinned:
			image = e.NewName + ":" + e.NewTag + "@" + e.Digest
		default:
			require.Equal(t, imageEntry{Name: "lockctl", NewTag: "dev"}, e, "%s in development runs lockctl:dev", file)
		}
		if want == "" {
			want = image
		}
		require.Equal(t, want, image, "%s runs the image deploy/ runs", file)
	}
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			n := 0
			for _, u := range render(t, v, "") {
				if u.GetKind() != "Deployment" && u.GetKind() != "CronJob" {
					continue
				}
				for _, c := range podContainers(t, u) {
					assert.Equal(t, want, c["image"], "%s, container %s", key(u), c["name"])
					n++
				}
			}
			assert.NotZero(t, n, "%s runs containers", v.name)
		})
	}
}

// podContainers returns the containers of a Deployment's or a CronJob's pod
// template.
func podContainers(t *testing.T, u *unstructured.Unstructured) []map[string]any {
	t.Helper()
	path := []string{"spec", "template", "spec", "containers"}
	if u.GetKind() == "CronJob" {
		path = []string{"spec", "jobTemplate", "spec", "template", "spec", "containers"}
	}
	list, found, err := unstructured.NestedSlice(u.Object, path...)
	require.NoError(t, err)
	require.True(t, found, "%s has %s", key(u), strings.Join(path, "."))
	var out []map[string]any
	for _, c := range list {
		out = append(out, c.(map[string]any))
	}
	return out
}
