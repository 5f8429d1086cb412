package cmd

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/clock"

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

// runSessions judges run sessions by reading their locks. It is the
// scheduler's Sessions for lockctl reconcile, and what lockctl run sweeps
// with; it is safe for concurrent use.
type runSessions struct {
	cs    kubernetes.Interface
	clock clock.WithTicker

	mu      sync.Mutex
	clients map[string]*lock.Client
}

var _ scheduler.Sessions = (*runSessions)(nil)

func newRunSessions(f *Factory, cs kubernetes.Interface) *runSessions {
	return &runSessions{cs: cs, clock: f.Clock, clients: map[string]*lock.Client{}}
}

// sessionSlack is how long after a session's expiry it is checked again,
// so that the check finds it expired rather than just about to.
const sessionSlack = time.Second

// Check implements scheduler.Sessions: the run that submitted j lives while
// it holds the lock it named and that hold has not expired. Jobs not
// submitted by run always live.
func (s *runSessions) Check(ctx context.Context, j *job.Job) (string, time.Duration, error) {
	rs, ok := runSessionOf(j)
	if !ok {
		return "", 0, nil
	}
	l, err := s.client(rs.LockNamespace).Get(ctx, rs.Target)
	var notALock *lock.NotALockError
	switch {
	case errors.As(err, &notALock):
		return fmt.Sprintf("%s: lock %q was replaced by an object lockctl did not write", sessionEnded, rs.Target), 0, nil
	case err != nil:
		return "", 0, err
	case l == nil:
		return fmt.Sprintf("%s: lock %q is gone", sessionEnded, rs.Target), 0, nil
	case l.Status.Invalid != "":
		// NOTE: a damaged record is for a person to look at; until then the
		// session is given the benefit of the doubt.
		return "", sessionRecheck, nil
	case l.Status.Holder == nil || l.Status.Holder.Session != rs.Session:
		return fmt.Sprintf("%s: it no longer holds lock %q", sessionEnded, rs.Target), 0, nil
	case !l.Status.Alive:
		return fmt.Sprintf("%s: its hold on lock %q expired", sessionEnded, rs.Target), 0, nil
	}
	if exp := l.Status.Holder.Expires; exp != nil {
		return "", exp.Sub(s.clock.Now()) + sessionSlack, nil
	}
	return "", sessionRecheck, nil
}

// sessionRecheck is how often a live session without an expiry is checked.
const sessionRecheck = 30 * time.Second

// sessionEnded starts the description of a job aborted because the run that
// submitted it is gone.
const sessionEnded = "the lockctl run that started it ended without cleaning up"

func (s *runSessions) client(namespace string) *lock.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[namespace]
	if c == nil {
		c = lock.New(s.cs.CoreV1(), s.cs.CoreV1(), namespace)
		c.Clock = s.clock
		s.clients[namespace] = c
	}
	return c
}

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
		if rs, ok := runSessionOf(j); !ok || rs == me {
			continue
		}
		ended, _, err := sessions.Check(ctx, j)
		if err != nil {
			d.printf(styleWarn, "cannot tell whether job %q was left behind: %v", j.Name, err)
			continue
		}
		if ended == "" {
			continue
		}
		if _, err := abortJob(ctx, store, e.cleaner, j.Name, job.ReasonSessionEnded, ended); err != nil {
			d.printf(styleWarn, "cannot abort job %q left behind by an earlier run: %v", j.Name, err)
			continue
		}
		d.printf(styleWarn, "job %q was left behind by a lockctl run that ended (%s): aborted, pod %q deleted",
			j.Name, strings.TrimPrefix(ended, sessionEnded+": "), job.PodName(j))
	}
}

// abortJob aborts a job and reconciles it at once, which deletes its pod
// and completes it, so no loop needs to run. A job that has finished
// already is returned as it is.
func abortJob(ctx context.Context, store *job.Store, r *scheduler.Reconciler, name, reason, description string) (*job.Job, error) {
	j, err := store.Abort(ctx, name, reason, description)
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
