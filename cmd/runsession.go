package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"k8s.io/client-go/kubernetes"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/scheduler"
)

// annotationRunSession ties a job submitted by `lockctl run`, and the pod
// made from it, to that run's hold on its lock: "LOCKNS/TARGET/SESSION".
// The job's run is alive while the lock of TARGET in LOCKNS is held by
// SESSION and has not expired (docs/2026-12-02-run-session.md).
const annotationRunSession = "lockctl.dev/run-session"

// runSession is the value of annotationRunSession.
type runSession struct {
	LockNamespace string
	Target        string
	Session       string
}

func (s runSession) String() string {
	return s.LockNamespace + "/" + s.Target + "/" + s.Session
}

// runSessionOf returns the run session a job is tied to, if any.
func runSessionOf(j *job.Job) (runSession, bool) {
	parts := strings.Split(j.Annotations[annotationRunSession], "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return runSession{}, false
	}
	return runSession{LockNamespace: parts[0], Target: parts[1], Session: parts[2]}, true
}

// runSessions judges run sessions by reading their locks.
//
// TODO(lead): the reconcile loop does not ask this yet; a scheduler hook
// (Options.Sessions, called for jobs not yet terminal) would let a running
// `lockctl reconcile` remove orphaned pods without waiting for the next run.
type runSessions struct {
	cs      kubernetes.Interface
	f       *Factory
	clients map[string]*lock.Client
}

func newRunSessions(f *Factory, cs kubernetes.Interface) *runSessions {
	return &runSessions{cs: cs, f: f, clients: map[string]*lock.Client{}}
}

// alive reports whether the run that submitted j still holds its lock.
// Jobs not submitted by run are always alive.
func (s *runSessions) alive(ctx context.Context, j *job.Job) (bool, error) {
	rs, ok := runSessionOf(j)
	if !ok {
		return true, nil
	}
	c := s.clients[rs.LockNamespace]
	if c == nil {
		c = lock.New(s.cs.CoreV1(), s.cs.CoreV1(), rs.LockNamespace)
		c.Clock, c.Log = s.f.Clock, s.f.Log
		s.clients[rs.LockNamespace] = c
	}
	l, err := c.Get(ctx, rs.Target)
	if err != nil {
		return false, err
	}
	return l != nil && l.Status.Holder != nil && l.Status.Holder.Session == rs.Session && l.Status.Alive, nil
}

// reasonSessionEnded is the description of a job aborted because the run
// that submitted it is gone.
const reasonSessionEnded = "aborted: the lockctl run that started it ended without cleaning up (its lock expired)"

// sweepOrphans aborts the jobs of the job namespace whose run ended without
// cleaning up, which deletes their pods, and says so. me, the caller's own
// session, is never swept. Failures are reported and skipped: they must not
// stop this run.
func (e *jobEnv) sweepOrphans(ctx context.Context, d *runDisplay, f *Factory, me runSession) {
	store := e.cleaner.Store()
	jobs, err := store.List(ctx, job.ListOptions{ActiveOnly: true})
	if err != nil && len(jobs) == 0 {
		// NOTE: quiet, because a command run by someone who may not read
		// jobs is not to be cluttered with it.
		f.Log.WithError(err).Debug("cannot look for jobs left behind by earlier runs")
		return
	}
	sessions := newRunSessions(f, e.jobs)
	for _, j := range jobs {
		rs, ok := runSessionOf(j)
		if !ok || rs == me {
			continue
		}
		alive, err := sessions.alive(ctx, j)
		if err != nil {
			d.printf(styleWarn, "cannot tell whether job %q was left behind: %v", j.Name, err)
			continue
		}
		if alive {
			continue
		}
		if _, err := abortJob(ctx, store, e.cleaner, j.Name, reasonSessionEnded); err != nil {
			d.printf(styleWarn, "cannot abort job %q left behind by an earlier run: %v", j.Name, err)
			continue
		}
		d.printf(styleWarn, "job %q was left behind by a lockctl run that ended (lock %q expired): aborted, pod %q deleted",
			j.Name, rs.Target, job.PodName(j))
	}
}

// abortJob aborts a job and reconciles it at once, which deletes its pod
// and completes it, so no loop needs to run. A job that has finished
// already is returned as it is.
func abortJob(ctx context.Context, store *job.Store, r *scheduler.Reconciler, name, reason string) (*job.Job, error) {
	j, err := store.Abort(ctx, name, reason)
	if errors.Is(err, job.ErrTerminal) {
		return j, nil
	}
	if err != nil {
		return nil, err
	}
	for range 3 {
		if _, err = r.Reconcile(ctx, name); !errors.Is(err, job.ErrConflict) {
			break
		}
	}
	if err != nil {
		return nil, fmt.Errorf("delete the pod of job %q: %w", name, err)
	}
	return store.Get(ctx, name)
}
