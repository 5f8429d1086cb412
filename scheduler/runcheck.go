package scheduler

import (
	"context"
	"time"

	"github.com/lockctl/lockctl/job"
)

// Sessions tells whether the foreground session that submitted a job still
// lives: a job of `lockctl run` lives only as long as the run holds its
// lock. A job whose session has ended is aborted and its pod deleted, so a
// terminal that died leaks no pod even when no run comes after it.
type Sessions interface {
	// Check returns why the job's session has ended, or "" while it lives,
	// and how soon to look again if nothing else changes (0: no need). A job
	// tied to no session returns "", 0, nil.
	Check(ctx context.Context, j *job.Job) (ended string, recheck time.Duration, err error)
}

// sessionRetry is how soon a job whose session could not be checked is
// looked at again.
const sessionRetry = 10 * time.Second

// sessionEnded asks Options.Sessions about j. A failed check counts as a
// live session, looked at again soon: an API error must never abort a job.
func (r *Reconciler) sessionEnded(ctx context.Context, j *job.Job) (string, time.Duration) {
	if r.opts.Sessions == nil {
		return "", 0
	}
	ended, recheck, err := r.opts.Sessions.Check(ctx, j)
	if err != nil {
		r.log(j).WithError(err).Warn("cannot tell whether the session that submitted the job lives")
		return "", sessionRetry
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
