package scheduler

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"sync"
	"text/template"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/job"
)

// Reconciler drives the job records of one namespace. It is safe to call
// Reconcile from several goroutines for different jobs, and to run several
// Reconcilers, in several processes, over the same jobs.
type Reconciler struct {
	store     *job.Store
	cms       corev1client.ConfigMapInterface
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
	written      sync.Map // job name → *job.Job
	simulated    sync.Map // job name → *job.Job, in a dry run: what it would have written
	created      sync.Map // cluster/pod name → *corev1.Pod
	trackCreated bool

	admitMu    sync.Mutex
	lastLedger *corev1.ConfigMap

	planMu sync.Mutex
	plan   []string

	// hooks set by the Controller.
	onAdmit    func(names []string)
	onTerminal func(j *job.Job)
}

// NewReconciler returns a Reconciler for the job records in namespace, whose
// pods run in the given build clusters (alias → pods client). Without a
// Controller it reads straight from the API server.
func NewReconciler(cms corev1client.ConfigMapsGetter, namespace string, clusters map[string]corev1client.PodsGetter, opts Options) (*Reconciler, error) {
	opts = opts.withDefaults()
	r := &Reconciler{
		store:     job.NewStore(cms, namespace, job.WithClock(opts.Clock)),
		cms:       cms.ConfigMaps(namespace),
		namespace: namespace,
		clusters:  map[string]*buildCluster{},
		opts:      opts,
		clock:     opts.Clock,
	}
	podNS := opts.PodNamespace
	if podNS == "" {
		podNS = namespace
	}
	for alias, pods := range clusters {
		r.clusters[alias] = &buildCluster{alias: alias, namespace: podNS, pods: pods}
	}
	r.read = &apiReader{store: r.store, cms: r.cms}
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

// Reconcile looks at the job record called name once: it supersedes older
// duplicates, starts, follows or finishes the job, and returns when its next
// timeout falls due. A job that no longer exists is not an error. An error
// means try again later; a job that can never run is put in the error state
// instead, and is not retried.
func (r *Reconciler) Reconcile(ctx context.Context, name string) (Result, error) {
	start := r.clock.Now()
	res, err := r.reconcile(ctx, name)
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
	j, err := r.currentJob(ctx, name)
	if errors.Is(err, job.ErrNotFound) {
		r.written.Delete(name)
		return Result{}, nil
	}
	if err != nil {
		return Result{}, err
	}
	if j.IsTerminal() {
		return Result{}, r.cleanup(ctx, j)
	}
	cl := r.clusters[j.ClusterAlias()]
	ended, recheck := r.sessionEnded(ctx, j)
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
		wj := w.(*job.Job)
		if wj.UID == j.UID && newerRV(wj.ResourceVersion, j.ResourceVersion) {
			return wj
		}
		if wj.UID == j.UID {
			// NOTE: the view has caught up; holding on would keep a copy
			// of every job ever written.
			r.written.CompareAndDelete(j.Name, w)
		}
	}
	return j
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
		return Result{}, r.finish(ctx, nil, j, nil, job.Error, fmt.Sprintf("unknown build cluster %q", j.ClusterAlias()), false)
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
		return Result{}, r.finish(ctx, cl, j, nil, job.Error, d.fail, false)
	case d.wait != "":
		r.planf("would keep %s waiting: %s", j.Name, d.wait)
		r.log(j).WithField("reason", d.wait).Debug("waiting for capacity")
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
		return r.finish(ctx, cl, j, nil, job.Error, fmt.Sprintf("pod %q exists and was not created for this job", pod.Name), false)
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
		if r.trackCreated {
			r.created.Store(cl.alias+"/"+created.Name, created)
		}
		r.log(j).WithField("pod", created.Name).WithField("cluster", cl.alias).Info("pod created")
		return nil
	case isAlreadyExists(err):
		existing, gerr := getPod(ctx, cl, pod.Name)
		if gerr != nil || existing == nil {
			return fmt.Errorf("create pod %q in cluster %q: %w", pod.Name, cl.alias, err)
		}
		if !job.IsPodOf(existing, j) {
			return r.finish(ctx, cl, j, nil, job.Error, fmt.Sprintf("pod %q exists and was not created for this job", pod.Name), false)
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
		return r.finish(ctx, cl, j, nil, job.Error, "pod can not be created: "+apiMessage(err), false)
	}
	return fmt.Errorf("create pod %q in cluster %q: %w", pod.Name, cl.alias, err)
}

func (r *Reconciler) syncPending(ctx context.Context, cl *buildCluster, j *job.Job) (Result, error) {
	if cl == nil {
		return Result{}, r.finish(ctx, nil, j, nil, job.Error, fmt.Sprintf("unknown build cluster %q", j.ClusterAlias()), false)
	}
	pod, err := r.currentPod(ctx, cl, job.PodName(j))
	if err != nil {
		return Result{}, err
	}
	if pod == nil {
		return Result{}, r.recreate(ctx, cl, j)
	}
	if !job.IsPodOf(pod, j) {
		return Result{}, r.finish(ctx, cl, j, nil, job.Error, fmt.Sprintf("pod %q was replaced by a pod not created for this job", pod.Name), false)
	}
	if j.Spec.Lock != nil && hasLockGate(pod) && pod.DeletionTimestamp == nil {
		return r.syncLock(ctx, cl, j, pod)
	}
	v := r.judge(j, pod)
	switch {
	case v.revive:
		return Result{}, r.revive(ctx, cl, j, pod, v.desc)
	case v.state != "":
		return Result{}, r.end(ctx, cl, j, pod, v)
	}
	return Result{RequeueAfter: v.requeue}, nil
}

// recreate creates the pod of a pending job again, counting it as a revival.
func (r *Reconciler) recreate(ctx context.Context, cl *buildCluster, j *job.Job) error {
	if limit := r.opts.RevivalLimit; limit >= 0 && j.Status.Revivals >= limit {
		desc := fmt.Sprintf("pod lost %d times: revival limit reached", j.Status.Revivals)
		return r.finish(ctx, cl, j, nil, job.Error, desc, false)
	}
	if r.opts.DryRun {
		r.planf("would recreate the pod of %s", j.Name)
		return nil
	}
	st := *j.Status.DeepCopy()
	st.Revivals++
	st.Description = fmt.Sprintf("job pending: pod recreated (%d)", st.Revivals)
	pj, err := r.transition(ctx, j, st)
	if err != nil {
		return err
	}
	r.log(j).WithField("revivals", st.Revivals).Info("pod missing, creating it again")
	return r.createPod(ctx, cl, pj)
}

// revive deletes a pod that can not finish (evicted, node lost, phase
// Unknown); the next pass finds it missing and creates it again.
func (r *Reconciler) revive(ctx context.Context, cl *buildCluster, j *job.Job, pod *corev1.Pod, why string) error {
	if r.opts.DryRun {
		r.planf("would delete the pod of %s to recreate it: %s", j.Name, why)
		return nil
	}
	r.log(j).WithField("pod", pod.Name).WithField("reason", why).Info("deleting pod to recreate it")
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
	pod, err := r.read.pod(ctx, cl, job.PodName(j), false)
	if err != nil || pod == nil || !job.IsPodOf(pod, j) || !hasFinalizer(pod) {
		return err
	}
	if err := r.releaseLock(ctx, j, pod); err != nil {
		return err
	}
	running := pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed
	return r.retirePod(ctx, cl, pod, running && pod.DeletionTimestamp == nil)
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
	var errs []error
	for _, d := range dupes {
		if err := r.abortSuperseded(ctx, d, j); err != nil && !errors.Is(err, job.ErrConflict) {
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

func (r *Reconciler) abortSuperseded(ctx context.Context, old, newer *job.Job) error {
	cl := r.clusters[old.ClusterAlias()]
	var pod *corev1.Pod
	if cl != nil && old.Status.State != job.Triggered {
		p, err := r.read.pod(ctx, cl, job.PodName(old), false)
		if err != nil {
			return err
		}
		if p != nil && job.IsPodOf(p, old) {
			pod = p
		}
	}
	desc := fmt.Sprintf("superseded by a newer run (%s)", newer.Name)
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
		r.log(j).WithError(err).Warn("job URL template failed")
		return ""
	}
	return b.String()
}

func (r *Reconciler) log(j *job.Job) *logrus.Entry {
	return r.opts.Log.WithField("job", j.Name)
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
