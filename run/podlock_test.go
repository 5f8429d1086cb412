package run

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

func TestPodLocker(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	jobPod := func(name, build string) *corev1.Pod {
		j := &job.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "default", UID: types.UID("job-" + name)},
			Spec: job.JobSpec{Job: "deploy-web", Type: job.Postsubmit, Refs: &job.Refs{Org: "acme", Repo: "web", BaseRef: "main"},
				PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}}}
		pod := job.NewPod(j, "default", build)
		pod.UID = types.UID("pod-" + name)
		pod.Status.Phase = corev1.PodRunning
		created, err := cs.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{})
		require.NoError(t, err)
		return created
	}
	first, second := jobPod("first", "1"), jobPod("second", "2")
	assert.Equal(t, record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "1"}, PodIdentity(first))

	locker := NewPodLocker(lock.New(kubetest.CoreV1(cs.CoreV1()), kubetest.CoreV1(cs.CoreV1()), "default", clock.RealClock{}, lock.Options{}))
	held, err := locker.TryAcquire(t.Context(), "staging", first)
	require.NoError(t, err)
	assert.True(t, held, "a free lock is taken")
	held, err = locker.TryAcquire(t.Context(), "staging", first)
	require.NoError(t, err)
	assert.True(t, held, "taking it again is a no-op")
	held, err = locker.TryAcquire(t.Context(), "staging", second)
	require.NoError(t, err)
	assert.False(t, held, "a held lock makes the next pod wait")

	require.NoError(t, locker.Release(t.Context(), "staging", first))
	held, err = locker.TryAcquire(t.Context(), "staging", second)
	require.NoError(t, err)
	assert.True(t, held, "released to the next pod")
}
