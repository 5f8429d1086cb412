package run

import (
	"os"
	"time"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/podwatch"
)

// Observer is told what a run does, in the order it happens; cmd's progress
// display is one. Calls come from several goroutines, never at once for one
// run; they should not block.
type Observer interface {
	// Waited: the wait for the locks ended, with the *AcquireError that
	// ended it, or nil when all are held.
	Waited(err error)
	// Acquired: the lock of held.Target is held; describe names its
	// object ("NAMESPACE/NAME").
	Acquired(held *lock.Held, describe string)
	// RenewFailed: a renewal of the hold failed for a reason other than
	// losing the lock; the next one is in retryIn.
	RenewFailed(target string, retryIn time.Duration, err error)
	// Released: the hold was released; rel says who holds the lock next,
	// or that a hold the run re-entered was left held (Released.Left).
	Released(target string, rel *lock.Released)
	// LeftBehind: a job whose run ended without cleaning up was aborted,
	// which deleted its pod, because ended; or it could not be (err).
	LeftBehind(j *job.Job, ended string, err error)
	// Submitted: the job was created; its pod runs in podNamespace.
	Submitted(j *job.Job, podNamespace string)
	// PodEvent: the job's pod changed (podwatch.Event).
	PodEvent(e podwatch.Event)
	// Replaced: the job's pod ended without finishing the job (deleted,
	// taken away); the follow goes on with the pod that replaces it, or
	// ends with the job.
	Replaced(r Replacement)
	// JobEnded: the job's run ended, before the locks are released: final
	// is the job's last record, or nil with the error that ended the run
	// first.
	JobEnded(final *job.Job, err error)
	// JobChanged: the record of the job, not finished, has a new
	// description (a pod recreated, an abort by someone else).
	JobChanged(j *job.Job)
	// Stopping: the run was interrupted or lost its lock, and is stopping
	// what it runs.
	Stopping(s Stop)
	// Aborted: the job of a stopped run was aborted (j), had already
	// finished (j), or could not be aborted (err).
	Aborted(name string, j *job.Job, err error)
	// Started: the local command is about to start.
	Started(argv []string)
	// SignalFailed: the local command could not be signalled.
	SignalFailed(err error)
	// Exited: the local command ended; ps is nil when it could not be
	// waited for (err).
	Exited(ps *os.ProcessState, err error)
}

// Stop says why and how a run stops what it runs.
type Stop struct {
	// Job is the name of the job being aborted; "" for a command.
	Job string
	// Command is the local command being stopped; nil for a job.
	Command []string
	// Lost is the error of the renewal that found the lock taken; nil when
	// the run was interrupted (its context ended).
	Lost error
	// NotRenewed is the *NotRenewedError of a hold that went its renew
	// deadline without a renewal; nil otherwise.
	NotRenewed error
	// Cancelled is the *lock.CancelRequestedError of a newer build that
	// asked the run to stop (cancel-in-progress); nil otherwise.
	Cancelled error
	// Signal is what the command is sent; nil when it is only waited for
	// (it got the terminal's Ctrl-C itself) or has not started.
	Signal os.Signal
	// KillAfter, when positive, is how long after Signal the command gets
	// SIGKILL if it has not exited.
	KillAfter time.Duration
	// BeforeStart is set when the command had not started yet.
	BeforeStart bool
	// Again is the second signal (Options.Again) that stops the command
	// at once, with SIGKILL, so that the locks are released in the grace
	// the signal's sender leaves; nil otherwise.
	Again os.Signal
	// AgainStops is set when a second signal would stop the command at
	// once (Options.Again is set): not on a terminal.
	AgainStops bool
}

// NopObserver ignores everything; embed it to observe a few things only.
type NopObserver struct{}

var _ Observer = NopObserver{}

func (NopObserver) Waited(error)                             {}
func (NopObserver) Acquired(*lock.Held, string)              {}
func (NopObserver) RenewFailed(string, time.Duration, error) {}
func (NopObserver) Released(string, *lock.Released)          {}
func (NopObserver) LeftBehind(*job.Job, string, error)       {}
func (NopObserver) Submitted(*job.Job, string)               {}
func (NopObserver) PodEvent(podwatch.Event)                  {}
func (NopObserver) JobEnded(*job.Job, error)                 {}
func (NopObserver) JobChanged(*job.Job)                      {}
func (NopObserver) Replaced(Replacement)                     {}
func (NopObserver) Stopping(Stop)                            {}
func (NopObserver) Aborted(string, *job.Job, error)          {}
func (NopObserver) Started([]string)                         {}
func (NopObserver) SignalFailed(error)                       {}
func (NopObserver) Exited(*os.ProcessState, error)           {}

func observerOrNop(o Observer) Observer {
	if o == nil {
		return NopObserver{}
	}
	return o
}
