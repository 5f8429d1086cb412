package scheduler

import (
	"context"
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockctl/lockctl/job"
)

// decode returns the job of a cached ConfigMap without its pod template
// (spec.podSpec is nil), decoding each version once: what the passes over
// every job (admission, superseding, metrics) read. The result is shared:
// callers must not change it, and must not write it (job.Store refuses a
// job without a pod spec); a job to be written is read with decodeFull.
// A complete job (labelled so) is nil and not kept: it never moves again,
// and no pass acts on it (admission reads a complete job of its ledger
// with cacheReader.job), so keeping a decoded copy of every job that ever
// ran, decoded again at every admission pass, cost memory and time for
// nothing.
func (c *Controller) decode(obj any) *job.Job {
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || !job.IsJobConfigMap(cm) {
		return nil
	}
	if cm.Labels[job.LabelComplete] == "true" {
		c.decoded.Delete(cm.Name)
		return nil
	}
	if d, ok := c.decoded.Load(cm.Name); ok && d.(decodedJob).rv == cm.ResourceVersion {
		return d.(decodedJob).job
	}
	j := c.decodeFull(cm)
	if j == nil {
		return nil
	}
	// NOTE: the pod template is most of a job; keeping a decoded copy of
	// it for every job ever seen doubled the cache.
	j.Spec.PodSpec = nil
	c.decoded.Store(cm.Name, decodedJob{rv: cm.ResourceVersion, job: j})
	return j
}

// decodeFull decodes a cached job record whole, for the job being
// reconciled; nothing keeps the result.
func (c *Controller) decodeFull(cm *corev1.ConfigMap) *job.Job {
	j, err := job.FromConfigMap(cm)
	if err != nil {
		c.opts.Log.Warn("skipping job record", "error", err, "job", cm.Name)
		return nil
	}
	return j
}

// cacheReader reads from the controller's informers.
type cacheReader struct{ c *Controller }

var _ reader = (*cacheReader)(nil)

func (cr *cacheReader) job(_ context.Context, name string) (*job.Job, error) {
	obj, ok, err := cr.c.jobInf.GetIndexer().GetByKey(cr.c.namespace + "/" + name)
	if err != nil {
		return nil, err
	}
	if !ok {
		cr.c.decoded.Delete(name)
		return nil, fmt.Errorf("job %q: %w", name, job.ErrNotFound)
	}
	cm, isCM := obj.(*corev1.ConfigMap)
	if !isCM || !job.IsJobConfigMap(cm) {
		return nil, fmt.Errorf("job %q: %w", name, job.ErrCorrupt)
	}
	j := cr.c.decodeFull(cm)
	if j == nil {
		return nil, fmt.Errorf("job %q: %w", name, job.ErrCorrupt)
	}
	return j, nil
}

func (cr *cacheReader) jobs(context.Context) ([]*job.Job, error) {
	jobs := cr.c.allJobs()
	sort.SliceStable(jobs, func(a, b int) bool { return job.Older(jobs[a], jobs[b]) })
	return jobs, nil
}

func (cr *cacheReader) pod(ctx context.Context, cl *buildCluster, name string, fresh bool) (*corev1.Pod, error) {
	if fresh {
		return getPod(ctx, cl, name)
	}
	inf := cr.c.conns[cl.alias].pods()
	if inf == nil {
		return nil, &ClusterUnavailableError{Cluster: cl.alias}
	}
	obj, ok, err := inf.GetIndexer().GetByKey(cl.namespace + "/" + name)
	if err != nil || !ok {
		return nil, err
	}
	return asPod(obj), nil
}

func (cr *cacheReader) ledger(ctx context.Context, fresh bool) (*corev1.ConfigMap, error) {
	if fresh {
		return (&apiReader{cms: cr.c.r.cms}).ledger(ctx, true)
	}
	obj, ok, err := cr.c.ledgerInf.GetIndexer().GetByKey(cr.c.namespace + "/" + LedgerName)
	if err != nil || !ok {
		return nil, err
	}
	return obj.(*corev1.ConfigMap), nil
}
