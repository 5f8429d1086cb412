package lock_test

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/lock/record"
)

// TestIntegrationHistory runs holds that end every way on the real API
// server: handed over on release, broken with --force, released with
// nobody waiting (the lock is kept, free), taken again from free, and lost
// with the holder's pod. The lock record keeps them all, newest first.
func TestIntegrationHistory(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := newClient(t, env.Kube, ns)
	req := func(repo, build string) lock.Request {
		return lock.Request{Target: "staging", Identity: record.Identity{Owner: "acme", Repo: repo, Branch: "main", Build: build}, ClaimID: repo + build}
	}

	mustAcquire(t, l, req("web", "1"))
	_, queued, err := l.TryAcquire(t.Context(), req("api", "1"))
	require.NoError(t, err)
	require.NotNil(t, queued, "api#1 waits")
	res, err := l.Release(t.Context(), "staging", clitest.Identity("web", 1), lock.ReleaseOptions{})
	require.NoError(t, err)
	require.NotNil(t, res.HandedTo, "handed over to api#1")
	mustAcquire(t, l, req("api", "1")) // confirms the hand-over
	res, err = l.Release(t.Context(), "staging", clitest.Identity("ops", 9), lock.ReleaseOptions{Force: true, By: "alice@console"})
	require.NoError(t, err)
	require.True(t, res.Forced)

	got, err := l.Get(t.Context(), "staging")
	require.NoError(t, err)
	assert.Nil(t, got, "the broken lock is free")
	cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err, "and kept for its history")
	assert.Empty(t, cm.OwnerReferences, "owned by no pod")

	// Taken again from free, by a holder in a pod that is then deleted.
	pod := holderPod(t, env.Client, ns, "build-3")
	h := mustAcquire(t, l, lock.Request{Target: "staging", Identity: clitest.Identity("web", 3), Pod: &record.PodRef{Namespace: ns, Name: pod.Name}})
	assert.NotEmpty(t, h.Token)
	// NOTE: the lock is owned by its holder's pod in the same namespace,
	// which garbage-collects it (and its history) with the pod; a holder
	// pod elsewhere is only judged gone. Patch the owner reference away to
	// play the second case here.
	cm, err = env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	cm.OwnerReferences = nil
	_, err = env.Client.CoreV1().ConfigMaps(ns).Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.NoError(t, env.Client.CoreV1().Pods(ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{GracePeriodSeconds: new(int64)}))
	require.Eventually(t, func() bool {
		_, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), pod.Name, metav1.GetOptions{})
		return err != nil
	}, waitTimeout, 100*time.Millisecond, "the holder pod is gone")
	mustAcquire(t, l, req("db", "4"))

	hist, err := l.History(t.Context(), "staging")
	require.NoError(t, err)
	require.NotNil(t, hist.Holder)
	assert.Equal(t, "acme/db@main#4", hist.Holder.Identity.String(), "the current holder")
	var ends []string
	for _, e := range hist.Entries {
		ends = append(ends, e.Identity.String()+" "+e.Describe())
		assert.False(t, e.Until.Before(&e.Since), "%s: until is not before since", e.Identity)
	}
	assert.Equal(t, []string{
		"acme/web@main#3 lost: pod " + ns + "/build-3 is gone",
		"acme/api@main#1 broken by alice@console",
		"acme/web@main#1 handed over to acme/api@main#1",
	}, ends, "newest first")
}
