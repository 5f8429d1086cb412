package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
)

// ClusterState is how a build cluster answered the last check.
type ClusterState string

// The build-cluster states.
const (
	// ClusterReachable: pods can be listed and created in the pod namespace.
	ClusterReachable ClusterState = "reachable"
	// ClusterUnreachable: the API server did not answer.
	ClusterUnreachable ClusterState = "unreachable"
	// ClusterForbidden: the API server answered but refused to list or
	// create pods.
	ClusterForbidden ClusterState = "missing-permissions"
)

// ClusterStates lists every ClusterState.
var ClusterStates = []ClusterState{ClusterReachable, ClusterUnreachable, ClusterForbidden}

// ClusterStatusName is the ConfigMap in the job namespace where reconcilers
// record the reachability of each build cluster (lockctl get clusters).
const ClusterStatusName = "lockctl.clusters"

// KindClusters is the job.LabelKind value of the cluster status ConfigMap.
const KindClusters = "clusters"

// clustersKey is the data key of the cluster status ConfigMap.
const clustersKey = "clusters"

// ClusterStatus is the reachability of one build cluster.
type ClusterStatus struct {
	State ClusterState `json:"state"`
	// Message is the API server's error, empty when reachable.
	Message string `json:"message,omitempty"`
	// Namespace is the pod namespace that was checked.
	Namespace string `json:"namespace"`
	// Since is when the cluster entered State.
	Since metav1.Time `json:"since"`
}

// CheckClusters asks every build cluster whether lockctl may list and
// create pods in the pod namespace (a dry-run create, which persists
// nothing), records the result in the metrics and, when it changed, in the
// cluster status ConfigMap, and returns it.
func (r *Reconciler) CheckClusters(ctx context.Context) (map[string]ClusterStatus, error) {
	prev, base, err := readClusterStatus(ctx, r.cms)
	if err != nil {
		return nil, err
	}
	now := metav1.NewTime(r.clock.Now())
	next := make(map[string]ClusterStatus, len(r.clusters))
	probed := make(map[string]ClusterStatus, len(r.clusters))
	var (
		mu sync.Mutex
		wg sync.WaitGroup
	)
	for alias, cl := range r.clusters {
		wg.Go(func() {
			pctx, cancel := context.WithTimeout(ctx, probeTimeout)
			defer cancel()
			st := probe(pctx, cl)
			mu.Lock()
			probed[alias] = st
			mu.Unlock()
		})
	}
	wg.Wait()
	for alias, st := range probed {
		st.Since = now
		if p, ok := prev[alias]; ok && p.State == st.State {
			st.Since = p.Since
		}
		next[alias] = st
		r.opts.Metrics.cluster(alias, st.State)
		if st.State != ClusterReachable {
			r.opts.Log.Warn(st.Message, "cluster", alias, "state", st.State)
		}
	}
	if r.opts.DryRun || apiequality.Semantic.DeepEqual(prev, next) {
		return next, nil
	}
	// NOTE: another reconciler recording at the same time wins; both saw the
	// same clusters, and the next check records again if they differ.
	if err := r.writeClusterStatus(ctx, base, next); !errors.Is(err, errClusterStatusRace) {
		return next, err
	}
	return next, nil
}

func probe(ctx context.Context, cl *buildCluster) ClusterStatus {
	st := ClusterStatus{State: ClusterReachable, Namespace: cl.namespace}
	pods := cl.pods.Pods(cl.namespace)
	_, err := pods.List(ctx, metav1.ListOptions{Limit: 1, LabelSelector: job.LabelManagedBy + "=" + job.ManagedByValue})
	if err == nil {
		_, err = pods.Create(ctx, probePod(cl.namespace), metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
	}
	switch {
	case err == nil:
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		st.State, st.Message = ClusterForbidden, apiMessage(err)
	case isRequestError(err) && !apierrors.IsNotFound(err):
		// the probe pod itself was refused (admission policy): the cluster
		// answered and lockctl may create pods.
	default:
		st.State, st.Message = ClusterUnreachable, err.Error()
	}
	return st
}

func probePod(namespace string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			GenerateName: "lockctl-probe-",
			Namespace:    namespace,
			Labels:       map[string]string{job.LabelManagedBy: job.ManagedByValue},
		},
		Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "probe", Image: "probe"}}},
	}
}

// ReadClusterStatus returns the recorded reachability of each build cluster,
// empty if no reconciler recorded any yet.
func ReadClusterStatus(ctx context.Context, cms kube.ConfigMapInterface) (map[string]ClusterStatus, error) {
	st, _, err := readClusterStatus(ctx, cms)
	return st, err
}

// readClusterStatus returns the recorded status and the ConfigMap it was
// read from (nil when there is none), whose resourceVersion a write of a
// status derived from it must be conditional on.
func readClusterStatus(ctx context.Context, cms kube.ConfigMapInterface) (map[string]ClusterStatus, *corev1.ConfigMap, error) {
	cm, err := cms.Get(ctx, ClusterStatusName, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return map[string]ClusterStatus{}, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("get cluster status: %w", err)
	}
	out := map[string]ClusterStatus{}
	if err := json.Unmarshal([]byte(cm.Data[clustersKey]), &out); err != nil {
		return nil, nil, fmt.Errorf("decode cluster status %q: %w", cm.Name, err)
	}
	return out, cm, nil
}

// writeClusterStatus replaces the status read from base (nil: there was
// none) with st, a compare-and-swap on base's resourceVersion: a status
// someone wrote since base was read is never overwritten.
func (r *Reconciler) writeClusterStatus(ctx context.Context, base *corev1.ConfigMap, st map[string]ClusterStatus) error {
	data, err := json.Marshal(st)
	if err != nil {
		return fmt.Errorf("encode cluster status: %w", err)
	}
	if base == nil {
		_, err = r.cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:      ClusterStatusName,
				Namespace: r.namespace,
				Labels:    map[string]string{job.LabelManagedBy: job.ManagedByValue, job.LabelKind: KindClusters},
			},
			Data: map[string]string{clustersKey: string(data)},
		}, metav1.CreateOptions{})
	} else {
		cm := base.DeepCopy()
		cm.Data = map[string]string{clustersKey: string(data)}
		_, err = r.cms.Update(ctx, cm, metav1.UpdateOptions{})
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) {
		return errClusterStatusRace
	}
	if err != nil {
		return fmt.Errorf("record cluster status: %w", err)
	}
	return nil
}

// errClusterStatusRace: another reconciler wrote the cluster status first.
var errClusterStatusRace = errors.New("cluster status changed meanwhile")

// recordAttempts bounds how often recordCluster re-reads a status ConfigMap
// that other reconcilers keep changing.
const recordAttempts = 5

// recordCluster records one build cluster's reachability in the cluster
// status ConfigMap, keeping the other clusters' entries, with a
// compare-and-swap. An entry already saying the same is left alone, and one
// in the same state keeps its since.
func (r *Reconciler) recordCluster(ctx context.Context, alias string, st ClusterStatus) error {
	for range recordAttempts {
		prev, base, err := readClusterStatus(ctx, r.cms)
		if err != nil {
			return err
		}
		if p, ok := prev[alias]; ok && p.State == st.State {
			if p.Message == st.Message && p.Namespace == st.Namespace {
				return nil
			}
			st.Since = p.Since
		}
		prev[alias] = st
		err = r.writeClusterStatus(ctx, base, prev)
		if !errors.Is(err, errClusterStatusRace) {
			return err
		}
	}
	return errClusterStatusRace
}
