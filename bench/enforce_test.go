package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// BenchmarkEnforceCost measures what lockctl enforce adds to a write, on
// a control plane of its own started for it: N updates of a ConfigMap by
// the lock's holder (a user of its own, impersonated, over client-go's one
// keep-alive connection) in a namespace whose lock is enforced in deny
// mode, strictly (the object carries the token), and N in a namespace that
// is not, interleaved one for one so both see the same load. Three rounds:
// on the fresh API server; with a daily freeze window on the lock (the
// summary then lists 91 intervals); and after policy churn (CHURN policies
// and bindings of a generic parameterised kind created and deleted). N is
// LOCKCTL_BENCH_ENFORCE_WRITES (default 500), CHURN
// LOCKCTL_BENCH_ENFORCE_CHURN (default 200). Reported per round: p50 and
// p99 of each, and the difference of the p50s.
func BenchmarkEnforceCost(b *testing.B) {
	env, err := testenv.Start(b.Context(), testenv.Options{})
	require.NoError(b, err)
	defer env.Stop()
	n := envInt("LOCKCTL_BENCH_ENFORCE_WRITES", 500)
	churn := envInt("LOCKCTL_BENCH_ENFORCE_CHURN", 200)
	report := func(round string, with, without Sample) {
		b.ReportMetric(MS(without.Percentile(50)), round+"-without-p50-ms")
		b.ReportMetric(MS(with.Percentile(50)), round+"-with-p50-ms")
		b.ReportMetric(MS(with.Percentile(99)), round+"-with-p99-ms")
		b.ReportMetric(MS(with.Percentile(50)-without.Percentile(50)), round+"-added-p50-ms")
		b.Logf("%s: ConfigMap update by the holder, %d each: without the policy %s; with it (deny, strict) %s", round, len(with), without, with)
	}
	for range b.N {
		w, wo := enforceCost(b, env, n, false)
		report("fresh", w, wo)
		w, wo = enforceCost(b, env, n, true)
		report("windows", w, wo)
		churnPolicies(b, env, churn)
		w, wo = enforceCost(b, env, n, false)
		report("churned", w, wo)
	}
	b.ReportMetric(0, "ns/op")
}

// churnPolicies creates and deletes n parameterised policies and their
// bindings, as clusters that install and remove policies over time do.
func churnPolicies(b *testing.B, env *testenv.Env, n int) {
	b.Helper()
	ctx := b.Context()
	adm := env.Client.AdmissionregistrationV1()
	fail := admissionregistrationv1.Fail
	for i := range n {
		name := fmt.Sprintf("churn-%d", i)
		p := &admissionregistrationv1.ValidatingAdmissionPolicy{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicySpec{
				FailurePolicy: &fail,
				ParamKind:     &admissionregistrationv1.ParamKind{APIVersion: "v1", Kind: "ConfigMap"},
				MatchConstraints: &admissionregistrationv1.MatchResources{ResourceRules: []admissionregistrationv1.NamedRuleWithOperations{{
					RuleWithOperations: admissionregistrationv1.RuleWithOperations{
						Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Update},
						Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
					},
				}}},
				Validations: []admissionregistrationv1.Validation{{Expression: "object.metadata.name != params.metadata.name"}},
			},
		}
		_, err := adm.ValidatingAdmissionPolicies().Create(ctx, p, metav1.CreateOptions{})
		require.NoError(b, err)
		bd := &admissionregistrationv1.ValidatingAdmissionPolicyBinding{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: admissionregistrationv1.ValidatingAdmissionPolicyBindingSpec{
				PolicyName:        name,
				ParamRef:          &admissionregistrationv1.ParamRef{Name: name, Namespace: "default", ParameterNotFoundAction: ptr(admissionregistrationv1.AllowAction)},
				ValidationActions: []admissionregistrationv1.ValidationAction{admissionregistrationv1.Deny},
			},
		}
		_, err = adm.ValidatingAdmissionPolicyBindings().Create(ctx, bd, metav1.CreateOptions{})
		require.NoError(b, err)
		require.NoError(b, adm.ValidatingAdmissionPolicyBindings().Delete(ctx, name, metav1.DeleteOptions{}))
		require.NoError(b, adm.ValidatingAdmissionPolicies().Delete(ctx, name, metav1.DeleteOptions{}))
	}
}

func ptr[T any](v T) *T { return &v }

func enforceCost(b *testing.B, env *testenv.Env, n int, windows bool) (with, without Sample) {
	b.Helper()
	ctx := b.Context()
	enforced, plain, lockNS := env.Namespace(b), env.Namespace(b), env.Namespace(b)
	const user = "deployer"
	subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}
	all := []string{"get", "list", "watch", "create", "update", "patch", "delete"}
	for _, ns := range []string{enforced, plain, lockNS} {
		env.Grant(b, ns, "writer", subject, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: all}})
	}
	env.Grant(b, lockNS, "events", subject, []rbacv1.PolicyRule{{APIGroups: []string{"events.k8s.io"}, Resources: []string{"events"}, Verbs: []string{"create"}}})
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cfg.QPS, cfg.Burst = -1, 0
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(b, err)
	kc, err := kube.NewForConfig(cfg)
	require.NoError(b, err)

	if windows {
		// A daily window twelve hours away: never open during the run,
		// listed as 91 intervals in the lock's summary.
		hour := (time.Now().UTC().Hour() + 12) % 24
		_, err := env.Client.CoreV1().ConfigMaps(lockNS).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Name: record.FreezeWindowsName},
			Data:       map[string]string{record.FreezeWindowsKey: fmt.Sprintf("windows:\n- {name: nightly, schedule: \"0 %d * * *\", duration: 1h, reason: batch}\n", hour)},
		}, metav1.CreateOptions{})
		require.NoError(b, err)
	}
	locks := lock.New(kc.CoreV1(), kc.CoreV1(), lockNS, clock.RealClock{}, lock.Options{})
	h, err := locks.Acquire(ctx, lock.Request{
		Target: enforced, User: user, TTL: time.Hour,
		Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"},
	})
	require.NoError(b, err)
	s := enforce.Settings{Target: enforced, LockNamespace: lockNS, Mode: enforce.ModeDeny, Strict: true}
	admin := lock.New(env.Kube.CoreV1(), env.Kube.CoreV1(), lockNS, clock.RealClock{}, lock.Options{})
	_, err = enforce.Enforce(ctx, env.Kube.AdmissionregistrationV1(), admin, s, enforce.EnforceOptions{})
	require.NoError(b, err)
	defer func() { _, _ = enforce.Uninstall(context.Background(), env.Kube.AdmissionregistrationV1(), enforced) }()
	require.NoError(b, enforce.AwaitInEffect(ctx, env.Kube.CoreV1(), s, 20*time.Millisecond, time.Minute))

	objects := map[string]*corev1.ConfigMap{}
	for _, ns := range []string{enforced, plain} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Annotations: map[string]string{enforce.TokenAnnotation: h.Token}}}
		// NOTE: the policy's informer may not have the lock's version with
		// the token yet: the first create is tried until admitted.
		require.NoError(b, wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			out, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{FieldManager: "deploy"})
			if err != nil && strings.Contains(err.Error(), "lockctl refused") {
				return false, nil
			}
			objects[ns] = out
			return err == nil, err
		}))
	}
	write := func(ns string, i int) time.Duration {
		cm := objects[ns].DeepCopy()
		cm.Data = map[string]string{"i": fmt.Sprint(i)}
		start := time.Now()
		out, err := client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "deploy"})
		d := time.Since(start)
		require.NoError(b, err, "write %d to %s", i, ns)
		objects[ns] = out
		return d
	}
	for i := range n {
		with = append(with, write(enforced, i))
		without = append(without, write(plain, i))
	}
	return with, without
}
