package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"sync/atomic"
	"text/template"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
)

// Reconciler drives the job records of one namespace. It is safe to call
// Reconcile from several goroutines for different jobs, and to run several
// Reconcilers, in several processes, over the same jobs.
type Reconciler struct {
	store     *job.Store
	cms       kube.ConfigMapInterface
	namespace string
	clusters  map[string]*buildCluster
	read      reader
	opts      Options
	clock     clock.WithTicker
	url       *template.Template

	// written holds the last job this reconciler wrote, so that it never
	// acts on a cache that has not seen its own writes; created holds, when
	// reading from caches, the pods it created that the pod cache has not
	// shown yet (the Controller forgets them on the pod's first event).
	written      sync.Map // job name → writtenJob
	simulated    sync.Map // job name → *job.Job, in a dry run: what it would have written
	created      sync.Map // cluster/pod name → *corev1.Pod
	trackCreated bool
	// gone holds, when reading from caches, the job pods without lockctl's
	// finalizer that the pod cache saw deleted, as last seen and marked
	// deleted, until their job has been looked at (see rememberGone).
	gone sync.Map // cluster/pod name → *corev1.Pod

	admitMu    sync.Mutex
	lastLedger *corev1.ConfigMap
	// waiting is how many jobs the last admission pass left waiting; -1
	// until a pass has run (see admissionIdle).
	waiting atomic.Int64

	planMu sync.Mutex
	plan   []string

	// hooks are the Controller's, when one drives the reconciler.
	hooks controllerHooks
}

// controllerHooks are what a Controller gives the Reconciler it drives, at
// construction: reads from its caches instead of the API server, and calls
// back when something it waits on happens. The zero value reads from the
// API server and calls nothing.
type controllerHooks struct {
	// read reads from the Controller's caches; nil means the API server.
	// The reconciler then also remembers the pods it created until the
	// pod cache shows them.
	read reader
	// nodes returns, by build cluster alias, a cluster's cached node by
	// name; a cluster without one has its pods judged by their own
	// conditions.
	nodes map[string]func(name string) *corev1.Node
	// onAdmit is told of the jobs an admission pass newly admitted.
	onAdmit func(names []string)
	// onTerminal is told of a job that has just ended.
	onTerminal func(j *job.Job)
	// idBlock counts the jobs of a job name waiting to start: the build IDs
	// worth reserving with one counter update.
	idBlock func(jobName string) int
}

// NewReconciler returns a Reconciler for the job records in namespace, whose
// pods run in the given build clusters (alias → pods client). Without a
// Controller it reads straight from the API server.
func NewReconciler(cms kube.ConfigMapsGetter, namespace string, clusters map[string]kube.PodsGetter, opts Options) (*Reconciler, error) {
	return newReconciler(cms, namespace, clusters, opts, controllerHooks{})
}

// newReconciler is NewReconciler for a Controller, which gives its hooks.
func newReconciler(cms kube.ConfigMapsGetter, namespace string, clusters map[string]kube.PodsGetter, opts Options, hooks controllerHooks) (*Reconciler, error) {
	opts = opts.withDefaults()
	r := &Reconciler{
		cms:          cms.ConfigMaps(namespace),
		namespace:    namespace,
		clusters:     map[string]*buildCluster{},
		opts:         opts,
		clock:        opts.Clock,
		hooks:        hooks,
		read:         hooks.read,
		trackCreated: hooks.read != nil,
	}
	r.waiting.Store(-1)
	r.store = job.NewStore(cms, namespace, job.StoreOptions{Clock: opts.Clock, BuildIDBlock: hooks.idBlock, OnChange: opts.OnJobChange})
	podNS := opts.PodNamespace
	if podNS == "" {
		podNS = namespace
	}
	for alias, pods := range clusters {
		r.clusters[alias] = &buildCluster{alias: alias, namespace: podNS, pods: pods, node: hooks.nodes[alias]}
	}
	if r.read == nil {
		r.read = &apiReader{store: r.store, cms: r.cms}
	}
	if opts.JobURLTemplate != "" {
		t, err := template.New("url").Option("missingkey=error").Parse(opts.JobURLTemplate)
		if err != nil {
			return nil, &ConfigError{Source: "options", Key: "jobURLTemplate", Msg: err.Error()}
		}
		r.url = t
	}
	return r, nil
}

// Store returns the job store the reconciler writes through.
func (r *Reconciler) Store() *job.Store { return r.store }

// judgeAttempts bounds how often one look at a job judges it again after a
// write lost to a change of a job record (see staleError).
const judgeAttempts = 5

// Reconcile looks at the job record called name once: it supersedes older
// duplicates, starts, follows or finishes the job, and returns when its next
// timeout falls due. A job that no longer exists, or goes while it is
// looked at, is not an error. A write that loses to a change of a job
// record (another worker or reconciler got there first) is no error either:
// the record is read again and the job judged again on it, so a race whose
// winner already did what the write wanted (the job finished, the pod is
// gone) ends quietly. An error means try again later; a job that can never
// run is put in the error state instead, and is not retried.
func (r *Reconciler) Reconcile(ctx context.Context, name string) (Result, error) {
	start := r.clock.Now()
	var (
		res Result
		err error
	)
	for range judgeAttempts {
		res, err = r.reconcile(ctx, name)
		var stale *staleError
		if !errors.As(err, &stale) || ctx.Err() != nil {
			break
		}
		r.opts.Log.Debug("a write lost a race, judging the job again", "job", name, "error", err)
	}
	reason := ""
	switch {
	case errors.Is(err, job.ErrConflict):
		reason = "conflict"
	case err != nil:
		reason = "api"
	}
	r.opts.Metrics.observe(r.clock.Since(start).Seconds(), reason)
	return res, err
}

func (r *Reconciler) reconcile(ctx context.Context, name string) (Result, error) {
	res, err := r.look(ctx, name)
	if errors.Is(err, job.ErrNotFound) {
		// NOTE: the record is gone, or went while the job was judged (a
		// write found it deleted): nothing is left to drive. Duplicates
		// that go are handled where they are aborted (abortSuperseded).
		r.written.Delete(name)
		for alias := range r.clusters {
			r.gone.Delete(alias + "/" + job.PodName(&job.Job{ObjectMeta: metav1.ObjectMeta{Name: name}}))
		}
		return Result{}, nil
	}
	return res, err
}

// look judges the job called name once and acts on the verdict.
func (r *Reconciler) look(ctx context.Context, name string) (Result, error) {
	j, err := r.currentJob(ctx, name)
	if err != nil {
		return Result{}, err
	}
	if j.IsTerminal() {
		return Result{}, r.cleanup(ctx, j)
	}
	cl := r.clusters[j.ClusterAlias()]
	ended, recheck := r.runEnded(ctx, j)
	if ended != "" {
		return Result{}, r.abort(ctx, cl, j, verdict{reason: job.ReasonSessionEnded, desc: ended})
	}
	res, err := r.sync(ctx, cl, j)
	return res.sooner(recheck), err
}

// sync moves a job that is not terminal on by one step.
func (r *Reconciler) sync(ctx context.Context, cl *buildCluster, j *job.Job) (Result, error) {
	if j.Spec.Type == job.Presubmit {
		superseded, err := r.supersede(ctx, j)
		if err != nil || superseded {
			return Result{}, err
		}
	}
	switch j.Status.State {
	case job.Aborted:
		return Result{}, r.abort(ctx, cl, j, verdict{desc: j.Status.Description})
	case job.Pending:
		return r.syncPending(ctx, cl, j)
	default:
		return r.syncTriggered(ctx, cl, j)
	}
}

// currentJob reads the job, preferring what this reconciler last wrote when
// the view has not caught up with it.
func (r *Reconciler) currentJob(ctx context.Context, name string) (*job.Job, error) {
	j, err := r.read.job(ctx, name)
	if err != nil {
		return nil, err
	}
	return r.latest(j).DeepCopy(), nil
}

// latest returns what this reconciler last wrote (or, in a dry run, would
// have written) for the job, where that is newer than j.
func (r *Reconciler) latest(j *job.Job) *job.Job {
	if s, ok := r.simulated.Load(j.Name); ok {
		return s.(*job.Job)
	}
	if w, ok := r.written.Load(j.Name); ok {
		wj := w.(writtenJob)
		if wj.uid == j.UID && newerRV(wj.rv, j.ResourceVersion) {
			// NOTE: a shallow copy; callers that change a job copy it deeply.
			out := *j
			out.ResourceVersion, out.Status = wj.rv, wj.status
			return &out
		}
		if wj.uid == j.UID {
			// NOTE: the view has caught up; holding on would keep a copy
			// of every job ever written.
			r.written.CompareAndDelete(j.Name, w)
		}
	}
	return j
}

// writtenJob is what this reconciler last wrote of a job: its status, at a
// resourceVersion. Only the status is ever written, so the rest of the job
// comes from the view (without a copy of the pod template per write).
type writtenJob struct {
	uid    types.UID
	rv     string
	status job.JobStatus
}

// remember keeps what this reconciler last wrote, or read fresh, of j.
func (r *Reconciler) remember(j *job.Job) {
	r.written.Store(j.Name, writtenJob{uid: j.UID, rv: j.ResourceVersion, status: *j.Status.DeepCopy()})
}

// allJobs returns every job record, each at its latest known version.
func (r *Reconciler) allJobs(ctx context.Context) ([]*job.Job, error) {
	jobs, err := r.read.jobs(ctx)
	if err != nil {
		return nil, err
	}
	out := make([]*job.Job, len(jobs))
	for i, j := range jobs {
		out[i] = r.latest(j)
	}
	return out, nil
}

// currentPod reads the job's pod, preferring a pod this reconciler created
// that the view does not show yet. A pod missing from a cache is confirmed
// with the API server before anyone acts on its absence.
func (r *Reconciler) currentPod(ctx context.Context, cl *buildCluster, name string) (*corev1.Pod, error) {
	pod, err := r.read.pod(ctx, cl, name, false)
	if err != nil {
		return nil, err
	}
	if pod != nil {
		return pod, nil
	}
	if c, ok := r.created.Load(cl.alias + "/" + name); ok {
		return c.(*corev1.Pod), nil
	}
	return r.read.pod(ctx, cl, name, true)
}

func (r *Reconciler) syncTriggered(ctx context.Context, cl *buildCluster, j *job.Job) (Result, error) {
	if cl == nil {
		return Result{}, r.fail(ctx, nil, j, nil, fmt.Sprintf("unknown build cluster %q", j.ClusterAlias()), false)
	}
	pod, err := r.read.pod(ctx, cl, job.PodName(j), false)
	if err != nil {
		return Result{}, err
	}
	if pod != nil {
		return Result{}, r.adopt(ctx, cl, j, pod)
	}
	d, err := r.admit(ctx, j)
	if err != nil {
		return Result{}, err
	}
	switch {
	case d.fail != "":
		return Result{}, r.fail(ctx, cl, j, nil, d.fail, false)
	case d.wait != "":
		r.planf("would keep %s waiting: %s", j.Name, d.wait)
		r.log(j).Debug("waiting for capacity", "reason", d.wait)
		return Result{RequeueAfter: admissionRetry}, nil
	}
	return Result{}, r.start(ctx, cl, j)
}

// start moves an admitted job to pending and creates its pod. The status is
// written first: the compare-and-swap proves this reconciler's view of the
// job is current, so a stale view never creates a pod.
func (r *Reconciler) start(ctx context.Context, cl *buildCluster, j *job.Job) error {
	if r.opts.DryRun {
		r.planf("would start %s", j.Name)
		return nil
	}
	buildID, err := r.store.NextBuildID(ctx, j.Spec.Job)
	if err != nil {
		return err
	}
	st := *j.Status.DeepCopy()
	st.State, st.BuildID, st.PodName = job.Pending, buildID, job.PodName(j)
	st.Description = "job pending"
	st.URL = r.jobURL(j, st)
	pj, err := r.transition(ctx, j, st)
	if err != nil {
		return err
	}
	return r.createPod(ctx, cl, pj)
}

// adopt records a pod that exists for a triggered job (an earlier pass
// created it and failed to record that).
func (r *Reconciler) adopt(ctx context.Context, cl *buildCluster, j *job.Job, pod *corev1.Pod) error {
	if !job.IsPodOf(pod, j) {
		return r.fail(ctx, cl, j, nil, fmt.Sprintf("pod %q exists and was not created for this job", pod.Name), false)
	}
	st := *j.Status.DeepCopy()
	st.State, st.BuildID, st.PodName = job.Pending, job.BuildIDOf(pod), pod.Name
	st.Description = "job pending: adopted existing pod"
	st.URL = r.jobURL(j, st)
	_, err := r.transition(ctx, j, st)
	return err
}

// createPod creates the pod of a pending job. A pod that exists already is
// adopted; a pod the API server refuses ends the job in error.
func (r *Reconciler) createPod(ctx context.Context, cl *buildCluster, j *job.Job) error {
	pod := job.NewPod(j, cl.namespace, j.Status.BuildID)
	created, err := cl.pods.Pods(cl.namespace).Create(ctx, pod, metav1CreateOptions)
	switch {
	case err == nil:
		r.rememberCreated(ctx, cl, created)
		r.log(j).Info("pod created", "pod", created.Name, "cluster", cl.alias)
		return nil
	case isAlreadyExists(err):
		existing, gerr := getPod(ctx, cl, pod.Name)
		if gerr == nil && existing == nil {
			// NOTE: deleted between the create and the read: whoever
			// deleted it (a reconciler that ended the job) changed the
			// record first; judge the job again on it.
			return r.reread(ctx, j.Name, fmt.Errorf("pod %q went while it was created: %w", pod.Name, job.ErrConflict))
		}
		if gerr != nil {
			return fmt.Errorf("create pod %q in cluster %q: %w", pod.Name, cl.alias, err)
		}
		if !job.IsPodOf(existing, j) {
			return r.fail(ctx, cl, j, nil, fmt.Sprintf("pod %q exists and was not created for this job", pod.Name), false)
		}
		if id := job.BuildIDOf(existing); id != j.Status.BuildID {
			st := *j.Status.DeepCopy()
			st.BuildID = id
			st.URL = r.jobURL(j, st)
			_, err := r.transition(ctx, j, st)
			return err
		}
		return nil
	case isRequestError(err):
		return r.fail(ctx, cl, j, nil, "pod can not be created: "+apiMessage(err), false)
	}
	return unavailable(cl, fmt.Errorf("create pod %q in cluster %q: %w", pod.Name, cl.alias, err))
}

func (r *Reconciler) syncPending(ctx context.Context, cl *buildCluster, j *job.Job) (Result, error) {
	if cl == nil {
		return Result{}, r.fail(ctx, nil, j, nil, fmt.Sprintf("unknown build cluster %q", j.ClusterAlias()), false)
	}
	pod, err := r.currentPod(ctx, cl, job.PodName(j))
	if err != nil {
		return Result{}, err
	}
	if pod == nil {
		gone := r.goneOf(cl, j)
		if gone == nil {
			return Result{}, r.createMissing(ctx, cl, j)
		}
		pod = gone
	}
	if !job.IsPodOf(pod, j) {
		return Result{}, r.fail(ctx, cl, j, nil, fmt.Sprintf("pod %q was replaced by a pod not created for this job", pod.Name), false)
	}
	if j.Status.LostPodUID != "" && pod.UID == j.Status.LostPodUID {
		// Counted as lost already (by this reconciler or another): finish
		// letting it go, and create its successor once it is gone.
		return Result{RequeueAfter: r.until(r.liveness(cl, pod).Recheck)}, r.letGo(ctx, cl, pod)
	}
	if j.Spec.Lock != nil && hasLockGate(pod) && pod.DeletionTimestamp == nil {
		return r.syncLock(ctx, cl, j, pod)
	}
	v := r.judge(j, pod, r.nodeOf(cl, pod))
	if v.confirm && (v.revive || v.state != "") {
		if pod, v, err = r.confirm(ctx, cl, j, pod, v); err != nil || pod == nil {
			return Result{}, err
		}
	}
	switch {
	case v.revive:
		return Result{RequeueAfter: v.requeue}, r.revive(ctx, cl, j, pod, v)
	case v.state != "":
		return Result{}, r.end(ctx, cl, j, pod, v)
	}
	return Result{RequeueAfter: v.requeue}, nil
}

// confirm reads from the API server a pod whose cached view would end or
// replace it on the strength of a clock, and judges it again, so that a
// cache that fell behind (its cluster was away) never fires a timeout or
// declares a pod lost. When the pod is gone, the pod as the cache saw it
// deleted is judged (see rememberGone); when the cache has not seen it go
// yet, confirm returns a nil pod: its deletion event brings the job back.
func (r *Reconciler) confirm(ctx context.Context, cl *buildCluster, j *job.Job, pod *corev1.Pod, v verdict) (*corev1.Pod, verdict, error) {
	if _, cached := r.read.(*cacheReader); !cached {
		return pod, v, nil
	}
	fresh, err := getPod(ctx, cl, pod.Name)
	if err != nil {
		return nil, v, err
	}
	if fresh == nil {
		// NOTE: the deletion event may have been handled already (a pod
		// without finalizer goes at once), and will not come again.
		if fresh = r.goneOf(cl, j); fresh == nil {
			return nil, v, nil
		}
	}
	if fresh.UID != pod.UID {
		return nil, v, fmt.Errorf("pod %q was replaced while judged: %w", pod.Name, job.ErrConflict)
	}
	return fresh, r.judge(j, fresh, r.nodeOf(cl, fresh)), nil
}

// createMissing creates the pod of a pending job that has none: its
// creation failed or has not happened yet (another reconciler moved the job
// to pending a moment ago), or its lost predecessor is gone. A missing pod
// is never counted as lost: losses are counted when they are seen, by the
// lost pod's UID. Without a status write to prove this reconciler's view of
// the job current, the job is read again first.
func (r *Reconciler) createMissing(ctx context.Context, cl *buildCluster, j *job.Job) error {
	if r.opts.DryRun {
		r.planf("would create the pod of %s", j.Name)
		return nil
	}
	fresh, err := r.store.Get(ctx, j.Name)
	if err != nil {
		return err
	}
	if fresh.ResourceVersion != j.ResourceVersion {
		r.remember(fresh)
		return &staleError{name: j.Name, err: fmt.Errorf("job %q changed: %w", j.Name, job.ErrConflict)}
	}
	return r.createPod(ctx, cl, fresh)
}

// revive counts a pod that can not finish (evicted, lost with its node,
// taken away by Kubernetes) as lost, recording its UID, then lets it go:
// deleted (with grace period 0 once it is lost) and its finalizer removed.
// Once it is gone, the pod is created again. A job out of revivals ends in
// error instead.
func (r *Reconciler) revive(ctx context.Context, cl *buildCluster, j *job.Job, pod *corev1.Pod, v verdict) error {
	if limit := r.opts.RevivalLimit; limit >= 0 && j.Status.Revivals >= limit {
		desc := fmt.Sprintf("pod lost %d times, more than the revival limit of %d: %s", j.Status.Revivals+1, limit, v.desc)
		return r.end(ctx, cl, j, pod, verdict{state: job.Error, desc: desc, deletePod: true})
	}
	if r.opts.DryRun {
		r.planf("would replace the pod of %s: %s", j.Name, v.desc)
		return nil
	}
	st := *j.Status.DeepCopy()
	st.Revivals++
	st.LostPodUID = pod.UID
	st.Description = fmt.Sprintf("job pending: pod lost (%s), replacing it (%d)", v.desc, st.Revivals)
	if _, err := r.transition(ctx, j, st); err != nil {
		return err
	}
	r.log(j).Info("pod lost, replacing it", "pod", pod.Name, "uid", pod.UID, "reason", v.desc, "revivals", st.Revivals)
	return r.letGo(ctx, cl, pod)
}

// letGo deletes a lost pod and removes lockctl's finalizer, so that it goes
// and its successor can take its name.
func (r *Reconciler) letGo(ctx context.Context, cl *buildCluster, pod *corev1.Pod) error {
	if r.opts.DryRun {
		return nil
	}
	return r.retirePod(ctx, cl, pod, true)
}

// abort ends a job as aborted, deleting its pod: a job someone asked to
// abort, or one whose session ended.
func (r *Reconciler) abort(ctx context.Context, cl *buildCluster, j *job.Job, v verdict) error {
	var pod *corev1.Pod
	if cl != nil {
		p, err := r.currentPod(ctx, cl, job.PodName(j))
		if err != nil {
			return err
		}
		if p != nil && job.IsPodOf(p, j) {
			pod = p
		}
	}
	v.state, v.deletePod = job.Aborted, true
	if v.desc == "" {
		v.desc = "aborted"
	}
	return r.end(ctx, cl, j, pod, v)
}

// cleanup finishes the work on a terminal job whose pod still carries
// lockctl's finalizer (the process that finished the job stopped early): it
// gives back the namespace lock, stops a pod still running, and lets the pod
// go.
func (r *Reconciler) cleanup(ctx context.Context, j *job.Job) error {
	cl := r.clusters[j.ClusterAlias()]
	if cl == nil || r.opts.DryRun {
		return nil
	}
	r.gone.Delete(cl.alias + "/" + job.PodName(j))
	pod, err := r.read.pod(ctx, cl, job.PodName(j), false)
	if err != nil || pod == nil || !job.IsPodOf(pod, j) {
		return err
	}
	running := pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
	if !hasFinalizer(pod) && (!running || pod.DeletionTimestamp != nil) {
		return nil
	}
	if err := r.releaseLock(ctx, j, pod); err != nil {
		return err
	}
	return r.retirePod(ctx, cl, pod, running && pod.DeletionTimestamp == nil)
}

// rememberCreated remembers a pod this reconciler just created until the
// pod cache shows it, and forgets an older pod of the same name that went.
// The pod cache may have seen the new pod, and even its deletion, before
// the create returned here: then the pod is not remembered as created, and
// its deletion is not forgotten, or its job would wait for an event that
// came already.
func (r *Reconciler) rememberCreated(ctx context.Context, cl *buildCluster, created *corev1.Pod) {
	key := cl.alias + "/" + created.Name
	if g, ok := r.gone.Load(key); ok && g.(*corev1.Pod).UID != created.UID {
		r.gone.CompareAndDelete(key, g)
	}
	if !r.trackCreated {
		return
	}
	r.created.Store(key, created)
	if g, ok := r.gone.Load(key); ok && g.(*corev1.Pod).UID == created.UID {
		r.created.CompareAndDelete(key, created)
		return
	}
	if seen, err := r.read.pod(ctx, cl, created.Name, false); err == nil && seen != nil && seen.UID == created.UID {
		r.created.CompareAndDelete(key, created)
	}
}

// rememberGone keeps a deleted job pod without lockctl's finalizer as the
// pod cache last saw it, marked deleted, so that the next look at its job
// judges it as a pod deleted by someone else (or finished before it went)
// instead of creating it again. Pods with the finalizer stay visible until
// a reconciler removes it, and are not kept.
func (r *Reconciler) rememberGone(alias string, obj any) {
	pod, ok := obj.(*corev1.Pod)
	if !ok || hasFinalizer(pod) || pod.Labels[job.LabelRecordNamespace] != r.namespace {
		return
	}
	pod = pod.DeepCopy()
	if pod.DeletionTimestamp == nil {
		now := metav1.NewTime(r.clock.Now())
		pod.DeletionTimestamp = &now
	}
	r.gone.Store(alias+"/"+pod.Name, pod)
}

// goneOf returns the job's pod that the pod cache saw deleted, if it is the
// job's and not the lost pod the job already replaces.
func (r *Reconciler) goneOf(cl *buildCluster, j *job.Job) *corev1.Pod {
	g, ok := r.gone.Load(cl.alias + "/" + job.PodName(j))
	if !ok {
		return nil
	}
	pod := g.(*corev1.Pod)
	if !job.IsPodOf(pod, j) || (j.Status.LostPodUID != "" && pod.UID == j.Status.LostPodUID) {
		r.gone.CompareAndDelete(cl.alias+"/"+job.PodName(j), g)
		return nil
	}
	return pod
}

// supersede aborts older runs of a presubmit for the same pull request, and
// reports whether j itself is one of them.
func (r *Reconciler) supersede(ctx context.Context, j *job.Job) (bool, error) {
	all, err := r.allJobs(ctx)
	if err != nil {
		return false, err
	}
	newest, dupes := j, []*job.Job{}
	for _, d := range all {
		if d.UID == j.UID || d.IsTerminal() || !samePull(d, j) {
			continue
		}
		dupes = append(dupes, d)
		if job.Older(newest, d) {
			newest = d
		}
	}
	if newest != j {
		return true, r.abortSuperseded(ctx, j, newest)
	}
	// NOTE: an abort that lost to a change of the duplicate (another worker
	// aborted it first) is kept as an error: the step judges j again, on
	// the duplicate as read after the loss, before it starts j.
	var errs []error
	for _, d := range dupes {
		var cu *ClusterUnavailableError
		if err := r.abortSuperseded(ctx, d, j); err != nil && !errors.As(err, &cu) {
			errs = append(errs, err)
		}
	}
	return false, errors.Join(errs...)
}

func samePull(a, b *job.Job) bool {
	if a.Spec.Type != job.Presubmit || a.Spec.Job != b.Spec.Job || a.Spec.Refs == nil || b.Spec.Refs == nil {
		return false
	}
	return a.Spec.Refs.Org == b.Spec.Refs.Org && a.Spec.Refs.Repo == b.Spec.Refs.Repo && a.PullNumber() == b.PullNumber()
}

// abortSuperseded aborts old, an older run of newer's presubmit, and deletes
// its pod. A duplicate that has finished or gone meanwhile (another worker
// or reconciler aborted it first) needs nothing more and is no error: its
// abort is what the write wanted.
func (r *Reconciler) abortSuperseded(ctx context.Context, old, newer *job.Job) error {
	err := r.supersedeOne(ctx, old.Name, newer)
	if errors.Is(err, job.ErrNotFound) {
		return nil
	}
	return err
}

func (r *Reconciler) supersedeOne(ctx context.Context, name string, newer *job.Job) error {
	// NOTE: the passes over every job see jobs without their pod template;
	// the job written is read whole, and at its latest known version.
	old, err := r.currentJob(ctx, name)
	if err != nil {
		return err
	}
	if old.IsTerminal() {
		return nil
	}
	cl := r.clusters[old.ClusterAlias()]
	var pod *corev1.Pod
	desc := fmt.Sprintf("superseded by a newer run (%s)", newer.Name)
	if cl != nil && old.Status.State != job.Triggered {
		p, err := r.read.pod(ctx, cl, job.PodName(old), false)
		var cu *ClusterUnavailableError
		if errors.As(err, &cu) {
			// Its pod can not be removed now: mark it aborted, as lockctl
			// abort does; it completes once its cluster is back.
			st := *old.Status.DeepCopy()
			st.State, st.Reason, st.Description = job.Aborted, job.ReasonSuperseded, desc
			if _, err := r.transition(ctx, old, st); err != nil {
				return err
			}
			return cu
		}
		if err != nil {
			return err
		}
		if p != nil && job.IsPodOf(p, old) {
			pod = p
		}
	}
	return r.end(ctx, cl, old, pod, verdict{state: job.Aborted, reason: job.ReasonSuperseded, desc: desc, deletePod: true})
}

func (r *Reconciler) jobURL(j *job.Job, st job.JobStatus) string {
	if r.url == nil {
		return ""
	}
	view := j.DeepCopy()
	view.Status = st
	var b bytes.Buffer
	if err := r.url.Execute(&b, view); err != nil {
		r.log(j).Warn("job URL template failed", "error", err)
		return ""
	}
	return b.String()
}

func (r *Reconciler) log(j *job.Job) *slog.Logger {
	return r.opts.Log.With("job", j.Name)
}

// planf records a line of the dry-run plan.
func (r *Reconciler) planf(format string, args ...any) {
	if !r.opts.DryRun {
		return
	}
	r.planMu.Lock()
	defer r.planMu.Unlock()
	r.plan = append(r.plan, fmt.Sprintf(format, args...))
}

// Plan returns what a dry-run reconciler would have done, in the order it
// decided it, and forgets it.
func (r *Reconciler) Plan() []string {
	r.planMu.Lock()
	defer r.planMu.Unlock()
	p := r.plan
	r.plan = nil
	return p
}
