package scheduler

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/preflight"
)

// Timing of the connections to build clusters.
const (
	// probeTimeout bounds one reachability check of a build cluster.
	probeTimeout = 10 * time.Second
	// syncTimeout bounds the first list of a build cluster's caches.
	syncTimeout = 30 * time.Second
	// retryMin is the first wait before checking an unreachable build
	// cluster again; it doubles up to retryMax.
	retryMin = time.Second
	retryMax = 30 * time.Second
	// shutdownGrace is how long the steps in flight may go on after the
	// loop was told to stop, before their API calls are cancelled.
	shutdownGrace = 5 * time.Second
)

// ClusterUnavailableError is the error of a job whose build cluster can not
// be reached now. The job is left as it is, its timeouts unjudged, and looked
// at again once the cluster answers.
type ClusterUnavailableError struct {
	Cluster string
	// Err is the failed call, nil when the cluster was known to be away.
	Err error
}

func (e *ClusterUnavailableError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("build cluster %q is not reachable", e.Cluster)
	}
	return fmt.Sprintf("build cluster %q is not reachable: %v", e.Cluster, e.Err)
}

func (e *ClusterUnavailableError) Unwrap() error { return e.Err }

// UnreachableClustersError is what RunOnce returns when build clusters could
// not be reached: every other job was driven, theirs were left as they were.
type UnreachableClustersError struct {
	// Clusters maps each alias to what its API server answered.
	Clusters map[string]string
}

func (e *UnreachableClustersError) Error() string {
	aliases := make([]string, 0, len(e.Clusters))
	for a := range e.Clusters {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	parts := make([]string, len(aliases))
	for i, a := range aliases {
		parts[i] = fmt.Sprintf("%q (%s)", a, e.Clusters[a])
	}
	return "build clusters not reachable, their jobs were left as they were: " + strings.Join(parts, ", ")
}

// unavailable turns an error of a call to a build cluster that never got an
// answer (refused, reset, timed out, the server shutting down) into a
// *ClusterUnavailableError; other errors pass through.
func unavailable(cl *buildCluster, err error) error {
	var (
		netErr net.Error
		urlErr *url.Error
		cu     *ClusterUnavailableError
	)
	switch {
	case err == nil || errors.As(err, &cu):
		return err
	case errors.As(err, &netErr), errors.As(err, &urlErr), errors.Is(err, io.EOF), errors.Is(err, io.ErrUnexpectedEOF),
		apierrors.IsServiceUnavailable(err):
		return &ClusterUnavailableError{Cluster: cl.alias, Err: err}
	}
	return err
}

// clusterConn is the Controller's connection to one build cluster: its pod
// (and, where allowed, node) caches, which run only while it answers, and its
// reachability. Jobs of a cluster that is not ready are not looked at.
type clusterConn struct {
	alias string
	cs    Clientset
	cl    *buildCluster

	ready atomic.Bool
	poke  chan struct{}

	mu      sync.Mutex
	podInf  cache.SharedIndexInformer
	nodeInf cache.SharedIndexInformer
	stop    context.CancelFunc
	status  ClusterStatus
	// recorded is the status last written to the cluster status ConfigMap.
	recorded ClusterStatus
	// noNodesSaid: the missing node permission was logged.
	noNodesSaid bool
}

// pods returns the pod cache while the cluster is ready, else nil.
func (cc *clusterConn) pods() cache.SharedIndexInformer {
	if !cc.ready.Load() {
		return nil
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	return cc.podInf
}

// node returns a cached node, nil when unknown or nodes are not read.
func (cc *clusterConn) node(name string) *corev1.Node {
	cc.mu.Lock()
	inf := cc.nodeInf
	cc.mu.Unlock()
	if inf == nil {
		return nil
	}
	obj, ok, err := inf.GetIndexer().GetByKey(name)
	if err != nil || !ok {
		return nil
	}
	return obj.(*corev1.Node)
}

// disconnect stops the caches; the next connect lists everything afresh,
// so a cache that fell behind while the cluster was away is never used.
func (cc *clusterConn) disconnect() {
	cc.ready.Store(false)
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if cc.stop != nil {
		cc.stop()
	}
	cc.podInf, cc.nodeInf, cc.stop = nil, nil, nil
}

// wake asks the cluster's watcher to check it now.
func (cc *clusterConn) wake() {
	select {
	case cc.poke <- struct{}{}:
	default:
	}
}

// connect checks that the cluster answers and, if it does and its caches do
// not run yet, starts them and waits (at most syncTimeout) for their first
// list. life bounds the caches' life; ctx the waiting.
func (c *Controller) connect(ctx, life context.Context, cc *clusterConn) ClusterStatus {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	st := probe(pctx, cc.cl)
	cancel()
	if ctx.Err() != nil {
		return st
	}
	if st.State != ClusterReachable {
		cc.disconnect()
		return st
	}
	if cc.ready.Load() {
		return st
	}
	if err := c.startCaches(ctx, life, cc); err != nil {
		cc.disconnect()
		st.State, st.Message = ClusterUnreachable, err.Error()
		return st
	}
	cc.ready.Store(true)
	c.clusterBack(cc.alias)
	return st
}

// startCaches starts the cluster's pod cache, and its node cache when nodes
// may be listed and watched, and waits for their first list.
func (c *Controller) startCaches(ctx, parent context.Context, cc *clusterConn) error {
	cctx, stop := context.WithCancel(parent)
	podSelector := job.LabelManagedBy + "=" + job.ManagedByValue + "," + job.LabelRecordNamespace + "=" + c.namespace
	podInf := kube.NewInformer[*corev1.PodList](cc.cs, cc.cs.CoreV1().Pods(cc.cl.namespace), &corev1.Pod{}, kube.InformerOptions{
		Resync: resyncPeriod, Transform: cachePod,
		Tweak: func(o *metav1.ListOptions) { o.LabelSelector = podSelector },
	})
	if err := c.addPodHandlers(cc.alias, podInf); err != nil {
		stop()
		return err
	}
	// A broken watch is the first sign of a cluster going away: check it
	// at once rather than at the next interval.
	wake := func(r *cache.Reflector, err error) {
		cache.DefaultWatchErrorHandler(ctx, r, err)
		cc.wake()
	}
	if err := podInf.SetWatchErrorHandler(wake); err != nil {
		stop()
		return fmt.Errorf("watch pods of cluster %q: %w", cc.alias, err)
	}
	synced := []cache.InformerSynced{podInf.HasSynced}
	var nodeInf cache.SharedIndexInformer
	if c.mayReadNodes(ctx, cc) {
		nodeInf = kube.NewInformer[*corev1.NodeList](cc.cs, cc.cs.CoreV1().Nodes(), &corev1.Node{}, kube.InformerOptions{
			Resync: resyncPeriod, Transform: trimNode,
		})
		if err := c.addNodeHandlers(cc, nodeInf); err != nil {
			stop()
			return err
		}
		synced = append(synced, nodeInf.HasSynced)
		go nodeInf.RunWithContext(cctx)
	}
	go podInf.RunWithContext(cctx)
	sctx, cancel := context.WithTimeout(ctx, syncTimeout)
	defer cancel()
	if !cache.WaitForCacheSync(sctx.Done(), synced...) {
		stop()
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("caches did not sync within %s", syncTimeout)
	}
	cc.mu.Lock()
	cc.podInf, cc.nodeInf, cc.stop = podInf, nodeInf, stop
	cc.mu.Unlock()
	return nil
}

// mayReadNodes asks whether nodes may be listed and watched in the cluster.
// Without that, pods are judged by their own conditions, which is said once
// at -v 1.
func (c *Controller) mayReadNodes(ctx context.Context, cc *clusterConn) bool {
	ok := true
	for _, verb := range []string{"list", "watch"} {
		allowed, err := preflight.Can(ctx, cc.cs.AuthorizationV1(), preflight.Permission{Verb: verb, Resource: "nodes"})
		ok = ok && err == nil && allowed
	}
	cc.mu.Lock()
	defer cc.mu.Unlock()
	if !ok && !cc.noNodesSaid {
		cc.noNodesSaid = true
		c.opts.Log.Debug("may not list and watch nodes: a pod's lost node is told by the pod's own conditions", "cluster", cc.alias)
	}
	return ok
}

// clusterBack queues every unfinished job of a cluster that has just become
// ready, and an admission pass.
func (c *Controller) clusterBack(alias string) {
	for _, j := range c.activeJobs() {
		if j.ClusterAlias() == alias {
			c.enqueue(j.Name)
		}
	}
	c.queue.Add(admissionKey)
}

// watchCluster keeps a build cluster connected until ctx ends: it checks it
// every clusterCheckInterval while it answers, and with a back-off from
// retryMin to retryMax while it does not; at once when a step or a watch
// found it away.
func (c *Controller) watchCluster(ctx, life context.Context, cc *clusterConn) {
	wait := retryMin
	for {
		st := c.connect(ctx, life, cc)
		if ctx.Err() != nil {
			return
		}
		c.record(ctx, cc, st)
		next := clusterCheckInterval
		if st.State != ClusterReachable {
			next, wait = wait, min(2*wait, retryMax)
		} else {
			wait = retryMin
		}
		t := c.r.clock.NewTimer(next)
		select {
		case <-ctx.Done():
			t.Stop()
			return
		case <-t.C():
		case <-cc.poke:
			t.Stop()
		}
	}
}

// lostCluster handles a step that found its build cluster away: the job is
// left for when the cluster is back, and the cluster is checked at once.
func (c *Controller) lostCluster(cu *ClusterUnavailableError) {
	if cc := c.conns[cu.Cluster]; cc != nil && cu.Err != nil {
		cc.wake()
	}
}

// record logs a change of a cluster's reachability once, at the default
// level, updates the metrics and the cluster status ConfigMap.
func (c *Controller) record(ctx context.Context, cc *clusterConn, st ClusterStatus) {
	now := metav1.NewTime(c.r.clock.Now())
	cc.mu.Lock()
	prev := cc.status
	st.Since = now
	if prev.State == st.State {
		st.Since = prev.Since
	}
	changed := prev.State != st.State || prev.Message != st.Message
	cc.status = st
	unrecorded := cc.recorded.State != st.State || cc.recorded.Message != st.Message
	cc.mu.Unlock()
	c.opts.Metrics.cluster(cc.alias, st.State)
	log := c.opts.Log.With("cluster", cc.alias)
	if changed {
		switch {
		case st.State != ClusterReachable:
			log.Warn("build cluster not usable: its jobs wait until it is", "state", st.State, "err", st.Message)
		case prev.State != "":
			log.Info("build cluster reachable again: driving its jobs")
		default:
			log.Debug("build cluster reachable")
		}
	}
	if c.opts.DryRun || !unrecorded {
		return
	}
	// NOTE: a write that fails is tried again at the next check.
	if err := c.r.recordCluster(ctx, cc.alias, st); err != nil {
		if ctx.Err() == nil {
			log.Debug("record build cluster status", "error", err)
		}
		return
	}
	cc.mu.Lock()
	cc.recorded = st
	cc.mu.Unlock()
}

// unreachable returns the clusters that are not ready, with why.
func (c *Controller) unreachable() map[string]string {
	out := map[string]string{}
	for alias, cc := range c.conns {
		if cc.ready.Load() {
			continue
		}
		cc.mu.Lock()
		msg := cc.status.Message
		cc.mu.Unlock()
		if msg == "" {
			msg = "not checked"
		}
		out[alias] = msg
	}
	return out
}

// trimNode keeps of a node what liveness.Judge reads: its name and Ready
// condition.
func trimNode(obj any) (any, error) {
	node, ok := obj.(*corev1.Node)
	if !ok {
		return obj, nil
	}
	out := &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: node.Name, UID: node.UID, ResourceVersion: node.ResourceVersion}}
	for _, cond := range node.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			cond.Message = ""
			out.Status.Conditions = []corev1.NodeCondition{cond}
		}
	}
	return out, nil
}

func nodeReady(obj any) corev1.ConditionStatus {
	if n, ok := unwrap(obj).(*corev1.Node); ok {
		for _, cond := range n.Status.Conditions {
			if cond.Type == corev1.NodeReady {
				return cond.Status
			}
		}
	}
	return corev1.ConditionUnknown
}

// addNodeHandlers queues the jobs whose pods run on a node whose readiness
// changed.
func (c *Controller) addNodeHandlers(cc *clusterConn, inf cache.SharedIndexInformer) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		UpdateFunc: func(old, cur any) {
			if nodeReady(old) == nodeReady(cur) {
				return
			}
			pods := cc.pods()
			if pods == nil {
				return
			}
			name := nameOf(cur)
			for _, obj := range pods.GetIndexer().List() {
				if p, ok := obj.(metav1.Object); ok && podNode(obj) == name {
					c.enqueue(p.GetLabels()[job.LabelRecord])
				}
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watch nodes of cluster %q: %w", cc.alias, err)
	}
	return nil
}
