package deploy_test

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock/record"
)

func TestMain(m *testing.M) {
	testenv.Main(m)
	clitest.Cleanup()
}

// TestIntegrationManifestsAccepted creates every variant's objects on the
// real API server with dryRun=All, as `kubectl apply -k deploy
// --dry-run=server` does: schema, defaulting and validation of the
// Deployment, CronJob and RBAC objects all run, nothing is stored.
func TestIntegrationManifestsAccepted(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	for _, v := range variants {
		t.Run(v.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			objs := render(t, v, ns)
			apply(t, env.RESTConfig, objs, true)
		})
	}
}

// TestIntegrationFreshCluster applies deploy/ and deploy/cronjob as they
// are, as `kubectl apply -k deploy --server-side` does on a cluster where
// nothing of lockctl exists yet: the Namespace comes first, so everything
// after it has a namespace to go into; the two share the Namespace and RBAC
// without conflict, and applying again changes nothing. The Deployment,
// its PodDisruptionBudget and the CronJob are stored.
func TestIntegrationFreshCluster(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	for _, dir := range []string{"deploy", "deploy/cronjob", "deploy"} {
		objs := renderAsIs(t, dir)
		require.Equal(t, "Namespace", objs[0].GetKind(), "%s starts with its Namespace", dir)
		serverSideApply(t, env.RESTConfig, objs)
	}
	_, err := env.Client.AppsV1().Deployments("lockctl").Get(t.Context(), "lockctl-reconcile", metav1.GetOptions{})
	assert.NoError(t, err, "the Deployment")
	_, err = env.Client.PolicyV1().PodDisruptionBudgets("lockctl").Get(t.Context(), "lockctl-reconcile", metav1.GetOptions{})
	assert.NoError(t, err, "the PodDisruptionBudget")
	_, err = env.Client.BatchV1().CronJobs("lockctl").Get(t.Context(), "lockctl-reconcile", metav1.GetOptions{})
	assert.NoError(t, err, "the CronJob")
}

// serverSideApply applies objs in order with server-side apply, as
// `kubectl apply --server-side` does.
func serverSideApply(t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err, key(u))
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		}
		_, err = ri.Apply(t.Context(), u.GetName(), u, metav1.ApplyOptions{FieldManager: "kubectl", Force: true})
		require.NoError(t, err, "the API server applies %s", key(u))
	}
}

// TestIntegrationShippedServiceAccount creates deploy/ in a namespace and
// runs the lockctl binary with a token of the ServiceAccount it ships: the
// shipped Roles are enough to lock, run a job, submit, reconcile and read
// logs and prune, and grant nothing outside the namespace or beyond it.
func TestIntegrationShippedServiceAccount(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	objs := render(t, variants[0], ns)
	apply(t, env.RESTConfig, objs, false)
	awaitRoles(t, env, ns, objs, rbacv1.Subject{Kind: rbacv1.ServiceAccountKind, Name: "lockctl", Namespace: ns})
	cfg, kubeconfig := serviceAccountConfig(t, env, ns, "lockctl")
	cli := func(args ...string) clitest.Outcome {
		t.Helper()
		return clitest.Run(t, 2*time.Minute, t.TempDir(), []string{"KUBECONFIG=" + kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + ns}, args...)
	}
	id := []string{"--owner", "acme", "--repo", "web", "--branch", "main", "--build", "1"}

	o := cli(append([]string{"acquire", "staging"}, id...)...)
	require.Equal(t, 0, o.Code, "acquire: %s", o.Stderr)
	o = cli("status")
	require.Equal(t, 0, o.Code, "status: %s", o.Stderr)
	assert.Contains(t, o.Stdout, "acme/web@main#1")
	o = cli(append([]string{"release", "staging"}, id...)...)
	require.Equal(t, 0, o.Code, "release: %s", o.Stderr)
	// The audit trail is written with the shipped Role.
	assert.Equal(t, []string{"Acquired", "Released"}, eventReasons(t, env, ns, record.Name("staging")), "the lock's Events")
	// history reads the holds kept in the lock's record.
	o = cli("history", "staging")
	require.Equal(t, 0, o.Code, "history: %s", o.Stderr)
	assert.Regexp(t, `acme/web@main#1\s.*released`, o.Stdout, "history shows the hold")

	// run: lock, submit, drive the job in-process, follow its pod and logs.
	o = cli(append([]string{"run", "--lock", "staging", "-f", testenv.WriteJob(t, "deploy-run", "0")}, id...)...)
	require.Equal(t, 0, o.Code, "run: %s", o.Stderr)
	assert.Contains(t, o.Stderr, `job "deploy-run" (build ID 1 of job `)
	assert.Subset(t, eventReasons(t, env, ns, "deploy-run"), []string{"Pending", "Success"}, "run's job state changes are Events on its record")

	// abort: the job's state change is an Event on its record.
	o = cli("submit", "-f", testenv.WriteJob(t, "deploy-abort", "0"))
	require.Equal(t, 0, o.Code, "submit: %s", o.Stderr)
	o = cli("abort", "deploy-abort")
	require.Equal(t, 0, o.Code, "abort: %s", o.Stderr)
	assert.Equal(t, []string{"Aborted"}, eventReasons(t, env, ns, "deploy-abort"), "abort is an Event on the job record")

	// submit, then cron passes of reconcile until the job is done.
	o = cli("submit", "-f", testenv.WriteJob(t, "deploy-cron", "0"))
	require.Equal(t, 0, o.Code, "submit: %s", o.Stderr)
	store := job.NewStore(env.Kube.CoreV1(), ns, job.StoreOptions{})
	require.Eventually(t, func() bool {
		o := cli("reconcile", "--once")
		require.Equal(t, 0, o.Code, "reconcile --once: %s", o.Stderr)
		j, err := store.Get(t.Context(), "deploy-cron")
		require.NoError(t, err)
		return j.Status.State == job.Success
	}, 2*time.Minute, time.Second, "reconcile --once passes drive the job to success")
	o = cli("logs", "deploy-cron")
	assert.Equal(t, 0, o.Code, "logs: %s", o.Stderr)
	o = cli("get", "jobs")
	assert.Equal(t, 0, o.Code, "get jobs: %s", o.Stderr)

	// prune, as the loop does every hour: both finished jobs go.
	o = cli("prune", "--older-than", "1ms", "--pod-older-than", "1ms")
	require.Equal(t, 0, o.Code, "prune: %s", o.Stderr)
	assert.Contains(t, o.Stdout, `deleted job "`+ns+`/deploy-cron"`)
	assert.Contains(t, o.Stdout, `deleted job "`+ns+`/deploy-run"`)
	left, err := store.List(t.Context(), job.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, left, "no job record left")

	// The Deployment's loop: ready once its caches are filled, metrics
	// served, a clean exit on SIGTERM.
	loop(t, kubeconfig, ns)

	// Not more: nothing outside the namespace, no Secrets, no cluster scope.
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	for _, ra := range []authorizationv1.ResourceAttributes{
		{Namespace: ns, Verb: "get", Resource: "secrets"},
		{Namespace: ns, Verb: "list", Resource: "secrets"},
		{Namespace: "default", Verb: "get", Resource: "configmaps"},
		{Namespace: "default", Verb: "create", Resource: "pods"},
		{Namespace: ns, Verb: "create", Resource: "pods", Subresource: "exec"},
		{Namespace: ns, Verb: "update", Resource: "pods"},
		{Namespace: ns, Verb: "create", Resource: "leases", Group: "coordination.k8s.io"},
		{Namespace: ns, Verb: "create", Resource: "rolebindings", Group: "rbac.authorization.k8s.io"},
		{Verb: "list", Resource: "nodes"},
		{Verb: "list", Resource: "namespaces"},
	} {
		review, err := cs.AuthorizationV1().SelfSubjectAccessReviews().Create(t.Context(), &authorizationv1.SelfSubjectAccessReview{
			Spec: authorizationv1.SelfSubjectAccessReviewSpec{ResourceAttributes: &ra},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		assert.False(t, review.Status.Allowed, "the shipped ServiceAccount may not %s %s/%s in %q", ra.Verb, ra.Resource, ra.Subresource, ra.Namespace)
	}
}

// loop runs `lockctl reconcile --metrics-addr` as the Deployment does, waits
// for /readyz and /healthz to answer 200 and /metrics to carry lockctl's
// metrics, then stops it with SIGTERM and expects exit 0.
func loop(t *testing.T, kubeconfig, ns string) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := ln.Addr().String()
	require.NoError(t, ln.Close())
	cmd := exec.Command(clitest.Binary(t), "reconcile", "--metrics-addr", addr)
	cmd.Env = []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "KUBECONFIG=" + kubeconfig, "LOCKCTL_LOCK_NAMESPACE=" + ns}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	defer func() { _ = cmd.Process.Kill() }()
	get := func(path string) (int, string) {
		resp, err := http.Get("http://" + addr + path)
		if err != nil {
			return 0, err.Error()
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode, string(body)
	}
	require.Eventually(t, func() bool { code, _ := get("/readyz"); return code == http.StatusOK },
		time.Minute, 100*time.Millisecond, "/readyz turns 200 once the caches are filled; stderr:\n%s", &stderr)
	code, body := get("/healthz")
	assert.Equal(t, http.StatusOK, code, body)
	code, body = get("/metrics")
	assert.Equal(t, http.StatusOK, code)
	assert.Contains(t, body, "lockctl_reconcile_duration_seconds", "the loop's metrics are exported")
	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	assert.NoError(t, cmd.Wait(), "exits 0 on SIGTERM; stderr:\n%s", &stderr)
}

// apply creates objs through the dynamic client, with dryRun=All when dry.
// A Namespace that exists already (the test's own) is left as it is.
func apply(t *testing.T, cfg *rest.Config, objs []*unstructured.Unstructured, dry bool) {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	require.NoError(t, err)
	cs, err := kubernetes.NewForConfig(cfg)
	require.NoError(t, err)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(cs.Discovery()))
	opts := metav1.CreateOptions{FieldValidation: metav1.FieldValidationStrict}
	if dry {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	for _, u := range objs {
		gvk := u.GroupVersionKind()
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		require.NoError(t, err, key(u))
		var ri dynamic.ResourceInterface = dyn.Resource(m.Resource)
		if m.Scope.Name() == "namespace" {
			ri = dyn.Resource(m.Resource).Namespace(u.GetNamespace())
		}
		_, err = ri.Create(t.Context(), u, opts)
		if u.GetKind() == "Namespace" && apierrors.IsAlreadyExists(err) {
			continue
		}
		require.NoError(t, err, "the API server accepts %s", key(u))
	}
}

// awaitRoles waits until the authorizer grants subject the rules of every
// Role in objs: the RBAC authorizer sees new Roles and RoleBindings through
// its informers, a moment after the create returned.
func awaitRoles(t *testing.T, env *testenv.Env, ns string, objs []*unstructured.Unstructured, subject rbacv1.Subject) {
	t.Helper()
	for _, u := range objs {
		if u.GetKind() != "Role" {
			continue
		}
		var role rbacv1.Role
		require.NoError(t, runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, &role), key(u))
		env.AwaitAllowed(t, ns, subject, role.Rules)
	}
}

// serviceAccountConfig returns a REST config and a kubeconfig file that
// authenticate with a token of the ServiceAccount sa in ns.
func serviceAccountConfig(t *testing.T, env *testenv.Env, ns, sa string) (*rest.Config, string) {
	t.Helper()
	tok, err := env.Client.CoreV1().ServiceAccounts(ns).CreateToken(t.Context(), sa, &authenticationv1.TokenRequest{
		Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: new(int64(3600))},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(clientcmdapi.Config{
		Clusters:       map[string]*clientcmdapi.Cluster{"test": {Server: env.RESTConfig.Host, CertificateAuthorityData: env.RESTConfig.CAData}},
		AuthInfos:      map[string]*clientcmdapi.AuthInfo{sa: {Token: tok.Status.Token}},
		Contexts:       map[string]*clientcmdapi.Context{"test": {Cluster: "test", AuthInfo: sa, Namespace: ns}},
		CurrentContext: "test",
	}, path))
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	require.NoError(t, err)
	return cfg, path
}

// eventReasons returns the reasons of the Events about the object named
// name in ns, as `kubectl get events --field-selector involvedObject.name=`
// lists them, oldest first.
func eventReasons(t *testing.T, env *testenv.Env, ns, name string) []string {
	t.Helper()
	list, err := env.Client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	require.NoError(t, err)
	items := list.Items
	sort.SliceStable(items, func(i, j int) bool { return items[i].EventTime.Before(&items[j].EventTime) })
	var out []string
	for _, ev := range items {
		out = append(out, ev.Reason)
	}
	return out
}
