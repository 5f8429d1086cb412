package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/client-go/util/watchlist"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/podwatch"
	"github.com/lockctl/lockctl/scheduler"
)

// dryRunBuildID stands for the build ID in the pod --dry-run prints; the
// real one is given when the job starts.
const dryRunBuildID = "0"

// followGrace is how long run waits, once the job has finished, for the
// pod's log streams to drain.
const followGrace = podwatch.DefaultDrainTimeout + time.Second

// Descriptions of jobs run aborts.
const (
	reasonInterrupted = "aborted: lockctl run was interrupted"
	reasonLockLost    = "aborted: lockctl run lost its lock"
)

// runJob submits a job while holding the lock and drives it to its end in
// this process, following its pod.
func runJob(ctx context.Context, o *runOptions) error {
	data, source, err := readJobFile(o.f, o.Filename)
	if err != nil {
		return err
	}
	j, err := job.Parse(data, source)
	if err != nil {
		return usageIfInvalid(err)
	}
	if err := o.lockFromJob(j); err != nil {
		return err
	}
	cfg, err := o.loadConfig()
	if err != nil {
		return err
	}
	opts, err := cfg.Options()
	if err != nil {
		return &UsageError{Err: err}
	}
	if o.PodNamespace != "" {
		opts.PodNamespace = o.PodNamespace
	}
	contexts, err := o.clusterContexts(cfg)
	if err != nil {
		return err
	}
	if _, ok := contexts[j.ClusterAlias()]; !ok {
		return &UsageError{Err: fmt.Errorf("job %q runs in build cluster %q: name its context with --build-cluster %s=CONTEXT",
			displayJobName(j), j.ClusterAlias(), j.ClusterAlias())}
	}
	if o.DryRun {
		return o.printPod(j, opts.PodNamespace)
	}
	if o.Target == "" {
		return flagErrorf("required flag --lock not set: name the namespace to lock, or give the job a spec.lock")
	}
	env, err := o.newJobEnv(opts, contexts)
	if err != nil {
		return err
	}
	if j.Namespace != "" && j.Namespace != env.ns {
		return &UsageError{Err: fmt.Errorf("the job's namespace %q does not match the namespace %q: pass -n %s", j.Namespace, env.ns, j.Namespace)}
	}
	store, cleaner := env.cleaner.Store(), env.cleaner

	d := o.newDisplay()
	defer d.close()
	l, err := o.acquireLock(ctx, d)
	if err != nil {
		return err
	}
	me := l.session()
	env.sweepOrphans(ctx, d, o.f, me)

	if j.Annotations == nil {
		j.Annotations = map[string]string{}
	}
	j.Annotations[annotationRunSession] = me.String()
	created, err := store.Create(ctx, j)
	if err != nil {
		if errors.Is(err, job.ErrExists) {
			err = &UsageError{Err: fmt.Errorf("%w: give the job metadata.generateName for a new name on every run", err)}
		}
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		return errors.Join(usageIfInvalid(err), l.release(cctx))
	}
	podNS := firstNonEmpty(env.opts.PodNamespace, env.ns)
	d.printf(styleNone, "job %q submitted in namespace %q; its pod runs in %q", created.Name, env.ns, podNS)

	ctlOpts := env.opts
	ctlOpts.OnlyJob = created.Name
	ctl, err := scheduler.NewController(env.jobs, env.ns, env.clusters, ctlOpts)
	if err != nil {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		_, aerr := abortJob(cctx, store, cleaner, created.Name, job.ReasonAbortRequested, "aborted: lockctl run could not start its reconcile loop")
		return errors.Join(usageIfInvalid(err), aerr, l.release(cctx))
	}
	jr := &jobRun{o: o, d: d, l: l, store: store, cleaner: cleaner, name: created.Name, started: o.f.Clock.Now()}
	return jr.drive(ctx, ctl, env.jobs, env.ns, env.pods[created.ClusterAlias()], podNS)
}

// podsClient is the pods client of a clientset that keeps what the
// clientset declares about streaming lists (client-go's fakes cannot serve
// them), which the informers underneath podwatch ask.
type podsClient struct {
	corev1client.PodsGetter
	cs kubernetes.Interface
}

// IsWatchListSemanticsUnSupported passes on the clientset's answer.
func (p podsClient) IsWatchListSemanticsUnSupported() bool {
	return watchlist.DoesClientNotSupportWatchListSemantics(p.cs)
}

// jobEnv is where run's jobs live: the job namespace and its clientset,
// the build clusters, the reconciler options, and a reconciler reading
// straight from the API server that finishes single jobs at once (an
// interrupted run's, or one left behind).
type jobEnv struct {
	ns       string
	jobs     kubernetes.Interface
	clusters map[string]kubernetes.Interface
	pods     map[string]corev1client.PodsGetter
	opts     scheduler.Options
	cleaner  *scheduler.Reconciler
}

func (o *runOptions) newJobEnv(opts scheduler.Options, contexts map[string]string) (*jobEnv, error) {
	ns, err := o.f.Namespace()
	if err != nil {
		return nil, err
	}
	jobs, err := o.f.Clientset()
	if err != nil {
		return nil, err
	}
	clusters, err := clusterClients(o.f, contexts)
	if err != nil {
		return nil, err
	}
	opts.Clock, opts.Log = o.f.Clock, o.libraryLog(logrus.WarnLevel)
	pods := make(map[string]corev1client.PodsGetter, len(clusters))
	for alias, cs := range clusters {
		pods[alias] = podsClient{PodsGetter: cs.CoreV1(), cs: cs}
	}
	cleaner, err := scheduler.NewReconciler(jobs.CoreV1(), ns, pods, opts)
	if err != nil {
		return nil, usageIfInvalid(err)
	}
	return &jobEnv{ns: ns, jobs: jobs, clusters: clusters, pods: pods, opts: opts, cleaner: cleaner}, nil
}

// lockFromJob makes run hold the lock a job asks for: --lock defaults to
// spec.lock.namespace, and spec.lock leaves the submitted job, whose pod
// must not wait for the lock run holds for it.
func (o *runOptions) lockFromJob(j *job.Job) error {
	if j.Spec.Lock == nil {
		return nil
	}
	switch ns := j.Spec.Lock.Namespace; {
	case o.Target == "":
		o.Target = ns
	case o.Target != ns:
		return &UsageError{Err: fmt.Errorf("--lock %q and the job's spec.lock.namespace %q differ: run holds one lock, drop one of them", o.Target, ns)}
	}
	j.Spec.Lock = nil
	return nil
}

// printPod prints the pod run would create for j, touching nothing.
func (o *runOptions) printPod(j *job.Job, podNS string) error {
	ns, err := o.f.Namespace()
	if err != nil {
		// NOTE: a dry run needs no cluster, so no kubeconfig either.
		ns = metav1.NamespaceDefault
	}
	j.Namespace = ns
	pod := job.NewPod(j, firstNonEmpty(podNS, ns), dryRunBuildID)
	if pod.Name == "" {
		pod.GenerateName = j.GenerateName
	}
	fmt.Fprintf(o.f.IOStreams.Out, "# The pod of job %q as lockctl run would create it. Its name (with\n"+
		"# generateName), build ID (%s here) and job UID are given when the job is\n"+
		"# submitted and starts; run also adds the annotation %s.\n",
		displayJobName(j), dryRunBuildID, annotationRunSession)
	return printObject(o.f.IOStreams.Out, "yaml", pod)
}

func displayJobName(j *job.Job) string {
	if j.Name != "" {
		return j.Name
	}
	return j.GenerateName + "*"
}

// jobRun is one job driven by run: the job record watched to its end, its
// pod followed, and what the display shows meanwhile.
type jobRun struct {
	o       *runOptions
	d       *runDisplay
	l       *runLock
	store   *job.Store
	cleaner *scheduler.Reconciler
	name    string
	started time.Time

	mu       sync.Mutex
	phase    corev1.PodPhase
	seenPod  bool
	lastDesc string
}

// finalJob is the outcome of watching the job record.
type finalJob struct {
	job *job.Job
	err error
}

// drive runs the controller restricted to the job, follows its pod and
// waits for the job to end, for the lock to be lost, or for an interrupt.
func (jr *jobRun) drive(ctx context.Context, ctl *scheduler.Controller, jobs kubernetes.Interface, ns string, pods corev1client.PodsGetter, podNS string) error {
	ctlCtx, stopCtl := context.WithCancel(ctx)
	ctlDone := make(chan error, 1)
	go func() { ctlDone <- ctl.Run(ctlCtx) }()

	followCtx, stopFollow := context.WithCancel(ctx)
	var ended atomic.Bool
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		jr.follow(followCtx, pods, podNS, &ended)
	}()

	watchCtx, stopWatch := context.WithCancel(ctx)
	final := make(chan finalJob, 1)
	go func() {
		j, err := jr.waitJob(watchCtx, jobs, ns)
		final <- finalJob{j, err}
	}()
	jr.d.setStatus(jr.status)

	// stop ends the watch, the follow (after grace, if the pod has shown up
	// and still streams) and the controller.
	stop := func(grace time.Duration) {
		stopWatch()
		ended.Store(true)
		jr.mu.Lock()
		seen := jr.seenPod
		jr.mu.Unlock()
		if seen && grace > 0 {
			t := jr.o.f.Clock.NewTimer(grace)
			select {
			case <-followed:
			case <-t.C():
			}
			t.Stop()
		}
		stopFollow()
		<-followed
		stopCtl()
		if err := <-ctlDone; err != nil {
			jr.o.f.Log.WithError(err).Error("reconcile loop of the job stopped")
		}
		jr.d.setStatus(nil)
	}

	select {
	case <-ctx.Done():
		jr.d.printf(styleWarn, "interrupted: aborting job %q (its pod is deleted) and releasing lock %q; interrupt again to exit at once, "+
			"leaving lock %q to expire within %s and pod %q to be deleted after that by lockctl reconcile or the next lockctl run",
			jr.name, jr.o.Target, jr.o.Target, humanDuration(jr.o.TTL), jr.name)
		stop(0)
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		aerr := jr.abort(cctx, reasonInterrupted)
		return errors.Join(fmt.Errorf("run job %q: %w", jr.name, ctx.Err()), aerr, jr.l.release(cctx))
	case lost := <-jr.l.lost:
		jr.d.printf(styleBad, "%v: aborting job %q", lost, jr.name)
		stop(0)
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		aerr := jr.abort(cctx, reasonLockLost)
		// NOTE: release only stops the renewal: the lock is someone else's.
		return errors.Join(fmt.Errorf("lock %q was lost while job %q ran: %w", jr.o.Target, jr.name, lost), aerr, jr.l.release(cctx))
	case res := <-final:
		if res.err != nil {
			stop(0)
			cctx, cancel := cleanupContext(ctx)
			defer cancel()
			return errors.Join(res.err, jr.l.release(cctx))
		}
		stop(followGrace)
		summary, style, outcome := jobOutcome(res.job, jr.o.f.Clock.Since(jr.started))
		jr.d.printf(style, "%s", summary)
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		if err := jr.l.release(cctx); err != nil {
			return err
		}
		return outcome
	}
}

// abort aborts the job, deleting its pod, and says what happened.
func (jr *jobRun) abort(ctx context.Context, why string) error {
	j, err := abortJob(ctx, jr.store, jr.cleaner, jr.name, job.ReasonAbortRequested, why)
	switch {
	case err != nil:
		jr.d.printf(styleBad, "cannot abort job %q: %v", jr.name, err)
		return fmt.Errorf("abort job %q: %w", jr.name, err)
	case j.Status.State == job.Aborted:
		jr.d.printf(styleWarn, "job %q aborted, pod %q deleted", jr.name, job.PodName(j))
	default:
		jr.d.printf(styleNone, "job %q had already finished: %s", jr.name, j.Status.State)
	}
	return nil
}

// follow follows the job's pod, again after it was deleted and recreated
// (evicted, node lost), until ctx ends or the job has ended.
func (jr *jobRun) follow(ctx context.Context, pods corev1client.PodsGetter, podNS string, ended *atomic.Bool) {
	for {
		f := podwatch.New(pods, podNS, jr.name, jr.o.libraryLog(logrus.ErrorLevel))
		f.Clock = jr.o.f.Clock
		if jr.o.logs != nil {
			f.Logs = jr.o.logs
		}
		_, err := f.Follow(ctx, podwatch.Options{Out: jr.d.logs(jr.o.f.IOStreams.Out), OnEvent: jr.onEvent})
		if !errors.Is(err, podwatch.ErrPodDeleted) || ctx.Err() != nil || ended.Load() {
			return
		}
	}
}

func (jr *jobRun) onEvent(e podwatch.Event) {
	if e.Kind == podwatch.EventPodMissing {
		return
	}
	jr.mu.Lock()
	jr.seenPod = true
	jr.phase = e.Phase
	if e.Kind == podwatch.EventDeleted {
		jr.phase = ""
	}
	jr.mu.Unlock()
	jr.d.printf(eventStyle(e), "%s", e)
}

// eventStyle colours pod events: success green, failures red, trouble
// yellow.
func eventStyle(e podwatch.Event) lineStyle {
	switch e.Kind {
	case podwatch.EventPhase:
		switch e.Phase {
		case corev1.PodSucceeded:
			return styleGood
		case corev1.PodFailed:
			return styleBad
		}
	case podwatch.EventTerminated:
		if e.ExitCode != 0 {
			return styleBad
		}
	case podwatch.EventWaiting:
		if strings.HasSuffix(e.Reason, "BackOff") || strings.HasPrefix(e.Reason, "Err") {
			return styleWarn
		}
	case podwatch.EventUnschedulable, podwatch.EventLogError, podwatch.EventRestarted, podwatch.EventDeleted:
		return styleWarn
	}
	return styleNone
}

// status is the live line while the job runs.
func (jr *jobRun) status(now time.Time) string {
	jr.mu.Lock()
	phase := jr.phase
	jr.mu.Unlock()
	elapsed := humanDuration(now.Sub(jr.started))
	if phase == "" {
		return fmt.Sprintf("job %q waiting for its pod; %s elapsed", jr.name, elapsed)
	}
	return fmt.Sprintf("pod %q %s; %s elapsed", jr.name, phase, elapsed)
}

// waitJob watches the job record until the job is terminal and returns it.
// The pod's events say most of what happens; waitJob adds the job's own
// news (a pod recreated, adopted).
func (jr *jobRun) waitJob(ctx context.Context, jobs kubernetes.Interface, ns string) (*job.Job, error) {
	cms := jobs.CoreV1().ConfigMaps(ns)
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", jr.name).String()
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			byName(&o)
			return cms.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			byName(&o)
			return cms.Watch(ctx, o)
		},
	}
	var last *job.Job
	_, err := watchtools.UntilWithSync(ctx, cache.ToListWatcherWithWatchListSemantics(lw, jobs), &corev1.ConfigMap{}, nil,
		func(ev watch.Event) (bool, error) {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok || cm.Name != jr.name {
				return false, nil
			}
			if ev.Type == watch.Deleted {
				return false, fmt.Errorf("job %q: its record was deleted", jr.name)
			}
			j, err := job.FromConfigMap(cm)
			if err != nil {
				return false, err
			}
			jr.onJob(j)
			last = j
			return j.IsTerminal(), nil
		})
	if err != nil {
		return nil, fmt.Errorf("follow job %q: %w", jr.name, err)
	}
	return last, nil
}

// onJob shows news of a job not yet finished that the pod's events do not
// tell: a pod recreated or adopted, an abort by someone else.
func (jr *jobRun) onJob(j *job.Job) {
	if j.IsTerminal() {
		return
	}
	jr.mu.Lock()
	desc := j.Status.Description
	changed := desc != jr.lastDesc
	jr.lastDesc = desc
	jr.mu.Unlock()
	if !changed || detail(desc) == "" {
		return
	}
	jr.d.printf(styleNone, "job %q %s%s", jr.name, j.Status.State, detail(desc))
}

// jobOutcome is how a finished job ends lockctl run: the summary line, its
// style, and the error that picks the exit status.
func jobOutcome(j *job.Job, took time.Duration) (string, lineStyle, error) {
	what := fmt.Sprintf("job %q", j.Name)
	if id := j.Status.BuildID; id != "" {
		what += fmt.Sprintf(" (build %s)", id)
	}
	desc := j.Status.Description
	why := detail(desc)
	after := " after " + humanDuration(took)
	timedOut := j.Status.Reason == job.ReasonTimeout
	switch j.Status.State {
	case job.Success:
		return what + " succeeded" + after + why, styleGood, nil
	case job.Failure:
		return what + " failed" + after + why, styleBad, SilentError
	case job.Error:
		if timedOut {
			return what + " timed out" + after + why, styleBad, &ExitError{Code: CodeTimeout}
		}
		return what + " ended in error" + after + why, styleBad, SilentError
	case job.Aborted:
		line := what + " was aborted" + after + why
		switch {
		case j.Status.Reason == job.ReasonSuperseded:
			return line, styleBad, &ExitError{Code: CodeSuperseded}
		case timedOut:
			return line, styleBad, &ExitError{Code: CodeTimeout}
		}
		return line, styleBad, &ExitError{Code: CodeError}
	}
	return what + " ended in state " + string(j.Status.State) + after + why, styleBad, &ExitError{Code: CodeError}
}

// detail is a job's description without the "job succeeded" (or other
// state) it may start with, as ": rest", or "" when nothing is left.
func detail(desc string) string {
	if rest, ok := strings.CutPrefix(desc, "job "); ok {
		_, rest, _ = strings.Cut(rest, ":")
		desc = rest
	}
	desc = strings.TrimSpace(desc)
	if desc == "" {
		return ""
	}
	return ": " + desc
}
