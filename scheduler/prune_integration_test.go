package scheduler

import (
	"context"
	"sort"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
)

// TestIntegrationPruner runs jobs to their end with a real reconciler, then
// prunes them with short ages: the pods of finished jobs and the records
// past the job age go, the newest periodic run and unfinished jobs stay, a
// dry run deletes nothing, and a record changed between the list and the
// delete is left alone.
func TestIntegrationPruner(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	it.run(Options{}, nil)
	it.submit("nightly-1", exits("0", ""))
	it.submit("nightly-2", exits("0", ""))
	it.submit("deploy", exits("1", ""), func(j *job.Job) {
		j.Spec.Job, j.Spec.Type, j.Spec.Refs = "deploy-web", job.Postsubmit, &job.Refs{Org: "acme", Repo: "web"}
	})
	it.submit("running", func(j *job.Job) { j.Spec.Job = "soak" })
	it.waitState("nightly-1", job.Success)
	it.waitState("nightly-2", job.Success)
	it.waitState("deploy", job.Failure)
	it.waitState("running", job.Pending)
	require.Eventually(t, func() bool { p := it.pod("running"); return p != nil && p.Status.Phase == corev1.PodRunning }, waitFor, 20*time.Millisecond)

	// Ten minutes on: every finished job is older than both ages.
	opts := PruneOptions{JobRetention: 5 * time.Minute, PodRetention: time.Minute, Clock: testingclock.NewFakeClock(time.Now().Add(10 * time.Minute))}
	clusters := map[string]kube.PodsGetter{job.DefaultCluster: it.env.Kube.CoreV1()}
	wantPods := []string{"deploy", "nightly-1", "nightly-2"}
	wantJobs := []string{"deploy", "nightly-1"}

	dry := opts
	dry.DryRun = true
	res, err := NewPruner(it.env.Kube.CoreV1(), it.ns, clusters, dry).Prune(t.Context())
	require.NoError(t, err)
	assert.Equal(t, wantPods, prunedNames(res, "pod"), "dry run: pods that would go")
	assert.Equal(t, wantJobs, prunedNames(res, "job"), "dry run: records that would go")
	assert.Equal(t, []string{"deploy", "nightly-1", "nightly-2", "running"}, it.recordNames(), "a dry run deletes nothing")

	res, err = NewPruner(it.env.Kube.CoreV1(), it.ns, clusters, opts).Prune(t.Context())
	require.NoError(t, err)
	assert.Equal(t, wantPods, prunedNames(res, "pod"))
	assert.Equal(t, wantJobs, prunedNames(res, "job"))
	assert.Equal(t, []string{"nightly-2", "running"}, it.recordNames(), "the newest periodic run and the unfinished job stay")
	require.Eventually(t, func() bool {
		return it.pod("deploy") == nil && it.pod("nightly-1") == nil && it.pod("nightly-2") == nil
	}, waitFor, 20*time.Millisecond, "the pods are gone, finalizers and all")
	assert.NotNil(t, it.pod("running"), "the unfinished job's pod stays")

	res, err = NewPruner(it.env.Kube.CoreV1(), it.ns, clusters, opts).Prune(t.Context())
	require.NoError(t, err)
	assert.Empty(t, res.Deleted, "a second prune finds nothing")

	t.Run("a record changed meanwhile is not removed", func(t *testing.T) {
		it.submit("late", exits("0", ""), func(j *job.Job) {
			j.Spec.Job, j.Spec.Type, j.Spec.Refs = "other", job.Postsubmit, &job.Refs{Org: "acme", Repo: "web"}
		})
		it.waitState("late", job.Success)
		cms := &changeBeforeDelete{ConfigMapsGetter: it.env.Kube.CoreV1(), t: t, name: "late"}
		res, err := NewPruner(cms, it.ns, clusters, opts).Prune(t.Context())
		require.NoError(t, err)
		assert.NotContains(t, prunedNames(res, "job"), "late")
		assert.Equal(t, 1, res.Skipped, "the changed record is skipped")
		assert.Contains(t, it.recordNames(), "late", "the record is still there")
	})
}

func prunedNames(res *PruneResult, kind string) []string {
	var out []string
	for _, p := range res.Deleted {
		if p.Kind == kind {
			out = append(out, p.Name)
		}
	}
	sort.Strings(out)
	return out
}

func (it *itest) recordNames() []string {
	it.t.Helper()
	jobs, err := it.store.List(it.t.Context(), job.ListOptions{})
	require.NoError(it.t, err)
	var out []string
	for _, j := range jobs {
		out = append(out, j.Name)
	}
	sort.Strings(out)
	return out
}

// changeBeforeDelete changes the record called name just before the pruner
// deletes it, as another writer could.
type changeBeforeDelete struct {
	kube.ConfigMapsGetter
	t    *testing.T
	name string
}

func (c *changeBeforeDelete) ConfigMaps(ns string) kube.ConfigMapInterface {
	return &changeBeforeDeleteCMs{ConfigMapInterface: c.ConfigMapsGetter.ConfigMaps(ns), c: c}
}

type changeBeforeDeleteCMs struct {
	kube.ConfigMapInterface
	c *changeBeforeDelete
}

func (m *changeBeforeDeleteCMs) Delete(ctx context.Context, name string, opts metav1.DeleteOptions) error {
	if name == m.c.name {
		cm, err := m.Get(ctx, name, metav1.GetOptions{})
		require.NoError(m.c.t, err)
		cm.Labels["touched"] = "true"
		_, err = m.Update(ctx, cm, metav1.UpdateOptions{})
		require.NoError(m.c.t, err)
	}
	err := m.ConfigMapInterface.Delete(ctx, name, opts)
	if name == m.c.name {
		assert.True(m.c.t, apierrors.IsConflict(err), "the API server refuses the stale delete: %v", err)
	}
	return err
}
