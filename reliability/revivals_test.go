package reliability

import (
	"context"
	"fmt"
	"os/exec"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/tools/cache"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
)

// TestIntegrationRevivalsCountLostPods runs several reconciler processes
// (loops, plus back-to-back --once passes overlapping them) over jobs with
// revivalLimit 1 and evicts a known third of the pods once. A pod that
// another reconciler has not created yet is never taken for a lost one: per
// job, revivals equal evictions exactly, there is one pod per life of the
// job (evictions + 1 pods in all), and every job succeeds.
func TestIntegrationRevivalsCountLostPods(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	loops, jobs := 2, 30
	if heavy() {
		loops, jobs = 3, 60
	}
	ctx, cancel := context.WithTimeout(t.Context(), time.Duration(rounds(4, 10))*time.Minute)
	defer cancel()

	// Every pod of the namespace, by job, as the API server reports them.
	var (
		mu   sync.Mutex
		pods = map[string]map[types.UID]bool{}
	)
	f := informers.NewSharedInformerFactoryWithOptions(env.Client, 0, informers.WithNamespace(ns))
	_, err := f.Core().V1().Pods().Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) {
			p := obj.(*corev1.Pod)
			mu.Lock()
			defer mu.Unlock()
			rec := p.Labels[job.LabelRecord]
			if pods[rec] == nil {
				pods[rec] = map[types.UID]bool{}
			}
			pods[rec][p.UID] = true
		},
	})
	require.NoError(t, err)
	f.Start(ctx.Done())
	require.True(t, cache.WaitForCacheSync(ctx.Done(), f.Core().V1().Pods().Informer().HasSynced))

	opts := `{"RevivalLimit":1,"Workers":8}`
	procs := make([]*exec.Cmd, 0, loops+1)
	for range loops {
		procs = append(procs, startReconciler(t, env.Kubeconfig, ns, opts))
	}
	procs = append(procs, startReconcilerMode(t, "reconciler-once", env.Kubeconfig, ns, opts))
	t.Logf("%d reconciler loops and one process of back-to-back --once passes", loops)

	submitJobs(t, env.Client, ns, jobs)
	names := make([]string, jobs)
	evicted := map[string]bool{}
	for i := range jobs {
		names[i] = fmt.Sprintf("job-%03d", i)
		evicted[names[i]] = i%3 == 0
	}
	running := func(name string) *corev1.Pod {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil || p.Status.Phase != corev1.PodRunning || p.DeletionTimestamp != nil {
			return nil
		}
		return p
	}
	waitAll := func(what string, ok func(name string) bool) {
		t.Helper()
		for _, name := range names {
			for !ok(name) {
				select {
				case <-ctx.Done():
					t.Fatalf("%s: job %s: %v", what, name, context.Cause(ctx))
				case <-time.After(200 * time.Millisecond):
				}
			}
		}
	}

	// Every job runs its first pod; then a third are evicted as the kubelet
	// does (phase Failed, reason Evicted), each pod by its UID.
	first := map[string]types.UID{}
	waitAll("first pods running", func(name string) bool {
		if p := running(name); p != nil {
			first[name] = p.UID
			return true
		}
		return false
	})
	for _, name := range names {
		if !evicted[name] {
			continue
		}
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		require.Equal(t, first[name], p.UID)
		p.Status.Phase, p.Status.Reason, p.Status.Message = corev1.PodFailed, "Evicted", "The node was low on resource: memory."
		_, err = env.Client.CoreV1().Pods(ns).UpdateStatus(ctx, p, metav1.UpdateOptions{})
		require.NoError(t, err, "evict %s", name)
	}
	waitAll("evicted jobs run a new pod", func(name string) bool {
		p := running(name)
		return p != nil && (!evicted[name] || p.UID != first[name])
	})

	// Then every pod finishes.
	finish := fmt.Sprintf(`{"metadata":{"annotations":{%q:"0"}}}`, testenv.AnnotationExitCode)
	for _, name := range names {
		_, err := env.Client.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, []byte(finish), metav1.PatchOptions{})
		require.NoError(t, err, "finish %s", name)
	}
	store := job.NewStore(env.Kube.CoreV1(), ns, job.StoreOptions{})
	waitAll("every job terminal", func(name string) bool {
		j, err := store.Get(ctx, name)
		return err == nil && j.IsTerminal()
	})
	for _, p := range procs {
		_ = p.Process.Kill()
	}

	revivals, evictions := 0, 0
	mu.Lock()
	defer mu.Unlock()
	for _, name := range names {
		j, err := store.Get(t.Context(), name)
		require.NoError(t, err)
		want := 0
		if evicted[name] {
			want = 1
		}
		evictions += want
		revivals += j.Status.Revivals
		assert.Equal(t, job.Success, j.Status.State, "job %s succeeds: %s", name, j.Status.Description)
		assert.Equal(t, want, j.Status.Revivals, "job %s: revivals equal evictions", name)
		assert.Len(t, pods[name], want+1, "job %s: one pod per life", name)
	}
	t.Logf("%d jobs, %d reconciler processes: %d evictions, %d revivals counted", jobs, len(procs), evictions, revivals)
}
