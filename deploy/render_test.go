package deploy_test

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/api/types"
	"sigs.k8s.io/kustomize/kyaml/filesys"
	"sigs.k8s.io/yaml"
)

// repoRoot is the repository's top directory.
func repoRoot() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Dir(filepath.Dir(file))
}

// variant is an overlay a user would write on top of deploy/.
type variant struct {
	name       string
	resources  []string // relative to deploy/
	components []string // relative to deploy/
}

var variants = []variant{
	{name: "loop", resources: []string{"."}},
	{name: "cronjob", resources: []string{"cronjob"}},
	{name: "loop with node reader", resources: []string{"."}, components: []string{"components/node-reader"}},
	{name: "loop and cronjob", resources: []string{"."}, components: []string{"components/cronjob"}},
}

// renderAsIs builds the kustomization in dir (relative to the repository)
// as `kubectl kustomize dir` does, with kustomize's default load
// restrictions.
func renderAsIs(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	m, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), filepath.Join(repoRoot(), dir))
	require.NoError(t, err, "kustomize build %s", dir)
	out, err := m.AsYaml()
	require.NoError(t, err)
	return decodeAll(t, out)
}

// render builds v as `kubectl kustomize` would, in an overlay that sets
// namespace (none when empty), and returns the objects.
func render(t *testing.T, v variant, namespace string) []*unstructured.Unstructured {
	t.Helper()
	deploy := filepath.Join(repoRoot(), "deploy")
	k := types.Kustomization{
		TypeMeta:  types.TypeMeta{APIVersion: types.KustomizationVersion, Kind: types.KustomizationKind},
		Namespace: namespace,
	}
	dir := t.TempDir()
	// NOTE: kustomize refuses absolute paths to other kustomizations.
	rel := func(p string) string {
		r, err := filepath.Rel(dir, filepath.Join(deploy, p))
		require.NoError(t, err)
		return r
	}
	for _, r := range v.resources {
		k.Resources = append(k.Resources, rel(r))
	}
	for _, c := range v.components {
		k.Components = append(k.Components, rel(c))
	}
	data, err := yaml.Marshal(k)
	require.NoError(t, err)
	require.NoError(t, os.WriteFile(filepath.Join(dir, "kustomization.yaml"), data, 0o600))

	opts := krusty.MakeDefaultOptions()
	opts.LoadRestrictions = types.LoadRestrictionsNone // the overlay lives outside deploy/
	m, err := krusty.MakeKustomizer(opts).Run(filesys.MakeFsOnDisk(), dir)
	require.NoError(t, err, "kustomize build %s", v.name)
	out, err := m.AsYaml()
	require.NoError(t, err)
	return decodeAll(t, out)
}

// decodeAll splits a multi-document YAML stream into objects.
func decodeAll(t *testing.T, data []byte) []*unstructured.Unstructured {
	t.Helper()
	var objs []*unstructured.Unstructured
	for _, doc := range bytes.Split(data, []byte("\n---\n")) {
		if len(bytes.TrimSpace(doc)) == 0 {
			continue
		}
		u := &unstructured.Unstructured{}
		require.NoError(t, yaml.Unmarshal(doc, &u.Object), "decode:\n%s", doc)
		if len(u.Object) > 0 {
			objs = append(objs, u)
		}
	}
	return objs
}

// key names an object as Kind/namespace/name.
func key(u *unstructured.Unstructured) string {
	return fmt.Sprintf("%s/%s/%s", u.GetKind(), u.GetNamespace(), u.GetName())
}

func keys(objs []*unstructured.Unstructured) string {
	var ks []string
	for _, u := range objs {
		ks = append(ks, key(u))
	}
	return strings.Join(ks, " ")
}
