package progress

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sirupsen/logrus"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/internal/base/human"
	"github.com/lockctl/lockctl/job"
)

// WaitJob returns the job called name once it has ended (job.Store's
// Wait). A job that does not exist is an error at once, not a wait for it
// to appear. While it waits it says so on the console, then prints each
// state the job moves to; a live console also shows the state and the
// time waited on its live line.
func WaitJob(ctx context.Context, cons *term.Console, clk clock.PassiveClock, store *job.Store, name string) (*job.Job, error) {
	j, err := store.Get(ctx, name)
	if err != nil {
		return nil, cmdutil.JobLookupError(err, name, store.Namespace())
	}
	if j.IsTerminal() {
		return j, nil
	}
	cons.Statusf(term.StyleNone, logrus.Fields{"job": name, "state": string(j.Status.State)}, "waiting for job %q to end (%s)", name, j.Status.State)
	var mu sync.Mutex
	state, since := j.Status.State, clk.Now()
	cons.SetStatus(func(now time.Time) string {
		mu.Lock()
		defer mu.Unlock()
		return fmt.Sprintf("waiting for job %q: %s, %s", name, state, human.Duration(now.Sub(since)))
	})
	defer cons.SetStatus(nil)
	return store.Wait(ctx, name, func(j *job.Job) {
		mu.Lock()
		changed := j.Status.State != state && !j.IsTerminal()
		state = j.Status.State
		mu.Unlock()
		if changed {
			cons.Statusf(term.StyleNone, logrus.Fields{"job": name, "state": string(j.Status.State)}, "job %q is %s", name, j.Status.State)
		}
	})
}

// WaitJobs waits for each job named in turn, as WaitJob does, within
// timeout (0 means no limit), and gives ended each job as it is found
// ended, with its JobOutcome line and error. A job that does not exist is
// an error at once; the timeout passing first is an error naming the job
// waited for and matching cmdutil.ErrWaitTimeout (exit 4).
func WaitJobs(ctx context.Context, cons *term.Console, clk clock.PassiveClock, store *job.Store, names []string, timeout time.Duration, ended func(j *job.Job, line string, outcome error)) error {
	waitCtx, cancel := watchtools.ContextWithOptionalTimeout(ctx, timeout)
	defer cancel()
	for _, name := range names {
		j, err := WaitJob(waitCtx, cons, clk, store, name)
		if err != nil {
			if ctx.Err() == nil && errors.Is(waitCtx.Err(), context.DeadlineExceeded) {
				return fmt.Errorf("job %q did not end within %s: %w", name, timeout, cmdutil.ErrWaitTimeout)
			}
			return err
		}
		line, _, outcome := JobOutcome(j, RanFor(j))
		ended(j, line, outcome)
	}
	return nil
}

// RanFor is how long a finished job took, from its submission to its end;
// 0 when either time is missing.
func RanFor(j *job.Job) time.Duration {
	if j.Status.StartTime == nil || j.Status.CompletionTime == nil {
		return 0
	}
	return j.Status.CompletionTime.Sub(j.Status.StartTime.Time)
}

// JobOutcome is how a finished job ends lockctl run, wait and logs -f: the summary line, its
// style, and the error that picks the exit status.
func JobOutcome(j *job.Job, took time.Duration) (string, term.Style, error) {
	what := fmt.Sprintf("job %q", j.Name)
	// NOTE: "build ID ... of job ..." and never "#N" or "build N": the
	// lock holder's CI build (acme/web@main#45) is another number.
	switch id := j.Status.BuildID; {
	case id != "" && j.Spec.Job != "":
		what += fmt.Sprintf(" (build ID %s of job %s)", id, j.Spec.Job)
	case id != "":
		what += fmt.Sprintf(" (build ID %s)", id)
	}
	desc := j.Status.Description
	why := Detail(desc)
	after := " after " + human.Duration(took)
	timedOut := j.Status.Reason == job.ReasonTimeout
	switch j.Status.State {
	case job.Success:
		return what + " succeeded" + after + why, term.StyleGood, nil
	case job.Failure:
		return what + " failed" + after + why, term.StyleBad, cmdutil.SilentError
	case job.Error:
		if timedOut {
			return what + " timed out" + after + why, term.StyleBad, &cmdutil.ExitError{Code: cmdutil.CodeTimeout}
		}
		return what + " ended in error" + after + why, term.StyleBad, cmdutil.SilentError
	case job.Aborted:
		line := what + " was aborted" + after + why
		switch {
		case j.Status.Reason == job.ReasonSuperseded:
			return line, term.StyleBad, &cmdutil.ExitError{Code: cmdutil.CodeSuperseded}
		case timedOut:
			return line, term.StyleBad, &cmdutil.ExitError{Code: cmdutil.CodeTimeout}
		}
		return line, term.StyleBad, &cmdutil.ExitError{Code: cmdutil.CodeError}
	}
	return what + " ended in state " + string(j.Status.State) + after + why, term.StyleBad, &cmdutil.ExitError{Code: cmdutil.CodeError}
}

// JobEnd waits for the final state of the job called name once its pod
// has finished (the reconciler records it a moment later), says how it
// ended on the console and returns the error that picks the exit status,
// as lockctl run does (JobOutcome).
func JobEnd(ctx context.Context, cons *term.Console, clk clock.PassiveClock, store *job.Store, name string) error {
	j, err := WaitJob(ctx, cons, clk, store, name)
	if err != nil {
		return err
	}
	line, style, outcome := JobOutcome(j, RanFor(j))
	cons.Statusf(style, logrus.Fields{"job": j.Name, "state": string(j.Status.State)}, "%s", line)
	return outcome
}
