package cmd

import (
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/podwatch"
	"github.com/lockctl/lockctl/run"
)

// runDisplay shows what `lockctl run` does, on the console. On a terminal
// (live) status lines scroll above one live line that is redrawn every
// second, and lines are coloured unless NO_COLOR is set; elsewhere every
// line is printed once with a UTC timestamp, for CI logs, or as a JSON
// object with JX_LOG_FORMAT=json. Container logs written through logs()
// never collide with the live line. With -q nothing shows.
type runDisplay struct{ c *console }

func newRunDisplay(c *console) *runDisplay { return &runDisplay{c: c} }

// printf prints one status line.
func (d *runDisplay) printf(style lineStyle, format string, args ...any) {
	d.c.statusf(style, nil, format, args...)
}

// setStatus sets what the live line shows; nil removes it. Without a
// terminal there is no live line.
func (d *runDisplay) setStatus(status func(now time.Time) string) { d.c.setStatus(status) }

// logs wraps w, where container logs go, so that on a terminal each write
// first takes the live line away and then puts it back under the output.
func (d *runDisplay) logs(w io.Writer) io.Writer { return d.c.around(w) }

// close stops redrawing and removes the live line.
func (d *runDisplay) close() { d.c.setStatus(nil) }

// runObserver shows what a run does on its display: it is the run.Observer
// of lockctl run.
type runObserver struct {
	d *runDisplay
	o *runOptions

	mu       sync.Mutex
	started  time.Time       // when the job was submitted
	phase    corev1.PodPhase // of the job's pod; "" before it shows up
	stopping bool            // the run was interrupted or lost its lock
}

var _ run.Observer = (*runObserver)(nil)

func (r *runObserver) RenewFailed(target string, retryIn time.Duration, err error) {
	r.d.printf(styleWarn, "cannot renew lock %q, trying again in %s: %v", target, humanDuration(retryIn), err)
}

func (r *runObserver) Released(target string, rel *lock.Released) {
	r.d.printf(styleNone, "lock %q released", target)
	if rel.HandedTo != nil {
		r.d.printf(styleNone, "lock %q now held by %s", target, rel.HandedTo.Identity)
	}
}

func (r *runObserver) LeftBehind(j *job.Job, ended string, err error) {
	if err != nil {
		r.d.printf(styleWarn, "%v", err)
		return
	}
	r.d.printf(styleWarn, "job %q was left behind by a lockctl run that ended (%s): aborted%s", j.Name, ended, podGone(j))
}

func (r *runObserver) Submitted(j *job.Job, podNamespace string) {
	r.mu.Lock()
	r.started = r.o.f.Clock.Now()
	r.mu.Unlock()
	r.d.printf(styleNone, "job %q submitted in namespace %q; its pod runs in %q", j.Name, j.Namespace, podNamespace)
	r.d.setStatus(func(now time.Time) string { return r.status(j.Name, now) })
}

// status is the live line while the job runs.
func (r *runObserver) status(name string, now time.Time) string {
	r.mu.Lock()
	phase, elapsed := r.phase, humanDuration(now.Sub(r.started))
	r.mu.Unlock()
	if phase == "" {
		return fmt.Sprintf("job %q waiting for its pod; %s elapsed", name, elapsed)
	}
	return fmt.Sprintf("pod %q %s; %s elapsed", name, phase, elapsed)
}

func (r *runObserver) PodEvent(e podwatch.Event) {
	r.mu.Lock()
	r.phase = e.Phase
	if e.Kind == podwatch.EventDeleted {
		r.phase = ""
	}
	r.mu.Unlock()
	r.d.printf(eventStyle(e), "%s", e)
}

func (r *runObserver) JobChanged(j *job.Job) {
	if why := detail(j.Status.Description); why != "" {
		r.d.printf(styleNone, "job %q %s%s", j.Name, j.Status.State, why)
	}
}

func (r *runObserver) Replaced(rp run.Replacement) {
	if rp.Following {
		r.d.printf(styleWarn, "%s", rp)
	}
}

func (r *runObserver) Stopping(s run.Stop) {
	r.mu.Lock()
	r.stopping = true
	r.mu.Unlock()
	target, ttl := r.o.Target, humanDuration(r.o.TTL)
	switch {
	case s.Job != "" && s.Lost != nil:
		r.d.printf(styleBad, "%v: aborting job %q", s.Lost, s.Job)
	case s.Job != "":
		r.d.printf(styleWarn, "interrupted: aborting job %q (its pod is deleted) and releasing lock %q; interrupt again to exit at once, "+
			"leaving lock %q to expire within %s and pod %q to be deleted after that by lockctl reconcile or the next lockctl run",
			s.Job, target, target, ttl, s.Job)
	case s.BeforeStart:
		r.d.printf(styleWarn, "interrupted before %s started; releasing lock %q", run.QuoteCommand(s.Command), target)
	case s.Lost != nil:
		r.d.printf(styleBad, "%v: stopping the command with SIGTERM", s.Lost)
	default:
		what := "waiting for the command to exit"
		if s.Signal != nil {
			what = fmt.Sprintf("passing %s to the command and waiting for it to exit", run.SignalName(s.Signal))
		}
		r.d.printf(styleWarn, "interrupted: %s, then releasing lock %q; interrupt again to exit at once, leaving lock %q to expire within %s",
			what, target, target, ttl)
	}
	r.d.setStatus(nil)
}

func (r *runObserver) Aborted(name string, j *job.Job, err error) {
	switch {
	case err != nil:
		r.d.printf(styleBad, "cannot abort job %q: %v", name, err)
	case j.Status.State == job.Aborted:
		r.d.printf(styleWarn, "job %q aborted%s", name, podGone(j))
	default:
		r.d.printf(styleNone, "job %q had already finished: %s", name, j.Status.State)
	}
}

func (r *runObserver) Started(argv []string) {
	r.d.printf(styleNone, "running %s", run.QuoteCommand(argv))
}

func (r *runObserver) SignalFailed(err error) {
	r.d.printf(styleWarn, "cannot signal the command: %v", err)
}

func (r *runObserver) Exited(ps *os.ProcessState, err error) {
	r.mu.Lock()
	stopping := r.stopping
	r.mu.Unlock()
	style := styleGood
	switch {
	case stopping:
		style = styleWarn
	case ps == nil || !ps.Success():
		style = styleBad
	}
	r.d.printf(style, "command %s", run.DescribeExit(ps, err))
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

// podGone says what became of an aborted job's pod: ", pod "x" deleted"
// when one was created (the job went pending), else that none was.
func podGone(j *job.Job) string {
	if j.Status.PodName == "" {
		return " before its pod was created"
	}
	return fmt.Sprintf(", pod %q deleted", j.Status.PodName)
}
