// Package progress shows on the console what a lockctl command does while
// it waits and runs: a lock wait (Wait) and lockctl run (Run, its
// run.Observer).
package progress

import (
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/internal/base/human"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/podwatch"
	"github.com/lockctl/lockctl/run"
)

// Run shows what `lockctl run` does on its console: it is the run.Observer
// of lockctl run. Status lines scroll above a live line naming the job's
// pod and the time it has run, on a terminal; elsewhere every line is
// printed once with the time, or as a JSON object.
type Run struct {
	// Console is where the lines go.
	Console *term.Console
	// Clock times the job from its submission; nil means the real clock.
	Clock clock.PassiveClock
	// Target and TTL are the lock's, for the messages of an interrupted run.
	Target string
	TTL    time.Duration
	// Wait shows the wait for the locks; it is finished when the wait
	// ends. nil means nothing shows it.
	Wait *Wait

	mu       sync.Mutex
	started  time.Time       // when the job was submitted
	phase    corev1.PodPhase // of the job's pod; "" before it shows up
	stopping bool            // the run was interrupted or lost its lock
}

var _ run.Observer = (*Run)(nil)

// printf prints one status line.
func (r *Run) printf(style term.Style, format string, args ...any) {
	r.Console.Statusf(style, nil, format, args...)
}

func (r *Run) now() time.Time {
	if r.Clock == nil {
		return time.Now()
	}
	return r.Clock.Now()
}

func (r *Run) Waited(err error) {
	if r.Wait != nil {
		r.Wait.Finish()
	}
	var ae *run.AcquireError
	if errors.As(err, &ae) && ae.Interrupted {
		r.printf(term.StyleWarn, "interrupted while waiting for %s; left the queue", ae.Names())
	}
}

func (r *Run) Acquired(held *lock.Held, describe string) {
	if held.Reentered {
		r.printf(term.StyleGood, "lock %q already held by %s since %s (%s), fencing token %s; this run re-enters the hold and leaves it held",
			held.Where(), held.Holder.Identity, held.Holder.Since.UTC().Format(time.RFC3339), describe, held.Token)
		return
	}
	r.printf(term.StyleGood, "lock %q acquired by %s after %s (%s), fencing token %s",
		held.Where(), held.Holder.Identity, human.Duration(held.Waited), describe, held.Token)
	if f := held.IgnoredFreeze; f != nil {
		r.printf(term.StyleWarn, "lock %q is %s; taken anyway (--ignore-freeze), and the freeze records it", held.Where(), f.Describe())
	}
}

// JobEnded clears the live line and, when the job finished, says how.
func (r *Run) JobEnded(final *job.Job, err error) {
	r.Console.SetStatus(nil)
	if err != nil || final == nil {
		return
	}
	summary, style, _ := JobOutcome(final, r.now().Sub(r.SubmittedAt()))
	r.printf(style, "%s", summary)
}

func (r *Run) RenewFailed(target string, retryIn time.Duration, err error) {
	r.printf(term.StyleWarn, "cannot renew lock %q, trying again in %s: %v", target, human.Duration(retryIn), err)
}

func (r *Run) Released(target string, rel *lock.Released) {
	switch {
	case rel.Left && rel.Kept != nil:
		r.printf(term.StyleNone, "lock %q still held by %s: it was held before this run", target, rel.Kept.Identity)
		return
	case rel.Left:
		r.printf(term.StyleNone, "lock %q left as it was: the hold this run re-entered has ended", target)
		return
	}
	r.printf(term.StyleNone, "lock %q released", target)
	if rel.HandedTo != nil {
		r.printf(term.StyleNone, "lock %q now held by %s", target, rel.HandedTo.Identity)
	}
}

func (r *Run) LeftBehind(j *job.Job, ended string, err error) {
	if err != nil {
		r.printf(term.StyleWarn, "%v", err)
		return
	}
	r.printf(term.StyleWarn, "job %q was left behind by a lockctl run that ended (%s): aborted%s", j.Name, ended, podGone(j))
}

func (r *Run) Submitted(j *job.Job, podNamespace string) {
	r.mu.Lock()
	r.started = r.now()
	r.mu.Unlock()
	r.printf(term.StyleNone, "job %q submitted in namespace %q; its pod runs in %q", j.Name, j.Namespace, podNamespace)
	r.Console.SetStatus(func(now time.Time) string { return r.status(j.Name, now) })
}

// SubmittedAt is when the job was submitted; zero before.
func (r *Run) SubmittedAt() time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.started
}

// status is the live line while the job runs.
func (r *Run) status(name string, now time.Time) string {
	r.mu.Lock()
	phase, elapsed := r.phase, human.Duration(now.Sub(r.started))
	r.mu.Unlock()
	if phase == "" {
		return fmt.Sprintf("job %q waiting for its pod; %s elapsed", name, elapsed)
	}
	return fmt.Sprintf("pod %q %s; %s elapsed", name, phase, elapsed)
}

func (r *Run) PodEvent(e podwatch.Event) {
	r.mu.Lock()
	r.phase = e.Phase
	if e.Kind == podwatch.EventDeleted {
		r.phase = ""
	}
	r.mu.Unlock()
	r.printf(eventStyle(e), "%s", e)
}

func (r *Run) JobChanged(j *job.Job) {
	if why := Detail(j.Status.Description); why != "" {
		r.printf(term.StyleNone, "job %q %s%s", j.Name, j.Status.State, why)
	}
}

func (r *Run) Replaced(rp run.Replacement) {
	if rp.Following {
		r.printf(term.StyleWarn, "%s", rp)
	}
}

func (r *Run) Stopping(s run.Stop) {
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	target, ttl := r.Target, human.Duration(r.TTL)
	switch {
	case s.Job != "" && s.Cancelled != nil:
		r.printf(term.StyleBad, "%v: aborting job %q, then releasing", s.Cancelled, s.Job)
	case s.Cancelled != nil:
		r.printf(term.StyleBad, "%v: stopping the command with SIGTERM, then releasing", s.Cancelled)
	case s.Job != "" && s.NotRenewed != nil:
		r.printf(term.StyleBad, "%v: stopping; aborting job %q if the API server answers, else its pod runs on until the hold expires and a reconcile loop or the next run aborts it",
			s.NotRenewed, s.Job)
	case s.NotRenewed != nil:
		r.printf(term.StyleBad, "%v: stopping the command with SIGTERM (SIGKILL after %s) before the lock can expire",
			s.NotRenewed, human.Duration(s.KillAfter))
	case s.Job != "" && s.Lost != nil:
		r.printf(term.StyleBad, "%v: aborting job %q", s.Lost, s.Job)
	case s.Job != "":
		r.printf(term.StyleWarn, "interrupted: aborting job %q (its pod is deleted) and releasing lock %q; interrupt again to exit at once, "+
			"leaving lock %q to expire within %s and pod %q to be deleted after that by lockctl reconcile or the next lockctl run",
			s.Job, target, target, ttl, s.Job)
	case s.BeforeStart:
		r.printf(term.StyleWarn, "interrupted before %s started; releasing lock %q", run.QuoteCommand(s.Command), target)
	case s.Lost != nil:
		r.printf(term.StyleBad, "%v: stopping the command with SIGTERM (SIGKILL after %s)", s.Lost, human.Duration(s.KillAfter))
	case s.Again != nil:
		r.printf(term.StyleBad, "%s again: stopping the command now with SIGKILL and releasing lock %q", run.SignalName(s.Again), target)
	default:
		what := "waiting for the command to exit"
		if s.Signal != nil {
			what = fmt.Sprintf("passing %s to the command and waiting for it to exit", run.SignalName(s.Signal))
		}
		if s.AgainStops {
			r.printf(term.StyleWarn, "interrupted: %s, then releasing lock %q; a second signal stops the command at once (SIGKILL) and releases",
				what, target)
			break
		}
		r.printf(term.StyleWarn, "interrupted: %s, then releasing lock %q; interrupt again to exit at once, leaving lock %q to expire within %s",
			what, target, target, ttl)
	}
	r.Console.SetStatus(nil)
}

func (r *Run) Aborted(name string, j *job.Job, err error) {
	switch {
	case err != nil:
		r.printf(term.StyleBad, "cannot abort job %q: %v", name, err)
	case j.Status.State == job.Aborted:
		r.printf(term.StyleWarn, "job %q aborted%s", name, podGone(j))
	default:
		r.printf(term.StyleNone, "job %q had already finished: %s", name, j.Status.State)
	}
}

func (r *Run) Started(argv []string) {
	r.printf(term.StyleNone, "running %s", run.QuoteCommand(argv))
}

func (r *Run) SignalFailed(err error) {
	r.printf(term.StyleWarn, "cannot signal the command: %v", err)
}

func (r *Run) Exited(ps *os.ProcessState, err error) {
	r.mu.Lock()
	stopping := r.stopping
	r.mu.Unlock()
	style := term.StyleGood
	switch {
	case stopping:
		style = term.StyleWarn
	case ps == nil || !ps.Success():
		style = term.StyleBad
	}
	r.printf(style, "command %s", run.DescribeExit(ps, err))
}

// eventStyle colours pod events: success green, failures red, trouble
// yellow.
func eventStyle(e podwatch.Event) term.Style {
	switch e.Kind {
	case podwatch.EventPhase:
		switch e.Phase {
		case corev1.PodSucceeded:
			return term.StyleGood
		case corev1.PodFailed:
			return term.StyleBad
		}
	case podwatch.EventTerminated:
		if e.ExitCode != 0 {
			return term.StyleBad
		}
	case podwatch.EventWaiting:
		if strings.HasSuffix(e.Reason, "BackOff") || strings.HasPrefix(e.Reason, "Err") {
			return term.StyleWarn
		}
	case podwatch.EventUnschedulable, podwatch.EventLogError, podwatch.EventRestarted, podwatch.EventDeleted:
		return term.StyleWarn
	}
	return term.StyleNone
}

// podGone says what became of an aborted job's pod: ", pod "x" deleted"
// when one was created (the job went pending), else that none was.
func podGone(j *job.Job) string {
	if j.Status.PodName == "" {
		return " before its pod was created"
	}
	return fmt.Sprintf(", pod %q deleted", j.Status.PodName)
}

// Detail is a job's description without the "job succeeded" (or other
// state) it may start with, as ": rest", or "" when nothing is left.
func Detail(desc string) string {
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
