package lock_test

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/lock/record"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// waitTimeout bounds every wait in these tests; a healthy run needs a
// fraction of it.
const waitTimeout = time.Minute

func newClient(t *testing.T, c kube.Interface, ns string) *lock.Client {
	t.Helper()
	return newClientWith(t, c, ns, lock.Options{})
}

// newClientWith is newClient with o, on the local clock: the test
// processes share the API server's machine.
func newClientWith(t *testing.T, c kube.Interface, ns string, o lock.Options) *lock.Client {
	t.Helper()
	return lock.New(c.CoreV1(), c.CoreV1(), ns, clock.RealClock{}, o)
}

type result struct {
	held *lock.Held
	err  error
}

// acquireAsync starts Acquire in a goroutine; it reports its queue
// position on queued once it is waiting.
func acquireAsync(ctx context.Context, l *lock.Client, req lock.Request) (<-chan result, <-chan lock.Progress) {
	done := make(chan result, 1)
	queued := make(chan lock.Progress, 16)
	req.Callbacks.OnProgress = func(p lock.Progress) {
		select {
		case queued <- p:
		default:
		}
	}
	go func() {
		h, err := l.Acquire(ctx, req)
		done <- result{h, err}
	}()
	return done, queued
}

func mustAcquire(t *testing.T, l *lock.Client, req lock.Request) *lock.Held {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), waitTimeout)
	defer cancel()
	h, err := l.Acquire(ctx, req)
	require.NoError(t, err, "acquire %s", req.Identity)
	return h
}

func await(t *testing.T, done <-chan result, what string) result {
	t.Helper()
	select {
	case r := <-done:
		return r
	case <-time.After(waitTimeout):
		t.Fatalf("%s: no result after %s", what, waitTimeout)
	}
	return result{}
}

func awaitQueued(t *testing.T, queued <-chan lock.Progress, what string) lock.Progress {
	t.Helper()
	select {
	case p := <-queued:
		return p
	case <-time.After(waitTimeout):
		t.Fatalf("%s: not queued after %s", what, waitTimeout)
	}
	return lock.Progress{}
}

func TestIntegrationAcquireFreeAndRelease(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := newClient(t, env.Kube, ns)

	h := mustAcquire(t, l, lock.Request{Target: "staging", Identity: clitest.Identity("web", 1)})
	assert.NotEmpty(t, h.Token, "fencing token")
	cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, record.ManagedByValue, cm.Labels[record.ManagedByLabel], "labelled as lockctl's")

	res, err := l.Release(t.Context(), "staging", clitest.Identity("web", 1), lock.ReleaseOptions{})
	require.NoError(t, err)
	assert.NotNil(t, res.Previous)
	got, err := l.Get(t.Context(), "staging")
	require.NoError(t, err)
	assert.Nil(t, got, "lock free")
	hist, err := l.History(t.Context(), "staging")
	require.NoError(t, err)
	require.Len(t, hist.Entries, 1, "the free lock keeps its history")
	assert.Equal(t, record.EndReleased, hist.Entries[0].Ended)

	res, err = l.Release(t.Context(), "staging", clitest.Identity("web", 1), lock.ReleaseOptions{})
	require.NoError(t, err, "releasing a free lock succeeds")
	assert.Nil(t, res.Previous)
}

// TestIntegrationFreeLockTakenWithOneWrite: a lock that does not exist is
// taken with the read of the lock and of the freeze windows (side by side,
// one round trip) and one create; nothing is watched.
func TestIntegrationFreeLockTakenWithOneWrite(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cfg := rest.CopyConfig(env.RESTConfig)
	counted := testenv.RecordRequests(cfg)
	cs, err := kube.NewForConfig(cfg)
	require.NoError(t, err)
	l := newClient(t, cs, ns)

	mustAcquire(t, l, lock.Request{Target: "staging", Identity: clitest.Identity("web", 1)})
	reqs := counted.Take()
	require.Len(t, reqs, 3, "two reads and a create, nothing watched: %v", reqs)
	assert.ElementsMatch(t, []string{"GET", "GET"}, testenv.Verbs(reqs[:2]), "the lock and the windows read first: %v", reqs)
	assert.Equal(t, "POST", reqs[2].Verb, "one create: %v", reqs)

	// A second contender finds the lock held: it joins the queue and waits.
	done, queued := acquireAsync(t.Context(), newClient(t, env.Kube, ns), lock.Request{Target: "staging", Identity: clitest.Identity("api", 1)})
	awaitQueued(t, queued, "second contender")
	_, err = l.Release(t.Context(), "staging", clitest.Identity("web", 1), lock.ReleaseOptions{})
	require.NoError(t, err)
	r := await(t, done, "second contender")
	require.NoError(t, r.err)
	assert.Equal(t, clitest.Identity("api", 1), r.held.Holder.Identity, "the waiter holds it after the release")
}

func TestIntegrationWaitForRelease(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	l := newClient(t, env.Kube, env.Namespace(t))

	first := mustAcquire(t, l, lock.Request{Target: "staging", Identity: clitest.Identity("web", 1)})
	done, queued := acquireAsync(t.Context(), l, lock.Request{Target: "staging", Identity: clitest.Identity("api", 1)})
	p := awaitQueued(t, queued, "second contender")
	assert.Equal(t, 1, p.Position, "first in the queue")
	assert.Equal(t, "web", p.Holder.Repo, "sees the holder")

	_, err := l.Release(t.Context(), "staging", clitest.Identity("web", 1), lock.ReleaseOptions{})
	require.NoError(t, err)
	r := await(t, done, "second contender")
	require.NoError(t, r.err)
	assert.Greater(t, tokenOf(t, r.held), tokenOf(t, first), "fencing token grows with every holder")
}

func TestIntegrationHolderPodEnds(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := newClient(t, env.Kube, ns)

	for _, end := range []string{"finishes", "is deleted"} {
		t.Run(end, func(t *testing.T) {
			target := "pod-" + map[string]string{"finishes": "done", "is deleted": "gone"}[end]
			pod := holderPod(t, env.Client, ns, target)
			mustAcquire(t, l, lock.Request{Target: target, Identity: clitest.Identity("web", 1), Pod: &record.PodRef{Namespace: ns, Name: pod.Name}})
			cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), record.Name(target), metav1.GetOptions{})
			require.NoError(t, err)
			require.Len(t, cm.OwnerReferences, 1, "the holder's pod owns the lock")
			assert.Equal(t, pod.UID, cm.OwnerReferences[0].UID)

			done, queued := acquireAsync(t.Context(), l, lock.Request{Target: target, Identity: clitest.Identity("api", 1)})
			awaitQueued(t, queued, "waiter")
			if end == "finishes" {
				patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"0"}}}`, testenv.AnnotationExitCode)
				_, err = env.Client.CoreV1().Pods(ns).Patch(t.Context(), pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			} else {
				err = env.Client.CoreV1().Pods(ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{})
			}
			require.NoError(t, err)
			r := await(t, done, "waiter")
			require.NoError(t, r.err, "the waiter takes the lock once the holder pod %s", end)
		})
	}
}

func TestIntegrationExpiredLockTakenOver(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	l := newClient(t, env.Kube, env.Namespace(t))

	mustAcquire(t, l, lock.Request{Target: "staging", Identity: clitest.Identity("web", 1), TTL: 2 * time.Second})
	start := time.Now()
	h := mustAcquire(t, l, lock.Request{Target: "staging", Identity: clitest.Identity("api", 1)})
	assert.Equal(t, "api", h.Holder.Repo)
	assert.GreaterOrEqual(t, time.Since(start), time.Second, "not before the expiry")
}

func TestIntegrationNewestWins(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	l := newClient(t, env.Kube, env.Namespace(t))
	other := lock.Request{Target: "staging", Identity: clitest.Identity("api", 1)}

	t.Run("an older build gives up when a newer one waits", func(t *testing.T) {
		mustAcquire(t, l, other)
		newer, queued := acquireAsync(t.Context(), l, lock.Request{Target: "staging", Identity: clitest.Identity("web", 43)})
		awaitQueued(t, queued, "newer build")
		_, err := l.Acquire(t.Context(), lock.Request{Target: "staging", Identity: clitest.Identity("web", 42)})
		var sup *lock.SupersededError
		require.ErrorAs(t, err, &sup, "older build superseded")
		assert.Equal(t, "43", sup.By.Build)

		_, err = l.Release(t.Context(), "staging", other.Identity, lock.ReleaseOptions{})
		require.NoError(t, err)
		r := await(t, newer, "newer build")
		require.NoError(t, r.err)
		_, err = l.Release(t.Context(), "staging", clitest.Identity("web", 43), lock.ReleaseOptions{})
		require.NoError(t, err)
	})

	t.Run("a newer arrival makes the older waiter give up", func(t *testing.T) {
		mustAcquire(t, l, other)
		older, queued := acquireAsync(t.Context(), l, lock.Request{Target: "staging", Identity: clitest.Identity("web", 44)})
		awaitQueued(t, queued, "older build")
		newer, queuedNewer := acquireAsync(t.Context(), l, lock.Request{Target: "staging", Identity: clitest.Identity("web", 45)})
		p := awaitQueued(t, queuedNewer, "newer build")
		assert.Equal(t, 1, p.Position, "the newer build takes the older one's place")

		r := await(t, older, "older build")
		assert.ErrorIs(t, r.err, lock.ErrSuperseded)
		_, err := l.Release(t.Context(), "staging", other.Identity, lock.ReleaseOptions{})
		require.NoError(t, err)
		r = await(t, newer, "newer build")
		require.NoError(t, r.err)
		_, err = l.Release(t.Context(), "staging", clitest.Identity("web", 45), lock.ReleaseOptions{})
		require.NoError(t, err)
	})
}

func TestIntegrationReleaseByNonHolderRefused(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := newClient(t, env.Kube, ns)
	mustAcquire(t, l, lock.Request{Target: "staging", Identity: clitest.Identity("web", 1)})

	_, err := l.Release(t.Context(), "staging", clitest.Identity("web", 2), lock.ReleaseOptions{})
	assert.ErrorIs(t, err, lock.ErrNotHolder)
	got, err := l.Get(t.Context(), "staging")
	require.NoError(t, err)
	require.NotNil(t, got, "lock kept")
	assert.Equal(t, "1", got.Status.Holder.Build)
}

func TestIntegrationTimeoutLeavesLockAsFound(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := newClient(t, env.Kube, ns)
	mustAcquire(t, l, lock.Request{Target: "staging", Identity: clitest.Identity("web", 1)})
	before, err := l.Get(t.Context(), "staging")
	require.NoError(t, err)

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	defer cancel()
	_, err = l.Acquire(ctx, lock.Request{Target: "staging", Identity: clitest.Identity("api", 1)})
	var te *lock.TimeoutError
	require.ErrorAs(t, err, &te)
	assert.Equal(t, "web", te.Holder.Repo, "says who held it")

	after, err := l.Get(t.Context(), "staging")
	require.NoError(t, err)
	assert.Equal(t, before.Status.Holder.ClaimID, after.Status.Holder.ClaimID, "same holder")
	assert.Empty(t, after.Status.Waiters, "the waiter left the queue")
}

func TestIntegrationNotALockIsLeftAlone(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := newClient(t, env.Kube, ns)
	theirs := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: record.Name("staging"), Namespace: ns},
		Data:       map[string]string{"precious": "yes"},
	}
	_, err := env.Client.CoreV1().ConfigMaps(ns).Create(t.Context(), theirs, metav1.CreateOptions{})
	require.NoError(t, err)

	_, err = l.Acquire(t.Context(), lock.Request{Target: "staging", Identity: clitest.Identity("web", 1)})
	var nal *record.NotALockError
	require.ErrorAs(t, err, &nal)
	_, err = l.Release(t.Context(), "staging", clitest.Identity("web", 1), lock.ReleaseOptions{Force: true})
	require.ErrorAs(t, err, &nal)
	got, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), theirs.Name, metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "yes", got.Data["precious"], "untouched")
}

// TestIntegrationMutualExclusionGoroutines runs many contenders in one
// process; e2e runs them as separate processes.
func TestIntegrationMutualExclusionGoroutines(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	const contenders, rounds = 12, 3
	var (
		mu       sync.Mutex
		holding  int
		maxHeld  int
		acquired int
	)
	var wg sync.WaitGroup
	errs := make(chan error, contenders)
	for i := range contenders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			l := newClient(t, env.Kube, ns)
			for r := range rounds {
				id := record.Identity{Owner: "acme", Repo: fmt.Sprintf("repo-%d", i), Branch: "main", Build: fmt.Sprint(r + 1)}
				ctx, cancel := context.WithTimeout(t.Context(), 2*waitTimeout)
				_, err := l.Acquire(ctx, lock.Request{Target: "staging", Identity: id, Policy: record.PolicyFIFO})
				cancel()
				if err != nil {
					errs <- fmt.Errorf("%s: %w", id, err)
					return
				}
				mu.Lock()
				holding++
				acquired++
				maxHeld = max(maxHeld, holding)
				mu.Unlock()
				time.Sleep(5 * time.Millisecond) // hold it a moment
				mu.Lock()
				holding--
				mu.Unlock()
				if _, err := l.Release(t.Context(), "staging", id, lock.ReleaseOptions{}); err != nil {
					errs <- fmt.Errorf("%s: release: %w", id, err)
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	assert.Equal(t, 1, maxHeld, "never two holders at once")
	assert.Equal(t, contenders*rounds, acquired, "every contender held the lock every round")
}

func holderPod(t *testing.T, c kubernetes.Interface, ns, name string) *corev1.Pod {
	t.Helper()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{}},
		Spec: corev1.PodSpec{
			Containers: []corev1.Container{{Name: "main", Image: "busybox"}},
		},
	}
	pod, err := c.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
	return pod
}

func tokenOf(t *testing.T, h *lock.Held) uint64 {
	t.Helper()
	var n uint64
	_, err := fmt.Sscanf(h.Token, "%d", &n)
	require.NoError(t, err, "token %q is a number", h.Token)
	return n
}
