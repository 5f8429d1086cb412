package reliability

import (
	"bytes"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"sigs.k8s.io/yaml"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// TestIntegrationLeastPrivilege runs the lockctl binary with a
// ServiceAccount token bound only to the lock Role of docs/rbac.md (read
// from that file), then with the same Role less one verb, and checks that
// the refusal names the verb and the resource.
func TestIntegrationLeastPrivilege(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	role := docRole(t, "lockctl-lock")

	t.Run("the documented Role is enough", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		cli := boundCLI(t, env, ns, role.Rules)
		id := []string{"--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1"}

		o := cli(append([]string{"acquire", "staging", "--ttl", "5m"}, id...)...)
		require.Equal(t, 0, o.Code, "acquire a free lock: %s", o.Stderr)
		assert.NotEmpty(t, strings.TrimSpace(o.Stdout), "prints the fencing token")

		o = cli("status")
		require.Equal(t, 0, o.Code, "status: %s", o.Stderr)
		assert.Contains(t, o.Stdout, "acme/web@main#1", "shows the holder")

		// A second contender queues (update) and gives up at its timeout.
		o = cli("acquire", "staging", "--owner", "acme", "--repo", "api", "--branch", "main", "--build", "1", "--timeout", "2s", "--progress", "plain")
		assert.Equal(t, 4, o.Code, "times out waiting, with the documented exit code: %s", o.Stderr)

		o = cli(append([]string{"release", "staging"}, id...)...)
		require.Equal(t, 0, o.Code, "release: %s", o.Stderr)
		o = cli("status", "staging")
		assert.Equal(t, 0, o.Code, "status of a free lock: %s", o.Stderr)
	})

	t.Run("a holder in a pod needs the pods rule", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		pod, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "holder"},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		admin := lockClient(t, env.RESTConfig, ns)
		_, err = admin.Acquire(t.Context(), lock.Request{Target: "staging", Identity: clitest.Identity("web", 1), Pod: &record.PodRef{Namespace: ns, Name: pod.Name}})
		require.NoError(t, err)

		full := boundCLI(t, env, ns, role.Rules)
		o := full("status", "staging")
		require.Equal(t, 0, o.Code, "status with the documented Role: %s", o.Stderr)
		assert.Contains(t, o.Stdout, "pod "+ns+"/holder", "judges the holder by its pod")

		noPods := boundCLI(t, env, ns, without(role.Rules, "pods", ""))
		o = noPods("acquire", "staging", "--owner", "acme", "--repo", "api", "--branch", "main", "--build", "1", "--timeout", "10s")
		assert.Equal(t, 1, o.Code, "refused: %s", o.Stderr)
		assert.Contains(t, o.Stderr, "permission denied", "says it is a permission problem")
		assert.Contains(t, o.Stderr, `cannot get resource "pods"`, "names the verb and resource")
	})

	t.Run("run without watch on pods fails before writing anything", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		rules := without(append(append([]rbacv1.PolicyRule{}, role.Rules...), docRole(t, "lockctl-jobs").Rules...), "pods", "watch")
		cli := boundCLI(t, env, ns, rules)
		jobFile := filepath.Join(t.TempDir(), "job.yaml")
		require.NoError(t, os.WriteFile(jobFile, []byte(`apiVersion: lockctl.dev/v1alpha1
kind: Job
metadata:
  generateName: deploy-web-
spec:
  job: deploy-web
  type: periodic
  cluster: default
  podSpec:
    containers: [{name: main, image: alpine, command: [sh, -c, "true"]}]
`), 0o600))
		start := time.Now()
		o := cli("run", "--lock", "staging", "--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1", "-f", jobFile)
		t.Logf("run -f without watch pods -> exit %d in %s\n%s", o.Code, time.Since(start).Round(time.Millisecond), o.Stderr)
		assert.Equal(t, 1, o.Code, "refused with exit 1")
		assert.Contains(t, o.Stderr, "cannot watch pods", "names the verb and resource")
		cms, err := env.Client.CoreV1().ConfigMaps(ns).List(t.Context(), metav1.ListOptions{})
		require.NoError(t, err)
		for _, cm := range cms.Items {
			assert.NotContains(t, cm.Name, "lockctl", "nothing written: no lock and no job record, found %q", cm.Name)
		}
	})

	for _, verb := range []string{"update", "create", "delete", "watch"} {
		t.Run("without "+verb+" configmaps", func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			admin := lockClient(t, env.RESTConfig, ns)
			cli := boundCLI(t, env, ns, without(role.Rules, "configmaps", verb))
			var args []string
			switch verb {
			case "update", "watch": // join the queue of a held lock, and wait
				_, err := admin.Acquire(t.Context(), lock.Request{Target: "staging", Identity: clitest.Identity("web", 1)})
				require.NoError(t, err)
				args = []string{"acquire", "staging", "--owner", "acme", "--repo", "api", "--branch", "main", "--build", "1", "--timeout", "5s"}
			case "create": // take a free lock
				args = []string{"acquire", "staging", "--owner", "acme", "--repo", "api", "--branch", "main", "--build", "1"}
			case "delete": // remove a corrupt lock (a released one is kept, free, for its history)
				_, err := env.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
					Name:        record.Name("staging"),
					Labels:      map[string]string{record.ManagedByLabel: record.ManagedByValue, record.KindLabel: record.KindValue},
					Annotations: map[string]string{record.RecordAnnotation: "{"},
				}}, metav1.CreateOptions{})
				require.NoError(t, err)
				args = []string{"release", "staging", "--force"}
			}
			o := cli(args...)
			t.Logf("%v -> exit %d\n%s", args, o.Code, o.Stderr)
			assert.Equal(t, 1, o.Code, "refused with exit 1")
			assert.Contains(t, o.Stderr, "permission denied", "says it is a permission problem")
			assert.Contains(t, o.Stderr, `cannot `+verb+` resource "configmaps"`, "names the verb and resource")
			assert.Contains(t, o.Stderr, "docs/rbac.md", "points at the documented Role")
		})
	}
}

// docRole reads the Role called name from the YAML blocks of docs/rbac.md.
func docRole(t *testing.T, name string) *rbacv1.Role {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	data, err := os.ReadFile(filepath.Join(filepath.Dir(file), "..", "docs", "rbac.md"))
	require.NoError(t, err)
	for _, block := range bytes.Split(data, []byte("```yaml\n"))[1:] {
		block, _, _ = bytes.Cut(block, []byte("```"))
		for _, doc := range bytes.Split(block, []byte("\n---\n")) {
			var meta metav1.TypeMeta
			require.NoError(t, yaml.Unmarshal(doc, &meta), "docs/rbac.md YAML:\n%s", doc)
			if meta.Kind != "Role" {
				continue
			}
			var r rbacv1.Role
			require.NoError(t, yaml.UnmarshalStrict(doc, &r), "docs/rbac.md YAML:\n%s", doc)
			if r.Name == name {
				return &r
			}
		}
	}
	t.Fatalf("docs/rbac.md has no Role %q", name)
	return nil
}

// without returns rules less verb on resource; "" drops every verb.
func without(rules []rbacv1.PolicyRule, resource, verb string) []rbacv1.PolicyRule {
	var out []rbacv1.PolicyRule
	for _, r := range rules {
		r = *r.DeepCopy()
		if len(r.Resources) == 1 && r.Resources[0] == resource {
			if verb == "" {
				continue
			}
			var verbs []string
			for _, v := range r.Verbs {
				if v != verb {
					verbs = append(verbs, v)
				}
			}
			r.Verbs = verbs
		}
		out = append(out, r)
	}
	return out
}

// boundCLI creates a ServiceAccount bound to a Role with rules in ns, and
// returns a function that runs lockctl as that ServiceAccount, with ns as
// the lock namespace.
func boundCLI(t *testing.T, env *testenv.Env, ns string, rules []rbacv1.PolicyRule) func(args ...string) clitest.Outcome {
	t.Helper()
	ctx := t.Context()
	c := env.Client
	sa, err := c.CoreV1().ServiceAccounts(ns).Create(ctx, &corev1.ServiceAccount{
		ObjectMeta: metav1.ObjectMeta{GenerateName: "deployer-"},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	env.Grant(t, ns, sa.Name, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: sa.Name, Namespace: ns}, rules)
	tok, err := c.CoreV1().ServiceAccounts(ns).CreateToken(ctx, sa.Name, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))},
	}, metav1.CreateOptions{})
	require.NoError(t, err)

	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"test": {Server: env.RESTConfig.Host, CertificateAuthorityData: env.RESTConfig.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{"deployer": {Token: tok.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{"test": {Cluster: "test", AuthInfo: "deployer", Namespace: ns}},
		CurrentContext: "test",
	}, path))
	return func(args ...string) clitest.Outcome {
		t.Helper()
		return clitest.Run(t, time.Minute, os.TempDir(), []string{"KUBECONFIG=" + path, "LOCKCTL_LOCK_NAMESPACE=" + ns}, args...)
	}
}
