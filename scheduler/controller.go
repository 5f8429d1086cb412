package scheduler

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
)

// Timing of the Controller.
const (
	// resyncPeriod re-delivers every cached object, a safety net for missed
	// events.
	resyncPeriod = 10 * time.Minute
	// clusterCheckInterval is how often a reachable build cluster is
	// checked (two small requests): often enough that a cluster going away
	// is noticed, recorded and its jobs left alone within seconds.
	clusterCheckInterval = 15 * time.Second
	// stepTimeout bounds one reconcile step.
	stepTimeout = time.Minute
	// onceAttempts is how often RunOnce tries a job whose write lost a race.
	onceAttempts = 3
)

// admissionKey is the work-queue key of an admission pass; it can not clash
// with a job name, which is a DNS label.
const admissionKey = "#admission"

// errStepTimeout is the cause of a step's timeout.
//
// NOTE: its words spell stepTimeout (TestStaticErrorsSpellDurations): a
// message built with stepTimeout.String() would make the package's init
// run in every lockctl command (docs/adr/0100).
var errStepTimeout = errors.New("reconcile step took longer than 1m0s")

// Controller runs a Reconciler from informers on the job records, the
// admission ledger and the job pods of every build cluster, through a
// rate-limited work queue served by Options.Workers goroutines.
type Controller struct {
	r         *Reconciler
	opts      Options
	namespace string
	queue     workqueue.TypedRateLimitingInterface[string]

	jobs      Clientset
	informers []cache.SharedIndexInformer
	jobInf    cache.SharedIndexInformer
	ledgerInf cache.SharedIndexInformer
	conns     map[string]*clusterConn

	// decoded holds every cached job record decoded without its pod
	// template (see decode).
	decoded sync.Map // job name → decodedJob
}

type decodedJob struct {
	rv  string
	job *job.Job
}

// NewController returns a Controller for the job records in namespace of the
// jobs cluster, whose pods run in the given build clusters (alias →
// clientset).
func NewController(jobs Clientset, namespace string, clusters map[string]Clientset, opts Options) (*Controller, error) {
	opts = opts.withDefaults()
	c := &Controller{
		opts:      opts,
		namespace: namespace,
		jobs:      jobs,
		conns:     map[string]*clusterConn{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.DefaultTypedControllerRateLimiter[string](),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "lockctl-jobs", Clock: opts.Clock}),
	}
	pods := make(map[string]kube.PodsGetter, len(clusters))
	nodes := make(map[string]func(string) *corev1.Node, len(clusters))
	for alias, cs := range clusters {
		cc := &clusterConn{alias: alias, cs: cs, poke: make(chan struct{}, 1)}
		c.conns[alias] = cc
		pods[alias], nodes[alias] = cs.CoreV1(), cc.node
	}
	r, err := newReconciler(jobs.CoreV1(), namespace, pods, opts, controllerHooks{
		read:    &cacheReader{c: c},
		nodes:   nodes,
		idBlock: c.triggered,
		onAdmit: func(names []string) {
			for _, n := range names {
				c.enqueue(n)
			}
		},
		onTerminal: c.finished,
	})
	if err != nil {
		return nil, err
	}
	c.r = r
	for alias, cc := range c.conns {
		cc.cl = r.clusters[alias]
	}
	cms := jobs.CoreV1().ConfigMaps(namespace)
	c.jobInf = kube.NewInformer[*corev1.ConfigMapList](jobs, cms, &corev1.ConfigMap{}, kube.InformerOptions{
		Resync: resyncPeriod, Transform: trimJobRecord,
		Tweak: func(o *metav1.ListOptions) { o.LabelSelector = job.Selector },
	})
	c.ledgerInf = kube.NewInformer[*corev1.ConfigMapList](jobs, cms, &corev1.ConfigMap{}, kube.InformerOptions{
		Resync: resyncPeriod, Transform: stripManagedFields,
		Tweak: func(o *metav1.ListOptions) { o.FieldSelector = "metadata.name=" + LedgerName },
	})
	c.informers = append(c.informers, c.jobInf, c.ledgerInf)
	if err := c.addHandlers(); err != nil {
		return nil, err
	}
	return c, nil
}

// triggered counts the cached job records of a job name still waiting to
// start, by their labels: how many build IDs the name will need soon.
func (c *Controller) triggered(jobName string) int {
	n := 0
	for _, obj := range c.jobInf.GetIndexer().List() {
		if o, ok := obj.(metav1.Object); ok && o.GetLabels()[job.LabelJob] == jobName && o.GetLabels()[job.LabelState] == string(job.Triggered) {
			n++
		}
	}
	return n
}

// Reconciler returns the controller's reconciler.
func (c *Controller) Reconciler() *Reconciler { return c.r }

// finished wakes what a finished job may have been holding up: the jobs
// waiting for admission, and those waiting for the same namespace lock.
func (c *Controller) finished(j *job.Job) {
	c.queue.Add(admissionKey)
	if j.Spec.Lock == nil {
		return
	}
	for _, o := range c.activeJobs() {
		if o.Spec.Lock != nil && o.Spec.Lock.Namespace == j.Spec.Lock.Namespace {
			c.enqueue(o.Name)
		}
	}
}

func (c *Controller) enqueue(name string) {
	if name != "" && (c.opts.OnlyJob == "" || c.opts.OnlyJob == name) {
		c.queue.Add(name)
	}
}

func (c *Controller) addHandlers() error {
	_, err := c.jobInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueue(nameOf(obj)) },
		UpdateFunc: func(old, cur any) {
			c.enqueue(nameOf(cur))
			if completed(cur) && !completed(old) {
				// NOTE: forgotten here, not only by the next walk over
				// every job (decode), which admissionIdle may skip.
				c.decoded.Delete(nameOf(cur))
				c.queue.Add(admissionKey)
			}
		},
		DeleteFunc: func(obj any) {
			c.decoded.Delete(nameOf(obj))
			c.enqueue(nameOf(obj))
			c.queue.Add(admissionKey)
		},
	})
	if err != nil {
		return fmt.Errorf("watch job records: %w", err)
	}
	_, err = c.ledgerInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { c.queue.Add(admissionKey) },
		UpdateFunc: func(any, any) { c.queue.Add(admissionKey) },
	})
	if err != nil {
		return fmt.Errorf("watch admission ledger: %w", err)
	}
	return nil
}

// addPodHandlers queues the job of every pod of a build cluster that
// changes, and an admission pass when a pod stops.
func (c *Controller) addPodHandlers(alias string, inf cache.SharedIndexInformer) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc: func(obj any) { c.enqueuePod(alias, obj) },
		UpdateFunc: func(old, cur any) {
			c.enqueuePod(alias, cur)
			if podDone(cur) && !podDone(old) {
				c.queue.Add(admissionKey)
			}
		},
		DeleteFunc: func(obj any) {
			if pod := asPod(obj); pod != nil {
				c.r.rememberGone(alias, pod)
			}
			c.enqueuePod(alias, obj)
			c.queue.Add(admissionKey)
		},
	})
	if err != nil {
		return fmt.Errorf("watch pods of cluster %q: %w", alias, err)
	}
	return nil
}

// enqueuePod queues the job of a pod that changed; the pod cache has now
// seen it, so the reconciler stops remembering it as just created.
func (c *Controller) enqueuePod(alias string, obj any) {
	pod, ok := unwrap(obj).(metav1.Object)
	if !ok {
		return
	}
	c.r.created.Delete(alias + "/" + pod.GetName())
	if labels := pod.GetLabels(); labels[job.LabelRecordNamespace] == c.namespace {
		c.enqueue(labels[job.LabelRecord])
	}
}

func unwrap(obj any) any {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		return t.Obj
	}
	return obj
}

func nameOf(obj any) string {
	if o, ok := unwrap(obj).(metav1.Object); ok {
		return o.GetName()
	}
	return ""
}

func completed(obj any) bool {
	o, ok := unwrap(obj).(metav1.Object)
	return ok && o.GetLabels()[job.LabelComplete] == "true"
}

func podDone(obj any) bool {
	phase := podPhase(obj)
	return phase == corev1.PodSucceeded || phase == corev1.PodFailed
}

// startJobs checks that the job API server answers, at once and within
// probeTimeout, then runs the job and ledger informers until life
// ends and waits, as long as ctx lets it, for their first list.
func (c *Controller) startJobs(ctx, life context.Context) error {
	pctx, cancel := context.WithTimeout(ctx, probeTimeout)
	_, err := c.jobs.CoreV1().ConfigMaps(c.namespace).List(pctx, metav1.ListOptions{LabelSelector: job.Selector, Limit: 1})
	cancel()
	if err != nil {
		if ctx.Err() != nil {
			return context.Cause(ctx)
		}
		return fmt.Errorf("list job records in namespace %q: %w", c.namespace, err)
	}
	for _, inf := range c.informers {
		go inf.RunWithContext(life)
	}
	if !cache.WaitForCacheSync(ctx.Done(), c.jobInf.HasSynced, c.ledgerInf.HasSynced) {
		return fmt.Errorf("sync job caches: %w", context.Cause(ctx))
	}
	c.opts.Metrics.setJobSource(c.eachJob)
	return nil
}

// stepsContext returns the context reconcile steps run on: it outlives ctx
// by shutdownGrace, so that a signal lets the steps in flight finish their
// writes, but a call that hangs (a build cluster that stopped answering)
// never holds the exit up for longer.
func (c *Controller) stepsContext(ctx context.Context) (context.Context, context.CancelFunc) {
	steps, cancel := context.WithCancelCause(context.WithoutCancel(ctx))
	stop := context.AfterFunc(ctx, func() {
		t := c.r.clock.NewTimer(shutdownGrace)
		defer t.Stop()
		select {
		case <-t.C():
			cancel(errShuttingDown)
		case <-steps.Done():
		}
	})
	return steps, func() {
		stop()
		cancel(nil)
	}
}

// errShuttingDown is the cause of the cancelled steps at shutdown; its
// words spell shutdownGrace, as errStepTimeout's stepTimeout.
var errShuttingDown = errors.New("stopped: the steps in flight had 5s to finish")

// Run reconciles jobs as their records and pods change until ctx is
// cancelled, then finishes the steps in flight (for at most a few seconds)
// and returns nil. Each build cluster is connected on its own: the jobs of
// those that answer are driven at once, those of a cluster that does not
// wait, and it is tried again with a back-off. An unreachable job API server
// is an error at once.
func (c *Controller) Run(ctx context.Context) error {
	informerCtx, stopInformers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopInformers()
	if err := c.startJobs(ctx, informerCtx); err != nil {
		if ctx.Err() != nil {
			return nil
		}
		return err
	}
	c.queue.Add(admissionKey)
	var wg sync.WaitGroup
	for _, cc := range c.conns {
		wg.Go(func() { c.watchCluster(ctx, informerCtx, cc) })
	}
	steps, stopSteps := c.stepsContext(ctx)
	defer stopSteps()
	for range c.opts.Workers {
		wg.Go(func() { c.work(ctx, steps) })
	}
	<-ctx.Done()
	c.queue.ShutDown()
	wg.Wait()
	return nil
}

func (c *Controller) work(ctx, steps context.Context) {
	for {
		key, shutdown := c.queue.Get()
		if shutdown {
			return
		}
		if ctx.Err() != nil {
			c.queue.Done(key)
			return
		}
		res, err := c.step(steps, key)
		var cu *ClusterUnavailableError
		switch {
		case errors.As(err, &cu):
			// NOTE: not rate-limited: the job comes back when its cluster
			// does (clusterBack), however long that takes.
			c.queue.Forget(key)
			c.lostCluster(cu)
		case err != nil:
			c.logStepError(key, err)
			c.queue.AddRateLimited(key)
		case res.RequeueAfter > 0:
			c.queue.Forget(key)
			c.queue.AddAfter(key, res.RequeueAfter)
		default:
			c.queue.Forget(key)
		}
		c.queue.Done(key)
	}
}

func (c *Controller) step(base context.Context, key string) (Result, error) {
	ctx, cancel := context.WithTimeoutCause(base, stepTimeout, errStepTimeout)
	defer cancel()
	if key == admissionKey {
		if c.r.admissionIdle(ctx) {
			return Result{}, nil
		}
		_, _, err := c.r.Admit(ctx)
		return Result{}, err
	}
	return c.r.Reconcile(ctx, key)
}

func (c *Controller) logStepError(key string, err error) {
	log := c.opts.Log.With("job", key, "error", err)
	if errors.Is(err, job.ErrConflict) {
		log.Debug("lost a race, trying again")
		return
	}
	log.Warn("reconcile failed, trying again")
}

// RunOnce looks at every job that is not terminal once, oldest first, and
// returns when all have been looked at: the cron pass. Every build cluster
// is checked and its caches filled at the same time, each within a bounded
// time; the jobs of clusters that do not answer are left as they are, and
// RunOnce then returns an *UnreachableClustersError naming them. Requeue
// times are ignored; a job whose write lost a race is tried again at once,
// up to three times. In a dry run nothing is written and
// Reconciler().Plan() tells what would have been done.
func (c *Controller) RunOnce(ctx context.Context) error {
	informerCtx, stopInformers := context.WithCancel(context.WithoutCancel(ctx))
	defer stopInformers()
	if err := c.startJobs(ctx, informerCtx); err != nil {
		return err
	}
	var wg sync.WaitGroup
	for _, cc := range c.conns {
		wg.Go(func() {
			st := c.connect(ctx, informerCtx, cc)
			if ctx.Err() == nil {
				c.record(ctx, cc, st)
			}
		})
	}
	wg.Wait()
	if ctx.Err() != nil {
		return context.Cause(ctx)
	}
	var names []string
	for _, j := range c.activeJobs() {
		if c.opts.OnlyJob == "" || c.opts.OnlyJob == j.Name {
			names = append(names, j.Name)
		}
	}
	workers := c.opts.Workers
	if c.opts.DryRun {
		workers = 1 // the plan reads in job order
	}
	steps, stopSteps := c.stepsContext(ctx)
	defer stopSteps()
	err := c.each(ctx, steps, names, workers)
	if ctx.Err() != nil {
		return errors.Join(err, context.Cause(ctx))
	}
	if away := c.unreachable(); len(away) > 0 {
		err = errors.Join(err, &UnreachableClustersError{Clusters: away})
	}
	return err
}

// each reconciles names with the given number of workers, in order, until
// ctx ends; the steps run on steps.
func (c *Controller) each(ctx, steps context.Context, names []string, workers int) error {
	todo := make(chan string)
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	for range workers {
		wg.Go(func() {
			for name := range todo {
				err := c.once(steps, name)
				var cu *ClusterUnavailableError
				if errors.As(err, &cu) {
					c.away(cu)
					continue
				}
				if err != nil {
					mu.Lock()
					errs = append(errs, fmt.Errorf("job %q: %w", name, err))
					mu.Unlock()
				}
			}
		})
	}
	for _, n := range names {
		if ctx.Err() != nil {
			break
		}
		todo <- n
	}
	close(todo)
	wg.Wait()
	return errors.Join(errs...)
}

// away marks a cluster that stopped answering during a --once pass as
// unreachable, so the pass reports it and leaves its other jobs alone.
func (c *Controller) away(cu *ClusterUnavailableError) {
	cc := c.conns[cu.Cluster]
	if cc == nil || cu.Err == nil || !cc.ready.Load() {
		return
	}
	cc.disconnect()
	c.record(context.Background(), cc, ClusterStatus{
		State: ClusterUnreachable, Message: cu.Err.Error(), Namespace: cc.cl.namespace,
	})
}

func (c *Controller) once(steps context.Context, name string) error {
	var err error
	for range onceAttempts {
		if _, err = c.step(steps, name); !errors.Is(err, job.ErrConflict) {
			return err
		}
	}
	return err
}

// allJobs returns every job in the cache that is not complete (see
// decode).
func (c *Controller) allJobs() []*job.Job {
	var out []*job.Job
	for _, obj := range c.jobInf.GetIndexer().List() {
		if j := c.decode(obj); j != nil {
			out = append(out, j)
		}
	}
	return out
}

// eachJob tells add of every job in the cache: its state, job name and
// type, read from the labels every record carries when the job is complete
// (decode keeps none of those).
func (c *Controller) eachJob(add func(state job.State, name string, typ job.Type)) {
	for _, obj := range c.jobInf.GetIndexer().List() {
		cm, ok := obj.(*corev1.ConfigMap)
		switch {
		case !ok || !job.IsJobConfigMap(cm):
		case cm.Labels[job.LabelComplete] == "true":
			add(job.State(cm.Labels[job.LabelState]), cm.Labels[job.LabelJob], job.Type(cm.Labels[job.LabelType]))
		default:
			if j := c.decode(cm); j != nil {
				add(j.Status.State, j.Spec.Job, j.Spec.Type)
			}
		}
	}
}

func (c *Controller) activeJobs() []*job.Job {
	var out []*job.Job
	for _, j := range c.allJobs() {
		if !j.IsTerminal() {
			out = append(out, j)
		}
	}
	job.SortByStart(out)
	return out
}
