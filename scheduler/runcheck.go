package scheduler

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/job"
)

// RunChecker tells whether the `lockctl run` that submitted a job still
// lives: such a job lives only as long as the run holds its lock. A job
// whose run has ended is aborted and its pod deleted, so a terminal that
// died leaks no pod even when no run comes after it. run.HoldChecker is
// lockctl's.
type RunChecker interface {
	// Check returns why the job's run has ended, or "" while it lives, and
	// how soon to look again if nothing else changes (0: no need). A job
	// submitted by no run returns "", 0, nil.
	Check(ctx context.Context, j *job.Job) (ended string, recheck time.Duration, err error)
}

// runCheckRetry is how soon a job whose run could not be checked is looked
// at again.
const runCheckRetry = 10 * time.Second

// runEnded asks Options.Runs about j. A failed check counts as a live run,
// looked at again soon: an API error must never abort a job.
func (r *Reconciler) runEnded(ctx context.Context, j *job.Job) (string, time.Duration) {
	if r.opts.Runs == nil {
		return "", 0
	}
	ended, recheck, err := r.opts.Runs.Check(ctx, j)
	if err != nil {
		r.log(j).Warn("cannot tell whether the session that submitted the job lives", "error", err)
		return "", runCheckRetry
	}
	return ended, recheck
}

// sooner returns res asking to look again no later than after d (d > 0).
func (res Result) sooner(d time.Duration) Result {
	if d > 0 && (res.RequeueAfter <= 0 || d < res.RequeueAfter) {
		res.RequeueAfter = d
	}
	return res
}
