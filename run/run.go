package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"sync"
	"time"

	watchtools "k8s.io/client-go/tools/watch"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/runjobs"
)

// The account of run jobs is the ledger a run keeps in its locks' records.
var _ lock.Ledger = (*runjobs.Keeper)(nil)

// Options configure Run.
type Options struct {
	// Locks takes, renews and releases the locks. Required unless Across
	// is set.
	Locks *lock.Client
	// Requests are the locks to hold, all or nothing, one request a lock;
	// each TTL must be positive. Their OnTaking is Run's. Required unless
	// Across is set.
	Requests []lock.Request
	// Across, when set, are the locks to hold in several clusters instead
	// of Locks and Requests: one part a lock, with the client of its
	// cluster (lock.AcquireAcross). Jobs must then be nil: a run across
	// clusters runs a command.
	Across []lock.Part
	// KillGrace is how long a command stopped because its locks could not
	// be renewed gets between SIGTERM and SIGKILL; 0 means
	// DefaultKillGrace of the shortest TTL (see Timings).
	KillGrace time.Duration
	// Timeout bounds the wait for the locks; 0 means no limit.
	Timeout time.Duration
	// Jobs is where jobs live. Run looks among them for the jobs earlier
	// runs left behind and aborts them once it holds the locks; nil means
	// it does not (a command only). Required with Job.
	Jobs *Jobs
	// Job is submitted and driven to its end while the locks are held; nil
	// runs Command instead.
	Job *job.Job
	// Command runs while the locks are held when Job is nil.
	Command *Command
	// Out receives the logs of the job's pod; nil discards them.
	Out io.Writer
	// Again delivers the signals that come after the one that ended ctx
	// (a CI runner's cancel: SIGINT, SIGTERM 7.5 s later, then SIGKILL).
	// A signal on it while Command stops sends the command's process group
	// SIGKILL at once, and the release that follows gets UrgentRelease to
	// reach the API server instead of the cleanup's 30 s. nil means no
	// signal comes (a terminal's second Ctrl-C ends lockctl at once).
	Again <-chan os.Signal
	// Observer is told what happens; nil means nobody is.
	Observer Observer
}

// Result is what a Run that held its locks ran into.
type Result struct {
	// Job is the job's final record; nil for a command, or for a job that
	// did not finish (Run's error says why).
	Job *job.Job
	// ReleaseErr is the error of releasing the locks once the job or the
	// command ended; nil when they were released (or lost).
	ReleaseErr error
}

// AcquireError is the error of a Run that did not get its locks.
type AcquireError struct {
	// Targets are the locks asked for.
	Targets []string
	// Interrupted is set when the run's context ended while it waited: it
	// left the queue.
	Interrupted bool
	Err         error
}

func (e *AcquireError) Error() string { return "acquire " + e.Names() + ": " + e.Err.Error() }

func (e *AcquireError) Unwrap() error { return e.Err }

// Names names the locks for messages: lock "a", or locks ["a" "b"].
func (e *AcquireError) Names() string {
	if len(e.Targets) == 1 {
		return fmt.Sprintf("lock %q", e.Targets[0])
	}
	return fmt.Sprintf("locks %q", e.Targets)
}

// Run is lockctl run: it waits for the locks of o.Requests (as long as
// o.Timeout allows), holds them (Hold), aborts the jobs earlier runs left
// behind, runs o.Job or o.Command, then releases the locks, telling
// o.Observer what happens on the way.
//
// An error before the locks are held is an *AcquireError, and Result is
// empty. Otherwise the error is the job's or the command's (the command's
// exit status is an *ExitError; a job that finished, in whatever state,
// is no error and is Result.Job) and Result.ReleaseErr that of the
// release, which runs, bounded, even when ctx has ended.
func Run(ctx context.Context, o Options) (Result, error) {
	obs := observerOrNop(o.Observer)
	// jobs is the run's side of the account of run jobs in each lock's
	// record (the lock.Ledger of its requests); nil without a job
	// namespace.
	var jobs *runjobs.Keeper
	if o.Jobs != nil {
		jobs = &runjobs.Keeper{Namespace: o.Jobs.Namespace(), SubmitsJob: o.Job != nil}
	}
	h, looked, err := acquire(ctx, o, jobs, obs)
	if err != nil {
		return Result{}, err
	}
	var res Result
	ended, urgent := true, false
	if o.Job != nil {
		res.Job, err = o.Jobs.Run(ctx, h, o.Job, outOrDiscard(o.Out), obs)
		obs.JobEnded(res.Job, err)
		// NOTE: a job Run did not see finish (interrupted, lost, not
		// renewed) stays marked on the locks, even if its abort went
		// through: the next run looks.
		ended = res.Job != nil && res.Job.IsTerminal()
	} else {
		urgent, err = o.Command.run(ctx, h, obs, o.Again)
	}
	if jobs != nil {
		jobs.Done = looked && ended
	}
	if urgent {
		res.ReleaseErr = releaseWithin(ctx, h, UrgentRelease)
		return res, err
	}
	res.ReleaseErr = release(ctx, h, lock.ReleaseOptions{})
	return res, err
}

// UrgentRelease bounds the release after a command stopped at once
// (Options.Again): GitHub's runner sends SIGKILL 2.5 s after its SIGTERM,
// and lockctl, whose stderr is the killed step's pipe, cannot outlive it
// for long.
const UrgentRelease = 2 * time.Second

// releaseWithin releases h within d, however ctx ended.
func releaseWithin(ctx context.Context, h *Hold, d time.Duration) error {
	cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), d)
	defer cancel()
	err := h.ReleaseWith(cctx, lock.ReleaseOptions{})
	if err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		err = fmt.Errorf("release within %s of the second signal timed out (the lock expires after its ttl): %w", d, err)
	}
	return err
}

// acquire waits for the locks, then holds them, and looks for jobs left
// behind by earlier runs in the job namespace unless every lock's record
// vouches that there are none (Held.Vouched): the list of the jobs to
// sweep starts beside the write that takes the first lock whose record
// does not, and the sweep ends once all are held. looked reports whether
// nothing is left behind: the records vouched for it, or the sweep found
// every job and aborted those left behind. jobs, set when o.Jobs is, keeps
// the account of run jobs in the records.
func acquire(ctx context.Context, o Options, jobs *runjobs.Keeper, obs Observer) (h *Hold, looked bool, err error) {
	var sweep *Sweep
	var sweepOnce sync.Once
	parts := slices.Clone(o.Across)
	if parts == nil {
		parts = make([]lock.Part, len(o.Requests))
		for i, req := range o.Requests {
			parts[i] = lock.Part{Locks: o.Locks, Request: req}
		}
	}
	var targets []string
	for i, p := range parts {
		if o.Jobs != nil {
			// NOTE: the list of jobs to sweep starts beside the write that
			// takes the (first) lock that needs it, once no other holder
			// can act, not after it.
			parts[i].Request.Callbacks.OnTaking = func() { sweepOnce.Do(func() { sweep = o.Jobs.StartSweep(ctx) }) }
			parts[i].Request.Ledger = jobs
		}
		if !slices.Contains(targets, p.Request.Target) {
			targets = append(targets, p.Request.Target)
		}
	}
	waitCtx, cancel := watchtools.ContextWithOptionalTimeout(ctx, o.Timeout)
	defer cancel()
	h, err = AcquireAcross(waitCtx, parts, HoldOptions{Observer: obs, KillGrace: o.KillGrace})
	if err != nil {
		err = &AcquireError{Targets: targets, Interrupted: ctx.Err() != nil, Err: err}
	}
	obs.Waited(err)
	if err != nil {
		return nil, false, err
	}
	mustLook := false
	for i, held := range h.Locks() {
		obs.Acquired(held, h.clients[i].Describe(held.Target))
		mustLook = mustLook || !held.Vouched
	}
	if o.Jobs == nil {
		return h, false, nil
	}
	if mustLook && sweep == nil {
		sweep = o.Jobs.StartSweep(ctx)
	}
	looked = !mustLook
	if sweep != nil {
		// NOTE: a list started for a write that was then lost to another,
		// and decided again with the record vouching, is looked through
		// all the same: it is paid for.
		looked = sweep.Finish(ctx, h.Ref(), obs) || !mustLook
	}
	return h, looked, nil
}

// release releases h once the run ended, with o, bounded by
// CleanupContext; a release that ran out of time says so.
func release(ctx context.Context, h *Hold, o lock.ReleaseOptions) error {
	cctx, cancel := CleanupContext(ctx)
	defer cancel()
	err := h.ReleaseWith(cctx, o)
	if err != nil && errors.Is(cctx.Err(), context.DeadlineExceeded) {
		// Not a wait: exit 1, and say which step ran out of time.
		err = fmt.Errorf("cleanup after the run timed out: %w", err)
	}
	return err
}

func outOrDiscard(w io.Writer) io.Writer {
	if w == nil {
		return io.Discard
	}
	return w
}
