package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/preflight"
)

// closedPortClient returns a clientset for an API server address nothing
// listens on: every call is refused at once.
func closedPortClient(t *testing.T) kube.Interface {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	addr := l.Addr().String()
	require.NoError(t, l.Close())
	cs, err := kube.NewForConfig(&rest.Config{Host: "https://" + addr, TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	require.NoError(t, err)
	return cs
}

// silentClient returns a clientset for an API server that accepts
// connections and never answers, as a host behind a firewall that drops
// packets would.
func silentClient(t *testing.T) kube.Interface {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	var (
		mu    sync.Mutex
		conns []net.Conn
	)
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	cs, err := kube.NewForConfig(&rest.Config{Host: "https://" + l.Addr().String(), TLSClientConfig: rest.TLSClientConfig{Insecure: true}})
	require.NoError(t, err)
	return cs
}

// secondCluster starts a control plane of the test's own, with the test's
// namespace.
func (it *itest) secondCluster() *testenv.Env {
	it.t.Helper()
	ctx, cancel := context.WithTimeout(it.t.Context(), testenv.SharedStartTimeout)
	defer cancel()
	second, err := testenv.Start(ctx, testenv.Options{})
	require.NoError(it.t, err, "second control plane")
	it.t.Cleanup(second.Stop)
	_, err = second.Client.CoreV1().Namespaces().Create(it.t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: it.ns}}, metav1.CreateOptions{})
	require.NoError(it.t, err)
	return second
}

func onCluster(alias string) func(*job.Job) { return func(j *job.Job) { j.Spec.Cluster = alias } }

// A build cluster whose API server goes away stops nothing else: the other
// cluster's jobs start at once, the away cluster is recorded unreachable
// with the reason, its triggered job stays triggered and its pending job
// keeps its state; once it is back, its jobs go on.
func TestIntegrationBuildClusterAwayAndBack(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	far := it.secondCluster()
	it.run(Options{Log: testLog(t)}, map[string]Clientset{"default": it.env.Kube, "far": far.Kube})

	it.submit("far-running", onCluster("far"))
	it.waitState("far-running", job.Pending)
	require.Eventually(t, func() bool {
		p, err := far.Client.CoreV1().Pods(it.ns).Get(t.Context(), "far-running", metav1.GetOptions{})
		return err == nil && p.Status.Phase == corev1.PodRunning
	}, waitFor, 50*time.Millisecond)

	restarted := make(chan error, 1)
	down := 30 * time.Second
	go func() { restarted <- far.RestartAPIServer(context.WithoutCancel(t.Context()), down) }()
	cms := it.env.Client.CoreV1().ConfigMaps(it.ns)
	require.Eventually(t, func() bool {
		st, err := ReadClusterStatus(t.Context(), cms)
		return err == nil && st["far"].State == ClusterUnreachable
	}, waitFor, 100*time.Millisecond, "the away cluster is recorded unreachable")
	st, err := ReadClusterStatus(t.Context(), cms)
	require.NoError(t, err)
	assert.Contains(t, st["far"].Message, "connection refused", "with the reason")
	assert.Equal(t, ClusterReachable, st["default"].State)

	it.submit("near", exits("0", "100ms"))
	it.submit("far-new", onCluster("far"))
	start := time.Now()
	it.waitState("near", job.Success)
	t.Logf("a job of the reachable cluster succeeded %s after it was submitted, the other cluster away", time.Since(start).Round(time.Millisecond))
	for name, want := range map[string]job.State{"far-new": job.Triggered, "far-running": job.Pending} {
		j, err := it.store.Get(t.Context(), name)
		require.NoError(t, err)
		assert.Equal(t, want, j.Status.State, "%s keeps its state while its cluster is away: %s", name, j.Status.Description)
		assert.Zero(t, j.Status.Revivals, "%s: nothing was lost", name)
	}

	require.NoError(t, <-restarted, "far's API server is back")
	back := time.Now()
	it.waitState("far-new", job.Pending)
	t.Logf("the waiting job of the cluster that came back started %s after its API server was ready", time.Since(back).Round(time.Millisecond))
	_, err = far.Client.CoreV1().Pods(it.ns).Patch(t.Context(), "far-running", "application/merge-patch+json",
		[]byte(`{"metadata":{"annotations":{"`+testenv.AnnotationExitCode+`":"0"}}}`), metav1.PatchOptions{})
	require.NoError(t, err)
	j := it.waitState("far-running", job.Success)
	assert.Zero(t, j.Status.Revivals, "the pod that ran through the outage was never taken for lost")
	require.Eventually(t, func() bool {
		st, err := ReadClusterStatus(t.Context(), cms)
		return err == nil && st["far"].State == ClusterReachable
	}, waitFor, 100*time.Millisecond, "and it is recorded reachable again")
}

// --once with build clusters that refuse connections or never answer
// drives the jobs of the cluster that answers, leaves the others' as they
// are, and returns in bounded time naming them.
func TestIntegrationOnceWithUnreachableClusters(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	it.submit("near")
	it.submit("refused", onCluster("refused"))
	it.submit("silent", onCluster("silent"))
	c, err := NewController(it.env.Kube, it.ns, map[string]Clientset{
		"default": it.env.Kube, "refused": closedPortClient(t), "silent": silentClient(t),
	}, Options{})
	require.NoError(t, err)

	start := time.Now()
	err = c.RunOnce(t.Context())
	took := time.Since(start)
	t.Logf("--once with one cluster refusing and one silent took %s", took.Round(time.Millisecond))

	var away *UnreachableClustersError
	require.ErrorAs(t, err, &away)
	assert.Contains(t, away.Clusters, "refused")
	assert.Contains(t, away.Clusters, "silent")
	assert.NotContains(t, away.Clusters, "default")
	assert.Contains(t, err.Error(), `"refused" (`)
	assert.Less(t, took, probeTimeout+syncTimeout, "bounded by one probe, whatever the clusters do")
	for name, want := range map[string]job.State{"near": job.Pending, "refused": job.Triggered, "silent": job.Triggered} {
		j, err := it.store.Get(t.Context(), name)
		require.NoError(t, err)
		assert.Equal(t, want, j.Status.State, "%s: %s", name, j.Status.Description)
	}
	st, err := ReadClusterStatus(t.Context(), it.env.Client.CoreV1().ConfigMaps(it.ns))
	require.NoError(t, err)
	assert.Equal(t, ClusterUnreachable, st["refused"].State)
	assert.Equal(t, ClusterUnreachable, st["silent"].State)
	assert.Equal(t, ClusterReachable, st["default"].State)
}

// Cancelling (the first SIGINT or SIGTERM) ends Run and RunOnce within
// seconds while they wait for a build cluster that never answers.
func TestIntegrationCancelWhileConnecting(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	it.submit("silent", onCluster("silent"))
	for _, once := range []bool{false, true} {
		c, err := NewController(it.env.Kube, it.ns, map[string]Clientset{"silent": silentClient(t)}, Options{})
		require.NoError(t, err)
		ctx, cancel := context.WithCancel(t.Context())
		done := make(chan error, 1)
		go func() {
			if once {
				done <- c.RunOnce(ctx)
			} else {
				done <- c.Run(ctx)
			}
		}()
		time.Sleep(2 * time.Second)
		cancel()
		cancelled := time.Now()
		select {
		case err := <-done:
			t.Logf("once=%v: returned %s after the cancel: %v", once, time.Since(cancelled).Round(time.Millisecond), err)
			if once {
				assert.ErrorIs(t, err, context.Canceled)
			} else {
				assert.NoError(t, err)
			}
		case <-time.After(shutdownGrace + 5*time.Second):
			t.Fatalf("once=%v: still running %s after the cancel", once, shutdownGrace+5*time.Second)
		}
	}
}

// An unreachable job API server is an error at once, not a wait.
func TestIntegrationJobAPIServerUnreachable(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	for _, once := range []bool{false, true} {
		cs := closedPortClient(t)
		c, err := NewController(cs, it.ns, map[string]Clientset{"default": it.env.Kube}, Options{})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), probeTimeout+5*time.Second)
		if once {
			err = c.RunOnce(ctx)
		} else {
			err = c.Run(ctx)
		}
		cancel()
		require.Error(t, err, "once=%v", once)
		assert.False(t, errors.Is(err, context.DeadlineExceeded), "once=%v: failed at once: %v", once, err)
		assert.Contains(t, err.Error(), "connection refused", "once=%v", once)
	}
}

// testLog returns a logger writing to the test's log.
func testLog(t *testing.T) *slog.Logger {
	return slog.New(slog.NewTextHandler(testWriter{t}, &slog.HandlerOptions{Level: slog.LevelDebug}))
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimSpace(string(p)))
	return len(p), nil
}

// Missing permissions are found before anything is written, named by verb
// and resource; an unreachable job API server fails at once.
func TestIntegrationPreflight(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	user := "no-watch-" + it.ns
	it.env.Grant(t, it.ns, "partial", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "create", "patch", "delete"}},
	})
	cfg := rest.CopyConfig(it.env.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cs, err := kube.NewForConfig(cfg)
	require.NoError(t, err)

	err = Preflight(t.Context(), cs, it.ns, map[string]Clientset{"default": cs, "away": closedPortClient(t)}, "", false)
	var missing *preflight.MissingError
	require.ErrorAs(t, err, &missing)
	assert.Equal(t, `missing permissions in build cluster "default": cannot watch pods -n `+it.ns, err.Error())
	require.ErrorAs(t, Preflight(t.Context(), cs, it.ns, map[string]Clientset{"default": cs}, "", true), &missing, "a dry run reads from watches too")
	require.NoError(t, Preflight(t.Context(), it.env.Kube, it.ns, map[string]Clientset{"default": it.env.Kube}, "", false))

	start := time.Now()
	err = Preflight(t.Context(), closedPortClient(t), it.ns, nil, "", false)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "connection refused")
	assert.Less(t, time.Since(start), probeTimeout, "an unreachable job API server fails at once")
	cms, err := it.env.Client.CoreV1().ConfigMaps(it.ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	assert.Empty(t, cms.Items, "nothing written")
}

// Reconcilers recording different clusters at once lose none of each
// other's entries: every write is conditional on the version the entry
// was added to.
func TestIntegrationClusterStatusConcurrentRecords(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	const writers = 8
	recorded := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		r, err := NewReconciler(it.env.Kube.CoreV1(), it.ns, nil, Options{})
		require.NoError(t, err)
		wg.Go(func() {
			recorded[i] = r.recordCluster(t.Context(), fmt.Sprintf("c%d", i), ClusterStatus{State: ClusterReachable, Namespace: it.ns})
		})
	}
	wg.Wait()
	st, err := ReadClusterStatus(t.Context(), it.env.Client.CoreV1().ConfigMaps(it.ns))
	require.NoError(t, err)
	for i, err := range recorded {
		alias := fmt.Sprintf("c%d", i)
		if err != nil {
			require.ErrorIs(t, err, errClusterStatusRace, alias)
			continue
		}
		assert.Contains(t, st, alias, "a record that returned success is kept")
	}
}
