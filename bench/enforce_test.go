package bench

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
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
)

// BenchmarkEnforceCost measures what lockctl enforce adds to a write: N
// updates of a ConfigMap by the lock's holder (a user of its own,
// impersonated) in a namespace whose lock is enforced in deny mode,
// strictly (the object carries the token), and N in a namespace that is
// not, interleaved one for one in one run so both see the same load. N is
// LOCKCTL_BENCH_ENFORCE_WRITES (default 500). Reported: p50 and p99 of
// each, and the difference of the p50s.
func BenchmarkEnforceCost(b *testing.B) {
	env := testenv.Get(b)
	n := envInt("LOCKCTL_BENCH_ENFORCE_WRITES", 500)
	var with, without Sample
	for range b.N {
		w, wo := enforceCost(b, env, n)
		with, without = append(with, w...), append(without, wo...)
	}
	b.ReportMetric(MS(without.Percentile(50)), "without-p50-ms")
	b.ReportMetric(MS(without.Percentile(99)), "without-p99-ms")
	b.ReportMetric(MS(with.Percentile(50)), "with-p50-ms")
	b.ReportMetric(MS(with.Percentile(99)), "with-p99-ms")
	b.ReportMetric(MS(with.Percentile(50)-without.Percentile(50)), "added-p50-ms")
	b.ReportMetric(0, "ns/op")
	b.Logf("ConfigMap update by the holder, %d each: without the policy %s; with it (deny, strict) %s", len(with), without, with)
}

func enforceCost(b *testing.B, env *testenv.Env, n int) (with, without Sample) {
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

	locks := lock.New(kc.CoreV1(), kc.CoreV1(), lockNS, clock.RealClock{}, lock.Options{})
	h, err := locks.Acquire(ctx, lock.Request{
		Target: enforced, User: user, TTL: time.Hour,
		Identity: lock.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"},
	})
	require.NoError(b, err)
	s := enforce.Settings{Target: enforced, LockNamespace: lockNS, Mode: enforce.ModeDeny, Strict: true}
	_, err = enforce.Install(ctx, env.Kube.AdmissionregistrationV1(), s)
	require.NoError(b, err)
	defer func() { _, _ = enforce.Uninstall(context.Background(), env.Kube.AdmissionregistrationV1(), enforced) }()
	require.NoError(b, enforce.AwaitInEffect(ctx, env.Kube.CoreV1(), s, 20*time.Millisecond, time.Minute))

	objects := map[string]*corev1.ConfigMap{}
	for _, ns := range []string{enforced, plain} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app", Annotations: map[string]string{enforce.TokenAnnotation: h.Token}}}
		// NOTE: the policy's informer may not have the lock's version with
		// the token yet: the first create is tried until admitted.
		require.NoError(b, wait.PollUntilContextTimeout(ctx, 20*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			out, err := client.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
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
		out, err := client.CoreV1().ConfigMaps(ns).Update(ctx, cm, metav1.UpdateOptions{})
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
