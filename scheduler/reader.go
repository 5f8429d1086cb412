package scheduler

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
)

// buildCluster is where the pods of jobs with one cluster alias run.
type buildCluster struct {
	alias     string
	namespace string
	pods      kube.PodsGetter
	// node returns a node of the cluster by name, nil when it is not
	// known; a nil func means nodes may not be read, and pods are judged
	// by their own conditions.
	node func(name string) *corev1.Node
}

// reader is the reconciler's view of the cluster: informer caches in the
// Controller, direct API reads otherwise. A view may be stale; every write
// based on it is a compare-and-swap, so staleness costs a retry, never a
// wrong write.
type reader interface {
	// job returns the job record called name, or an error matching
	// job.ErrNotFound.
	job(ctx context.Context, name string) (*job.Job, error)
	// jobs returns every job record that is not complete; it may leave out
	// the complete ones (terminal, labelled job.LabelComplete), which no
	// pass over every job acts on.
	jobs(ctx context.Context) ([]*job.Job, error)
	// pod returns the pod called name in the build cluster, nil if there is
	// none. fresh asks for a read from the API server instead of a cache.
	pod(ctx context.Context, cl *buildCluster, name string, fresh bool) (*corev1.Pod, error)
	// ledger returns the admission ledger, nil if there is none. fresh asks
	// for a read from the API server instead of a cache.
	ledger(ctx context.Context, fresh bool) (*corev1.ConfigMap, error)
}

// apiReader reads everything from the API server.
type apiReader struct {
	store *job.Store
	cms   kube.ConfigMapInterface
}

var _ reader = (*apiReader)(nil)

func (a *apiReader) job(ctx context.Context, name string) (*job.Job, error) {
	return a.store.Get(ctx, name)
}

func (a *apiReader) jobs(ctx context.Context) ([]*job.Job, error) {
	jobs, err := a.store.List(ctx, job.ListOptions{})
	if errors.Is(err, job.ErrCorrupt) {
		err = nil // undecodable records are reported by get jobs, not here
	}
	return jobs, err
}

func (a *apiReader) pod(ctx context.Context, cl *buildCluster, name string, _ bool) (*corev1.Pod, error) {
	return getPod(ctx, cl, name)
}

func (a *apiReader) ledger(ctx context.Context, _ bool) (*corev1.ConfigMap, error) {
	cm, err := a.cms.Get(ctx, LedgerName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("get admission ledger: %w", err)
	}
	return cm, nil
}

func getPod(ctx context.Context, cl *buildCluster, name string) (*corev1.Pod, error) {
	pod, err := cl.pods.Pods(cl.namespace).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, unavailable(cl, fmt.Errorf("get pod %q in cluster %q: %w", name, cl.alias, err))
	}
	return pod, nil
}

// newerRV reports whether resourceVersion a is newer than b. Resource
// versions are opaque, but the API server issues them from etcd's
// increasing revision; when either does not parse, a is not newer.
func newerRV(a, b string) bool {
	na, errA := strconv.ParseUint(a, 10, 64)
	nb, errB := strconv.ParseUint(b, 10, 64)
	return errA == nil && errB == nil && na > nb
}
