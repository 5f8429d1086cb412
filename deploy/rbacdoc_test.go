package deploy_test

import (
	"bytes"
	"os"
	"path/filepath"
	"sort"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/yaml"
)

// TestRBACDocMatchesDeploy checks that docs/rbac.md shows exactly the Roles
// and ClusterRoles that deploy/ ships (with the optional node reader), rule
// for rule, and binds the same roles: the document is what an administrator
// reviews, deploy/ is what runs.
func TestRBACDocMatchesDeploy(t *testing.T) {
	t.Parallel()
	doc := docRBAC(t)
	shipped := map[string][]rbacv1.PolicyRule{}
	var shippedRefs []string
	for _, u := range render(t, variant{resources: []string{"."}, components: []string{"components/node-reader"}}, "") {
		switch u.GetKind() {
		case "Role", "ClusterRole":
			shipped[u.GetKind()+"/"+u.GetName()] = rulesOf(t, u)
		case "RoleBinding", "ClusterRoleBinding":
			ref, _, _ := unstructured.NestedStringMap(u.Object, "roleRef")
			shippedRefs = append(shippedRefs, u.GetKind()+"→"+ref["kind"]+"/"+ref["name"])
		}
	}
	require.NotEmpty(t, shipped, "deploy/ ships roles")
	assert.Equal(t, sortedKeys(doc.roles), sortedKeys(shipped), "the same Roles and ClusterRoles in docs/rbac.md and deploy/")
	for name, rules := range shipped {
		assert.Equal(t, doc.roles[name], rules, "%s: docs/rbac.md and deploy/ grant the same rules", name)
	}
	sort.Strings(shippedRefs)
	assert.Equal(t, doc.bindings, shippedRefs, "the same roles are bound in docs/rbac.md and deploy/")
}

type rbacDoc struct {
	roles    map[string][]rbacv1.PolicyRule // Kind/name → rules
	bindings []string                       // Kind→roleRef kind/name, sorted
}

// docRBAC reads the RBAC objects of the YAML blocks of docs/rbac.md.
func docRBAC(t *testing.T) rbacDoc {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(repoRoot(), "docs", "rbac.md"))
	require.NoError(t, err)
	d := rbacDoc{roles: map[string][]rbacv1.PolicyRule{}}
	for _, block := range bytes.Split(data, []byte("```yaml\n"))[1:] {
		block, _, _ = bytes.Cut(block, []byte("```"))
		for _, u := range decodeAll(t, block) {
			switch u.GetKind() {
			case "Role", "ClusterRole":
				d.roles[u.GetKind()+"/"+u.GetName()] = rulesOf(t, u)
			case "RoleBinding", "ClusterRoleBinding":
				ref, _, _ := unstructured.NestedStringMap(u.Object, "roleRef")
				d.bindings = append(d.bindings, u.GetKind()+"→"+ref["kind"]+"/"+ref["name"])
			}
		}
	}
	sort.Strings(d.bindings)
	return d
}

func rulesOf(t *testing.T, u *unstructured.Unstructured) []rbacv1.PolicyRule {
	t.Helper()
	var r rbacv1.ClusterRole
	data, err := yaml.Marshal(u.Object)
	require.NoError(t, err)
	require.NoError(t, yaml.UnmarshalStrict(data, &r), key(u))
	return r.Rules
}

func sortedKeys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}
