package run

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/base/logutil"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/podwatch"
	"github.com/lockctl/lockctl/scheduler"
)

// Descriptions of the jobs a run aborts.
const (
	ReasonInterrupted = "aborted: lockctl run was interrupted"
	ReasonLockLost    = "aborted: lockctl run lost its lock"
	ReasonNotRenewed  = "aborted: lockctl run could not renew its lock in time"
	ReasonCancelled   = "aborted: a newer build of its branch asked lockctl run to stop (cancel-in-progress)"
	reasonNoLoop      = "aborted: lockctl run could not start its reconcile loop"
)

// followGrace is how long Run waits, once the job has finished, for the
// pod's log streams to drain.
const followGrace = podwatch.DefaultDrainTimeout + time.Second

// JobsOptions configure Jobs. The zero value is usable: no build cluster.
type JobsOptions struct {
	// Clusters are the build clusters by alias; the jobs' pods run there.
	Clusters map[string]scheduler.Clientset
	// Scheduler configures the reconcile loop that drives a run's job
	// (limits, timeouts, pod namespace, clock, log), as for lockctl
	// reconcile. Its Clock is the run's clock; nil means clock.RealClock.
	Scheduler scheduler.Options
	// Logs opens the log streams of the pods; nil means through the API
	// server.
	Logs podwatch.LogOpener
	// FollowLog receives what the pod followers log; nil discards it.
	FollowLog *slog.Logger
	// Log receives what the run does not tell its Observer; nil discards
	// it.
	Log *slog.Logger
	// LockClock judges the expiries of the locks of runs' holds (see
	// HoldChecker): give it the API server's clock, a servertime.Clock
	// observing Jobs' answers. nil means Scheduler.Clock.
	LockClock clock.WithTicker
}

// Jobs runs jobs in one job namespace beside any reconcile loop: it submits
// a job, drives it to its end with the reconciler restricted to that job,
// follows its pod and aborts it when the run stops. A reconciler reading
// straight from the API server finishes single jobs at once (a stopped
// run's, or one left behind by a run that died).
type Jobs struct {
	jobs      scheduler.Clientset
	namespace string
	opts      JobsOptions
	clock     clock.Clock
	pods      map[string]kube.PodsGetter
	cleaner   *scheduler.Reconciler
}

// NewJobs returns Jobs for the job records in namespace of the cluster of
// jobs. An invalid o.Scheduler is an error wrapping scheduler.ErrConfig.
func NewJobs(jobs scheduler.Clientset, namespace string, o JobsOptions) (*Jobs, error) {
	if o.Scheduler.Clock == nil {
		o.Scheduler.Clock = clock.RealClock{}
	}
	if o.LockClock == nil {
		o.LockClock = o.Scheduler.Clock
	}
	o.FollowLog, o.Log = logutil.OrDiscard(o.FollowLog), logutil.OrDiscard(o.Log)
	pods := make(map[string]kube.PodsGetter, len(o.Clusters))
	for alias, cs := range o.Clusters {
		pods[alias] = kube.CoreV1(cs)
	}
	cleaner, err := scheduler.NewReconciler(kube.CoreV1(jobs), namespace, pods, o.Scheduler)
	if err != nil {
		return nil, err
	}
	return &Jobs{jobs: jobs, namespace: namespace, opts: o, clock: o.Scheduler.Clock, pods: pods, cleaner: cleaner}, nil
}

// Store returns the store of the job records.
func (js *Jobs) Store() *job.Store { return js.cleaner.Store() }

// Namespace returns the namespace of the job records.
func (js *Jobs) Namespace() string { return js.namespace }

// PodNamespace returns the namespace of the jobs' pods in their build
// clusters.
func (js *Jobs) PodNamespace() string {
	if ns := js.opts.Scheduler.PodNamespace; ns != "" {
		return ns
	}
	return js.namespace
}

// Preflight checks that the caller may do what running a job in build
// cluster alias takes (job records in the job namespace, pods and their logs
// in the pod namespace), asking the API servers with access reviews and
// writing nothing. A missing permission is a *preflight.MissingError naming
// the verb and resource.
func (js *Jobs) Preflight(ctx context.Context, alias string) error {
	clusters := map[string]scheduler.Clientset{}
	if c, ok := js.opts.Clusters[alias]; ok {
		clusters[alias] = c
	}
	return scheduler.Preflight(ctx, js.jobs, js.namespace, clusters, js.PodNamespace(), false)
}

// HoldChecker returns the check of the holds of the runs whose locks live
// beside the job records.
func (js *Jobs) HoldChecker() *HoldChecker {
	return NewHoldChecker(js.jobs.CoreV1(), HoldCheckerOptions{Clock: js.opts.LockClock})
}

// SweepLeftBehind aborts the jobs of the job namespace whose run ended
// without cleaning up, which deletes their pods, and tells obs. me, the
// caller's own hold, is never swept. Failures are reported and skipped:
// they must not stop the caller's run.
func (js *Jobs) SweepLeftBehind(ctx context.Context, me HoldRef, obs Observer) {
	js.StartSweep(ctx).Finish(ctx, me, obs)
}

// Sweep is a look for jobs left behind (see SweepLeftBehind) whose list of
// the active jobs was started before the caller held its lock: by
// lock.Request.Callbacks.OnTaking, once no other holder of the lock can act, so it
// runs beside the write that takes the lock instead of after it.
type Sweep struct {
	js   *Jobs
	done chan struct{}
	jobs []*job.Job
	err  error
}

// StartSweep starts listing the active jobs for a sweep.
func (js *Jobs) StartSweep(ctx context.Context) *Sweep {
	s := &Sweep{js: js, done: make(chan struct{})}
	go func() {
		defer close(s.done)
		s.jobs, s.err = js.Store().List(ctx, job.ListOptions{ActiveOnly: true})
	}()
	return s
}

// Finish waits for the list and aborts the jobs of runs that ended, as
// SweepLeftBehind does. It reports whether it looked at every active job
// and none of an ended run is left: the list was read whole, and every
// job was judged and, if left behind, aborted.
func (s *Sweep) Finish(ctx context.Context, me HoldRef, obs Observer) (clean bool) {
	js := s.js
	obs = observerOrNop(obs)
	select {
	case <-s.done:
	case <-ctx.Done():
		return false
	}
	jobs, err := s.jobs, s.err
	if err != nil {
		// NOTE: quiet, because a command run by someone who may not read
		// jobs is not to be cluttered with it.
		js.opts.Log.Debug("cannot look for jobs left behind by earlier runs", "error", err)
		if len(jobs) == 0 {
			return false
		}
	}
	clean = err == nil
	holds := js.HoldChecker()
	for _, j := range jobs {
		if rs, ok := HoldRefOf(j); !ok || rs == me {
			continue
		}
		ended, _, err := holds.Check(ctx, j)
		if err != nil {
			clean = false
			obs.LeftBehind(j, "", fmt.Errorf("cannot tell whether job %q was left behind: %w", j.Name, err))
			continue
		}
		if ended == "" {
			continue
		}
		if _, err := js.abort(ctx, j.Name, job.ReasonSessionEnded, ended); err != nil {
			clean = false
			obs.LeftBehind(j, "", fmt.Errorf("cannot abort job %q left behind by an earlier run: %w", j.Name, err))
			continue
		}
		obs.LeftBehind(j, strings.TrimPrefix(ended, RunEnded+": "), nil)
	}
	return clean && ctx.Err() == nil
}

// abort aborts a job and reconciles it at once, which deletes its pod and
// completes it, so no loop needs to run. A job that has finished already is
// returned as it is.
func (js *Jobs) abort(ctx context.Context, name, reason, description string) (*job.Job, error) {
	store := js.Store()
	j, err := store.Abort(ctx, name, reason, description)
	switch {
	case errors.Is(err, job.ErrTerminal):
		return j, nil
	case err != nil && !errors.Is(err, job.ErrAborted):
		// An aborted job whose abort is not complete is completed below.
		return nil, err
	}
	for range 3 {
		if _, err = js.cleaner.Reconcile(ctx, name); !errors.Is(err, job.ErrConflict) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("delete the pod of job %q: %w", name, err)
	}
	return store.Get(ctx, name)
}

// Run submits j, tied to h's session, and drives it to its end in this
// process with the reconciler restricted to it, following its pod: phase
// changes go to obs, the pod's logs to out. It returns the finished job.
//
// When ctx ends or h is lost first, Run aborts the job (deleting its pod)
// and returns an error wrapping ctx.Err() or lock.ErrLost. When h goes its
// renew deadline without a renewal, Run tries to abort the job for as long
// as the hold may still be its own and returns an error wrapping
// ErrNotRenewed. Run never
// releases h.
func (js *Jobs) Run(ctx context.Context, h *Hold, j *job.Job, out io.Writer, obs Observer) (*job.Job, error) {
	obs = observerOrNop(obs)
	j = j.DeepCopy()
	if j.Annotations == nil {
		j.Annotations = map[string]string{}
	}
	j.Annotations[AnnotationHoldRef] = h.Ref().String()
	created, err := js.Store().Create(ctx, j)
	if err != nil {
		return nil, err
	}
	obs.Submitted(created, js.PodNamespace())

	ctlOpts := js.opts.Scheduler
	ctlOpts.OnlyJob = created.Name
	ctl, err := scheduler.NewController(js.jobs, js.namespace, js.opts.Clusters, ctlOpts)
	if err != nil {
		cctx, cancel := CleanupContext(ctx)
		defer cancel()
		_, aerr := js.abort(cctx, created.Name, job.ReasonAbortRequested, reasonNoLoop)
		return nil, errors.Join(err, aerr)
	}
	jr := &jobRun{js: js, h: h, obs: obs, out: out, name: created.Name}
	return jr.drive(ctx, ctl, js.pods[created.ClusterAlias()])
}

// jobRun is one job driven by Run: the job record watched to its end and
// its pod followed.
type jobRun struct {
	js   *Jobs
	h    *Hold
	obs  Observer
	out  io.Writer
	name string

	mu       sync.Mutex
	seenPod  bool
	lastDesc string
}

// finalJob is the outcome of watching the job record.
type finalJob struct {
	job *job.Job
	err error
}

// drive runs the controller restricted to the job, follows its pod and
// waits for the job to end, for the lock to be lost, or for ctx to end.
func (jr *jobRun) drive(ctx context.Context, ctl *scheduler.Controller, pods kube.PodsGetter) (*job.Job, error) {
	ctlCtx, stopCtl := context.WithCancel(ctx)
	ctlDone := make(chan error, 1)
	go func() { ctlDone <- ctl.Run(ctlCtx) }()

	followCtx, stopFollow := context.WithCancel(ctx)
	followed := make(chan struct{})
	go func() {
		defer close(followed)
		err := FollowJob(followCtx, jr.js.Store(), pods, jr.js.PodNamespace(), jr.name, FollowOptions{
			Out: jr.out, OnEvent: jr.onEvent, OnReplace: jr.obs.Replaced,
			Logs: jr.js.opts.Logs, Clock: jr.js.clock, Log: jr.js.opts.FollowLog,
		})
		if err != nil && followCtx.Err() == nil {
			jr.js.opts.Log.Debug("stopped following the pod of the job", "error", err)
		}
	}()

	watchCtx, stopWatch := context.WithCancel(ctx)
	final := make(chan finalJob, 1)
	go func() {
		j, err := jr.js.Store().Wait(watchCtx, jr.name, jr.onJob)
		final <- finalJob{j, err}
	}()

	// stop ends the watch, the follow (after grace, if the pod has shown up
	// and still streams) and the controller.
	stop := func(grace time.Duration) {
		stopWatch()
		jr.mu.Lock()
		seen := jr.seenPod
		jr.mu.Unlock()
		if seen && grace > 0 {
			t := jr.js.clock.NewTimer(grace)
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
			jr.js.opts.Log.Error("reconcile loop of the job stopped", "error", err)
		}
	}

	select {
	case <-ctx.Done():
		jr.obs.Stopping(Stop{Job: jr.name})
		stop(0)
		cctx, cancel := CleanupContext(ctx)
		defer cancel()
		aerr := jr.abort(cctx, job.ReasonAbortRequested, ReasonInterrupted)
		return nil, errors.Join(fmt.Errorf("run job %q: %w", jr.name, ctx.Err()), aerr)
	case lost := <-jr.h.Lost():
		jr.obs.Stopping(Stop{Job: jr.name, Lost: lost})
		stop(0)
		cctx, cancel := CleanupContext(ctx)
		defer cancel()
		aerr := jr.abort(cctx, job.ReasonAbortRequested, ReasonLockLost)
		return nil, errors.Join(fmt.Errorf("lock %q was lost while job %q ran: %w", jr.h.LostTarget(), jr.name, lost), aerr)
	case late := <-jr.h.NotRenewed():
		jr.obs.Stopping(Stop{Job: jr.name, NotRenewed: late})
		stop(0)
		// NOTE: the API server has not answered for the renew deadline:
		// the abort is tried for as long as the hold may still be this
		// run's. If it cannot be written, the pod runs on until a reconcile
		// loop or the next run finds the session expired and aborts the
		// job (docs/partitions.md).
		cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), jr.h.Timings().KillGrace+ClockMargin)
		defer cancel()
		aerr := jr.abort(cctx, job.ReasonAbortRequested, ReasonNotRenewed)
		return nil, errors.Join(fmt.Errorf("%w; stopped following job %q", late, jr.name), aerr)
	case asked := <-jr.h.Cancelled():
		jr.obs.Stopping(Stop{Job: jr.name, Cancelled: asked})
		stop(0)
		cctx, cancel := CleanupContext(ctx)
		defer cancel()
		aerr := jr.abort(cctx, job.ReasonSuperseded, ReasonCancelled)
		return nil, errors.Join(fmt.Errorf("job %q stopped: %w", jr.name, asked), aerr)
	case res := <-final:
		if res.err != nil {
			stop(0)
			return nil, res.err
		}
		stop(followGrace)
		return res.job, nil
	}
}

// abort aborts the job, deleting its pod, and tells the observer.
func (jr *jobRun) abort(ctx context.Context, reason, why string) error {
	j, err := jr.js.abort(ctx, jr.name, reason, why)
	jr.obs.Aborted(jr.name, j, err)
	if err != nil {
		return fmt.Errorf("abort job %q: %w", jr.name, err)
	}
	return nil
}

func (jr *jobRun) onEvent(e podwatch.Event) {
	if e.Kind == podwatch.EventPodMissing {
		return
	}
	jr.mu.Lock()
	jr.seenPod = true
	jr.mu.Unlock()
	jr.obs.PodEvent(e)
}

// onJob passes on news of a job not yet finished: a new description.
func (jr *jobRun) onJob(j *job.Job) {
	if j.IsTerminal() {
		return
	}
	jr.mu.Lock()
	desc := j.Status.Description
	changed := desc != jr.lastDesc
	jr.lastDesc = desc
	jr.mu.Unlock()
	if changed {
		jr.obs.JobChanged(j)
	}
}

// LockFromJob returns the locks a run of j holds, given the targets asked
// for (--lock): spec.lock.namespace when none is, else targets, which must
// then name it. It takes spec.lock out of j: the pod of the submitted job
// must not wait for the lock the run holds for it. A job without spec.lock
// leaves targets as they are.
func LockFromJob(j *job.Job, targets []string) ([]string, error) {
	if j.Spec.Lock == nil {
		return targets, nil
	}
	switch ns := j.Spec.Lock.Namespace; {
	case len(targets) == 0:
		targets = []string{ns}
	case len(targets) > 1 && !slices.Contains(targets, ns):
		return nil, fmt.Errorf("the job's spec.lock.namespace %q is not among --lock %q: add --lock %s, or drop the job's spec.lock", ns, targets, ns)
	case len(targets) == 1 && targets[0] != ns:
		return nil, fmt.Errorf("--lock %q and the job's spec.lock.namespace %q differ: drop one of them, or give both as --lock to hold both", targets[0], ns)
	}
	j.Spec.Lock = nil
	return targets, nil
}

// DryRunBuildID stands for the build ID in the pod DryRunPod returns; the
// real one is given when the job starts.
const DryRunBuildID = "0"

// DryRunPod is the pod lockctl run would create for j, touching nothing
// (lockctl run --dry-run): j is put in namespace, its pod in podNamespace
// ("" means namespace), under DryRunBuildID; a job without a name keeps
// its generateName. The session annotation is added only by a real run.
func DryRunPod(j *job.Job, namespace, podNamespace string) *corev1.Pod {
	j.Namespace = namespace
	pod := job.NewPod(j, cmp.Or(podNamespace, namespace), DryRunBuildID)
	if pod.Name == "" {
		pod.GenerateName = j.GenerateName
	}
	return pod
}
