package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/scheduler"
)

// AnnotationSession ties a job submitted by a run, and the pod made from
// it, to that run's hold on its lock: "LOCKNS/TARGET/SESSION". The job's run
// is alive while the lock of TARGET in LOCKNS is held by SESSION and has not
// expired (docs/adr/0006-run-session.md).
const AnnotationSession = "lockctl.dev/run-session"

// Session is the value of AnnotationSession.
type Session struct {
	LockNamespace string
	Target        string
	Session       string
}

func (s Session) String() string {
	return s.LockNamespace + "/" + s.Target + "/" + s.Session
}

// SessionOf returns the run session a job is tied to, if any.
func SessionOf(j *job.Job) (Session, bool) {
	parts := strings.Split(j.Annotations[AnnotationSession], "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return Session{}, false
	}
	return Session{LockNamespace: parts[0], Target: parts[1], Session: parts[2]}, true
}

// SessionEnded starts the description of a job aborted because the run that
// submitted it is gone.
const SessionEnded = "the lockctl run that started it ended without cleaning up"

// SessionRecheck is how often a live session without an expiry is checked.
const SessionRecheck = 30 * time.Second

// sessionSlack is how long after a session's expiry it is checked again,
// so that the check finds it expired rather than just about to.
const sessionSlack = time.Second

// Sessions judges run sessions by reading their locks. It is the
// scheduler's Sessions for a reconcile loop, and what a run sweeps with; it
// is safe for concurrent use.
type Sessions struct {
	core  corev1client.CoreV1Interface
	clock clock.WithTicker

	mu      sync.Mutex
	clients map[string]*lock.Client
}

var _ scheduler.Sessions = (*Sessions)(nil)

// NewSessions returns Sessions reading locks, their holder pods and those
// pods' nodes through core, in the cluster where the runs' job records live.
// clk judges the locks' expiries, as lock.Client.Clock does: give it the
// API server's clock (a servertime.Clock observing core's answers), as
// lockctl does, or expiries are judged on the local clock. A nil clk means
// clock.RealClock.
func NewSessions(core corev1client.CoreV1Interface, clk clock.WithTicker) *Sessions {
	if clk == nil {
		clk = clock.RealClock{}
	}
	return &Sessions{core: core, clock: clk, clients: map[string]*lock.Client{}}
}

// Check implements scheduler.Sessions: the run that submitted j lives while
// it holds the lock it named and that hold has not expired. Jobs not
// submitted by a run always live.
func (s *Sessions) Check(ctx context.Context, j *job.Job) (string, time.Duration, error) {
	rs, ok := SessionOf(j)
	if !ok {
		return "", 0, nil
	}
	l, err := s.client(rs.LockNamespace).Get(ctx, rs.Target)
	var notALock *lock.NotALockError
	switch {
	case errors.As(err, &notALock):
		return fmt.Sprintf("%s: lock %q was replaced by an object lockctl did not write", SessionEnded, rs.Target), 0, nil
	case err != nil:
		return "", 0, err
	case l == nil:
		return fmt.Sprintf("%s: lock %q is gone", SessionEnded, rs.Target), 0, nil
	case l.Status.Invalid != "":
		// NOTE: a damaged record is for a person to look at; until then the
		// session is given the benefit of the doubt.
		return "", SessionRecheck, nil
	case l.Status.Holder == nil || l.Status.Holder.Session != rs.Session:
		return fmt.Sprintf("%s: it no longer holds lock %q", SessionEnded, rs.Target), 0, nil
	case !l.Status.Alive:
		return fmt.Sprintf("%s: its hold on lock %q expired", SessionEnded, rs.Target), 0, nil
	}
	if exp := l.Status.Holder.Expires; exp != nil {
		return "", exp.Sub(s.clock.Now()) + sessionSlack, nil
	}
	return "", SessionRecheck, nil
}

func (s *Sessions) client(namespace string) *lock.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[namespace]
	if c == nil {
		c = lock.New(s.core, s.core, namespace)
		c.Nodes = s.core
		c.Clock = s.clock
		s.clients[namespace] = c
	}
	return c
}
