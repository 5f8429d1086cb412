package run

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/scheduler"
)

// AnnotationHoldRef ties a job submitted by a run, and the pod made from
// it, to that run's hold on its lock: "LOCKNS/TARGET/CLAIM". The job's run is
// alive while the lock of TARGET in LOCKNS is held under the claim CLAIM
// (lock.Request.Session) and has not expired (docs/adr/0006-run-session.md).
// NOTE: the key keeps its first name, which jobs and pods already carry.
const AnnotationHoldRef = "lockctl.dev/run-session"

// HoldRef names a run's hold on a lock: the value of AnnotationHoldRef.
type HoldRef struct {
	// LockNamespace and Target name the lock.
	LockNamespace string
	Target        string
	// ClaimID is the ID the run claimed the lock under
	// (lock.Request.Session).
	ClaimID string
}

// String renders the ref as AnnotationHoldRef's value.
func (r HoldRef) String() string {
	return r.LockNamespace + "/" + r.Target + "/" + r.ClaimID
}

// HoldRefOf returns the hold of the run a job is tied to, if any.
func HoldRefOf(j *job.Job) (HoldRef, bool) {
	parts := strings.Split(j.Annotations[AnnotationHoldRef], "/")
	if len(parts) != 3 || parts[0] == "" || parts[1] == "" || parts[2] == "" {
		return HoldRef{}, false
	}
	return HoldRef{LockNamespace: parts[0], Target: parts[1], ClaimID: parts[2]}, true
}

// RunEnded starts the description of a job aborted because the run that
// submitted it is gone.
const RunEnded = "the lockctl run that started it ended without cleaning up"

// HoldRecheck is how often a live hold without an expiry is checked.
const HoldRecheck = 30 * time.Second

// holdSlack is how long after a hold's expiry it is checked again, so that
// the check finds it expired rather than just about to.
const holdSlack = time.Second

// HoldChecker tells whether the runs that submitted jobs live by reading
// their locks. It is the scheduler's RunChecker for a reconcile loop, and
// what a run sweeps with; it is safe for concurrent use.
type HoldChecker struct {
	core  kube.CoreV1Interface
	clock clock.WithTicker

	mu      sync.Mutex
	clients map[string]*lock.Client
}

var _ scheduler.RunChecker = (*HoldChecker)(nil)

// HoldCheckerOptions configure a HoldChecker. The zero value is usable.
type HoldCheckerOptions struct {
	// Clock judges the locks' expiries, as lock.New's clock does: give it
	// the API server's clock (a servertime.Clock observing the client's
	// answers), as lockctl does, or expiries are judged on the local clock.
	// nil means clock.RealClock{}.
	Clock clock.WithTicker
}

// NewHoldChecker returns a HoldChecker reading locks, their holder pods and
// those pods' nodes through core, in the cluster where the runs' job records
// live.
func NewHoldChecker(core kube.CoreV1Interface, o HoldCheckerOptions) *HoldChecker {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &HoldChecker{core: core, clock: o.Clock, clients: map[string]*lock.Client{}}
}

// Check implements scheduler.RunChecker: the run that submitted j lives
// while it holds the lock it named and that hold has not expired. Jobs not
// submitted by a run always live.
func (s *HoldChecker) Check(ctx context.Context, j *job.Job) (string, time.Duration, error) {
	rs, ok := HoldRefOf(j)
	if !ok {
		return "", 0, nil
	}
	l, err := s.client(rs.LockNamespace).Get(ctx, rs.Target)
	var notALock *record.NotALockError
	switch {
	case errors.As(err, &notALock):
		return fmt.Sprintf("%s: lock %q was replaced by an object lockctl did not write", RunEnded, rs.Target), 0, nil
	case err != nil:
		return "", 0, err
	case l == nil:
		return fmt.Sprintf("%s: lock %q is gone", RunEnded, rs.Target), 0, nil
	case l.Status.Invalid != "":
		// NOTE: a damaged record is for a person to look at; until then the
		// session is given the benefit of the doubt.
		return "", HoldRecheck, nil
	case l.Status.Holder == nil || l.Status.Holder.ClaimID != rs.ClaimID:
		return fmt.Sprintf("%s: it no longer holds lock %q", RunEnded, rs.Target), 0, nil
	case !l.Status.Alive:
		return fmt.Sprintf("%s: its hold on lock %q expired", RunEnded, rs.Target), 0, nil
	}
	if exp := l.Status.Holder.Expires; exp != nil {
		return "", exp.Sub(s.clock.Now()) + holdSlack, nil
	}
	return "", HoldRecheck, nil
}

func (s *HoldChecker) client(namespace string) *lock.Client {
	s.mu.Lock()
	defer s.mu.Unlock()
	c := s.clients[namespace]
	if c == nil {
		c = lock.New(s.core, s.core, namespace, s.clock, lock.Options{Nodes: s.core})
		s.clients[namespace] = c
	}
	return c
}
