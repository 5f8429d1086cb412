package reliability

import (
	"context"
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// takeoverSlack is how late after the holder's expiry (or its pod's end) a
// waiter may take the lock on a loaded 2-core machine.
const takeoverSlack = 5 * time.Second

// TestIntegrationHolderProcessCrash SIGKILLs a holder process that keeps a
// lock without a pod (renewing a short TTL) at a random point: before it
// holds, while it takes the lock, or while it holds. A waiter must take the
// lock within the TTL of the kill, and never before the kill while the
// holder held it.
func TestIntegrationHolderProcessCrash(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	const ttl = 3 * time.Second
	n := rounds(4, 20)
	waiter := lockClient(t, env.RESTConfig, ns)
	for i := range n {
		target := fmt.Sprintf("crash-%d", i)
		killAfter := rand.N(2*ttl + time.Second)
		holder := startHolder(t, env.Kubeconfig, ns, target, "holder", ttl)
		started := time.Now()

		// Let the holder go first most of the time, but not always.
		select {
		case at := <-holder.held:
			holder.held <- at
		case <-time.After(time.Second):
		}
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		done := clitest.AcquireQueued(ctx, t, waiter, lock.Request{Target: target, Identity: clitest.Identity("waiter", 1)})
		time.Sleep(time.Until(started.Add(killAfter)))
		killedAt := time.Now()
		holder.kill()

		r := clitest.Await(t, done, ttl+takeoverSlack+10*time.Second, fmt.Sprintf("round %d: waiter", i))
		cancel()
		require.NoError(t, r.Err, "round %d: the waiter takes the lock", i)
		var heldAt time.Time
		select {
		case heldAt = <-holder.held:
		default:
		}
		if heldAt.IsZero() {
			t.Logf("round %d: holder killed after %s before holding; waiter held after %s", i,
				killAfter.Round(time.Millisecond), r.At.Sub(started).Round(time.Millisecond))
		} else {
			t.Logf("round %d: holder held at %s, killed at %s; waiter held %s after the kill", i,
				heldAt.Sub(started).Round(time.Millisecond), killedAt.Sub(started).Round(time.Millisecond), r.At.Sub(killedAt).Round(time.Millisecond))
			assert.False(t, r.At.Before(killedAt), "round %d: waiter held the lock %s before the live holder was killed", i, killedAt.Sub(r.At))
			assert.LessOrEqual(t, r.At.Sub(killedAt), ttl+takeoverSlack, "round %d: taken over within the TTL of the kill", i)
		}
		_, err := waiter.Release(t.Context(), target, clitest.Identity("waiter", 1), lock.ReleaseOptions{})
		require.NoError(t, err)
	}
}

// TestIntegrationHolderPodKilled ends a holder's pod at a random point
// while a waiter waits, the way a SIGKILL or an eviction would: the pod
// fails with exit code 137, or is deleted at once. The waiter must take the
// lock once the pod has ended, and never while it runs.
func TestIntegrationHolderPodKilled(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	n := rounds(6, 30)
	holderClient := lockClient(t, env.RESTConfig, ns)
	waiter := lockClient(t, env.RESTConfig, ns)
	pods := env.Client.CoreV1().Pods(ns)
	for i := range n {
		target := fmt.Sprintf("pod-%d", i)
		how := []string{"exit 137", "delete"}[i%2]
		pod, err := pods.Create(t.Context(), &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("holder-%d", i)},
			Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
		}, metav1.CreateOptions{})
		require.NoError(t, err)
		ctx, cancel := context.WithTimeout(t.Context(), time.Minute)
		// A holder runs lockctl inside its pod, so the pod runs before it
		// holds; kwok's scheduling delay is no part of the take-over.
		waitRunning(ctx, t, env, ns, pod.Name)
		_, err = holderClient.Acquire(ctx, lock.Request{
			Target: target, Identity: clitest.Identity("holder", 1), Pod: &record.PodRef{Namespace: ns, Name: pod.Name},
		})
		require.NoError(t, err, "round %d: holder", i)
		done := clitest.AcquireQueued(ctx, t, waiter, lock.Request{Target: target, Identity: clitest.Identity("waiter", 1)})
		time.Sleep(rand.N(1500 * time.Millisecond))

		killedAt := time.Now()
		if how == "delete" {
			err = pods.Delete(t.Context(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)})
		} else {
			patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:"137"}}}`, testenv.AnnotationExitCode)
			_, err = pods.Patch(t.Context(), pod.Name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
		}
		require.NoError(t, err, "round %d: %s", i, how)

		r := clitest.Await(t, done, 30*time.Second, fmt.Sprintf("round %d: waiter", i))
		cancel()
		require.NoError(t, r.Err, "round %d: the waiter takes the lock after %s", i, how)
		assert.False(t, r.At.Before(killedAt), "round %d: waiter held the lock before the holder pod was killed", i)
		assert.LessOrEqual(t, r.At.Sub(killedAt), takeoverSlack, "round %d: taken over soon after %s", i, how)
		got, err := pods.Get(t.Context(), pod.Name, metav1.GetOptions{})
		if err == nil {
			assert.NotEqual(t, corev1.PodRunning, got.Status.Phase, "round %d: the holder pod no longer runs when the waiter holds", i)
		} else {
			assert.True(t, apierrors.IsNotFound(err), "round %d: %v", i, err)
		}
		t.Logf("round %d: %s; waiter held %s later", i, how, r.At.Sub(killedAt).Round(time.Millisecond))
		_, err = waiter.Release(t.Context(), target, clitest.Identity("waiter", 1), lock.ReleaseOptions{})
		require.NoError(t, err)
	}
}

// waitRunning waits until the pod is Running.
func waitRunning(ctx context.Context, t *testing.T, env *testenv.Env, ns, name string) {
	t.Helper()
	for {
		p, err := env.Client.CoreV1().Pods(ns).Get(ctx, name, metav1.GetOptions{})
		require.NoError(t, err)
		if p.Status.Phase == corev1.PodRunning {
			return
		}
		select {
		case <-ctx.Done():
			t.Fatalf("pod %s not running (%s): %v", name, p.Status.Phase, context.Cause(ctx))
		case <-time.After(100 * time.Millisecond):
		}
	}
}
