package bench

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// BenchmarkFenceEdge measures how sharp a freeze window's edges are at the
// API server, with no lockctl process running: TARGETS enforced targets
// (LOCKCTL_BENCH_EDGE_TARGETS, default 20) share a window that opens at
// every minute and lasts 20 s; a user who holds no lock updates a
// ConfigMap in each target every 100 ms from a second before each edge
// to three seconds after it, for MINUTES minutes
// (LOCKCTL_BENCH_EDGE_MINUTES, default 3). A trial is one edge of one
// target: the time from the edge to the first refused write after it
// opens, or to the first admitted write after it closes. Reported: p50,
// p99 and max of each, the trials, and the writes judged on the wrong
// side of an edge (goal: none; all within 2 s, p50 under 1 s).
func BenchmarkFenceEdge(b *testing.B) {
	env := testenv.Get(b)
	ctx := b.Context()
	targets := envInt("LOCKCTL_BENCH_EDGE_TARGETS", 20)
	minutes := envInt("LOCKCTL_BENCH_EDGE_MINUTES", 3)
	const window = 20 * time.Second

	lockNS := env.Namespace(b)
	const user = "edge-writer"
	subject := rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}
	cfg := rest.CopyConfig(env.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cfg.QPS, cfg.Burst = -1, 0
	client, err := kubernetes.NewForConfig(cfg)
	require.NoError(b, err)
	_, err = env.Client.CoreV1().ConfigMaps(lockNS).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: record.FreezeWindowsName},
		Data:       map[string]string{record.FreezeWindowsKey: fmt.Sprintf("windows:\n- {name: minutely, schedule: \"* * * * *\", duration: %s, reason: edge}\n", window)},
	}, metav1.CreateOptions{})
	require.NoError(b, err)
	admin := lock.New(env.Kube.CoreV1(), env.Kube.CoreV1(), lockNS, clock.RealClock{}, lock.Options{})
	names := make([]string, targets)
	for i := range names {
		names[i] = env.Namespace(b)
		env.Grant(b, names[i], "writer", subject, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "create", "update"}}})
		env.AwaitAllowed(b, names[i], subject, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"create"}}})
		s := enforce.Settings{Target: names[i], LockNamespace: lockNS, Mode: enforce.ModeDeny}
		_, err := enforce.Enforce(ctx, env.Kube.AdmissionregistrationV1(), admin, s, enforce.EnforceOptions{})
		require.NoError(b, err)
		defer func() { _, _ = enforce.Uninstall(context.Background(), env.Kube.AdmissionregistrationV1(), s.Target) }()
		_, err = env.Client.CoreV1().ConfigMaps(names[i]).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "app"}}, metav1.CreateOptions{})
		require.NoError(b, err)
	}
	for _, name := range names {
		s := enforce.Settings{Target: name, LockNamespace: lockNS, Mode: enforce.ModeDeny}
		require.NoError(b, enforce.AwaitInEffect(ctx, env.Kube.CoreV1(), s, 50*time.Millisecond, 2*time.Minute))
	}

	var (
		mu                sync.Mutex
		opens, closes     Sample
		wrong, trials, nw int
	)
	// One edge of one target: write every 100 ms from a second before it
	// to three after it; the first write on the far side is the trial.
	// Each write is a create, whose time the API server sets: an update
	// by the manager of the one before it in the same second would carry
	// none (docs/enforcement.md).
	var lastBad string
	edge := func(target string, at time.Time, opening bool) {
		var first time.Duration = -1
		bad := 0
		for i, t := 0, at.Add(-time.Second); t.Before(at.Add(3 * time.Second)); i, t = i+1, t.Add(100*time.Millisecond) {
			time.Sleep(time.Until(t))
			name := fmt.Sprintf("probe-%d-%d-%t", at.Unix(), i, opening)
			sent := time.Now()
			_, err := client.CoreV1().ConfigMaps(target).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{})
			done := time.Now()
			if err != nil && !strings.Contains(err.Error(), "lockctl refused") {
				continue
			}
			refused := err != nil && strings.Contains(err.Error(), "lockctl refused")
			far := refused == opening
			switch {
			case done.Before(at) && far:
				bad++ // judged past the edge before the edge
				lastBad = fmt.Sprintf("%s at %s before the edge %s: %v", name, sent.Format(time.StampMilli), at.Format(time.StampMilli), err)
			case !sent.Before(at) && far && first < 0:
				first = done.Sub(at)
			case first >= 0 && !far:
				bad++ // judged before the edge after the edge
				lastBad = fmt.Sprintf("%s at %s after the edge %s: %v", name, sent.Format(time.StampMilli), at.Format(time.StampMilli), err)
			}
			mu.Lock()
			nw++
			mu.Unlock()
		}
		mu.Lock()
		defer mu.Unlock()
		trials++
		wrong += bad
		if first >= 0 {
			if opening {
				opens = append(opens, first)
			} else {
				closes = append(closes, first)
			}
		} else {
			wrong++
		}
	}
	start := time.Now().Truncate(time.Minute).Add(time.Minute)
	for m := range minutes {
		at := start.Add(time.Duration(m) * time.Minute)
		var wg sync.WaitGroup
		for _, target := range names {
			wg.Add(2)
			go func() { defer wg.Done(); edge(target, at, true) }()
			go func() { defer wg.Done(); edge(target, at.Add(window), false) }()
		}
		wg.Wait()
	}
	b.ReportMetric(MS(opens.Percentile(50)), "open-p50-ms")
	b.ReportMetric(MS(opens.Percentile(99)), "open-p99-ms")
	b.ReportMetric(MS(opens.Max()), "open-max-ms")
	b.ReportMetric(MS(closes.Percentile(50)), "close-p50-ms")
	b.ReportMetric(MS(closes.Percentile(99)), "close-p99-ms")
	b.ReportMetric(MS(closes.Max()), "close-max-ms")
	b.ReportMetric(float64(trials), "trials")
	b.ReportMetric(float64(wrong), "wrong-side")
	b.ReportMetric(0, "ns/op")
	b.Logf("freeze window edges at the API server, %d targets, %d writes, nothing writing the locks: opening %s; closing %s; %d trials, %d writes on the wrong side",
		targets, nw, opens, closes, trials, wrong)
	if lastBad != "" {
		b.Logf("a write on the wrong side: %s", lastBad)
	}
}
