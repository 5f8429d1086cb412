package scheduler

import (
	"context"
	"testing"
	"time"

	lockrecord "github.com/lockctl/lockctl/lock/record"
	"k8s.io/utils/clock"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
)

// lockAdapter takes real namespace locks for job pods, as cmd does.
type lockAdapter struct{ c *lock.Client }

func (l lockAdapter) identity(pod *corev1.Pod) lockrecord.Identity {
	return lockrecord.Identity{Owner: "acme", Repo: pod.Labels[job.LabelJob], Branch: "main", Build: pod.Labels[job.LabelBuildID]}
}

func (l lockAdapter) TryAcquire(ctx context.Context, target string, pod *corev1.Pod) (bool, error) {
	held, _, err := l.c.TryAcquire(ctx, lock.Request{Target: target, Identity: l.identity(pod), Policy: lockrecord.PolicyFIFO,
		Pod: &lockrecord.PodRef{Namespace: pod.Namespace, Name: pod.Name, UID: pod.UID}, ClaimID: string(pod.UID)})
	return held != nil, err
}

func (l lockAdapter) Release(ctx context.Context, target string, pod *corev1.Pod) error {
	_, err := l.c.Release(ctx, target, l.identity(pod), lock.ReleaseOptions{})
	return err
}

func TestIntegrationLockedJobsTakeTurns(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	locker := lockAdapter{c: lock.New(it.env.Kube.CoreV1(), it.env.Kube.CoreV1(), it.ns, clock.RealClock{}, lock.Options{})}
	it.run(Options{Locker: locker}, nil)
	locked := func(j *job.Job) { j.Spec.Lock = &job.LockSpec{Namespace: "staging"} }
	it.submit("first", locked, exits("0", "1500ms"))
	it.waitState("first", job.Pending)
	require.Eventually(t, func() bool { p := it.pod("first"); return p != nil && p.Status.Phase == corev1.PodRunning },
		waitFor, 20*time.Millisecond, "the first pod takes the lock and runs")
	it.submit("second", locked, exits("0", "100ms"))
	it.submit("free", exits("0", "100ms"))

	it.waitState("free", job.Success)
	second := it.pod("second")
	require.NotNil(t, second)
	assert.True(t, hasLockGate(second), "the second pod waits for the lock, held back from the scheduler")
	assert.Equal(t, corev1.PodRunning, it.pod("first").Status.Phase, "while the first still runs")

	it.waitState("first", job.Success)
	it.waitState("second", job.Success)
}
