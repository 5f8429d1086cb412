package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The break-glass grant of an enforced lock: annotations of the lock's
// ConfigMap beside the record, not part of it, written by lockctl
// break-glass and kept by every other write until the grant ends. The
// policy admits the grantee's writes of the target while the grant's
// state is the lock's, and lets only a user with verb breakglass write a
// grant, to itself; so every break-glass write is declared first, in an
// Event and in status, not only in the audit log.
// The grant's annotations the policy reads are the record's
// (record.BreakGlassUserAnnotation …).
const (
	// breakGlassUntilAnnotation is when the grant ends, as the record
	// spells times; the first write of the record after it drops it.
	breakGlassUntilAnnotation = record.SummaryPrefix + "break-glass-until"
)

// breakGlassKeys are the grant's annotations, written and dropped as one.
var breakGlassKeys = []string{record.BreakGlassUserAnnotation, record.BreakGlassStateAnnotation, record.BreakGlassAnnotation, breakGlassUntilAnnotation}

// breakGlassState is the state of the lock a grant is tied to: the
// holder's fencing token (empty when nobody holds it) and the freeze's
// description (empty when not frozen), as the policy reads them from the
// summary; token is the token as the policy knows it.
func breakGlassState(token, freeze string) string {
	return token + "|" + freeze
}

// stateOf is breakGlassState of rec read as cm.
func stateOf(rec *record.Record, cm *corev1.ConfigMap) string {
	token := ""
	if !rec.Unheld() {
		token = rec.Holder.Token
		if rec.Holder.TokenPending && cm != nil {
			token = cm.ResourceVersion
		}
	}
	freeze := ""
	if rec.Freeze != nil {
		freeze = rec.Freeze.Describe()
	}
	return breakGlassState(token, freeze)
}

// BreakGlassRequest declares break-glass on an enforced lock.
type BreakGlassRequest struct {
	// Target is the namespace whose lock the grant overrides.
	Target string
	// User is the Kubernetes user whose writes the grant admits: the
	// caller's own (the policy refuses a grant to anyone else).
	User string
	// By is who declares it, for people.
	By record.Identity
	// Reason is required: why the lock is overridden.
	Reason string
	// For is how long the grant lasts at most; a change of holder or of
	// freeze ends it sooner.
	For time.Duration
}

// BreakGlass is a grant as written.
type BreakGlass struct {
	Target, User, Description string
	Until                     time.Time
}

// errNoUser is returned by GrantBreakGlass for a request without a user.
var errNoUser = errors.New("break-glass needs your Kubernetes user, which the API server did not tell (SelfSubjectReview)")

// GrantBreakGlass writes the grant of req onto target's lock, replacing
// any other, and records a BreakGlass Event. The lock must exist: an
// enforced lock does (lockctl enforce creates it).
func (c *Client) GrantBreakGlass(ctx context.Context, req BreakGlassRequest) (*BreakGlass, error) {
	if req.User == "" {
		return nil, errNoUser
	}
	if err := req.By.Validate(); err != nil {
		return nil, fmt.Errorf("invalid identity: %w", err)
	}
	if err := record.ValidateFreezeReason(req.Reason); err != nil {
		return nil, err
	}
	if req.For <= 0 {
		return nil, errors.New("a break-glass grant needs a duration greater than zero")
	}
	var out *BreakGlass
	err := c.update(ctx, "break-glass", req.Target, nil, func(cm *corev1.ConfigMap) (change, error) {
		if cm == nil {
			return change{}, &notEnforcedError{Target: req.Target}
		}
		rec, err := c.decode(cm, req.Target)
		if err != nil {
			return change{}, err
		}
		now := c.clk.Now()
		rec.Updated = metav1.NewMicroTime(now)
		until := now.Add(req.For).UTC()
		over := "free"
		switch {
		case rec.Freeze != nil:
			over = rec.Freeze.Describe()
		case !rec.Unheld():
			over = "held by " + rec.Holder.Identity.String()
		}
		desc := fmt.Sprintf("break-glass for user %s by %s until %s: %q (the lock was %s)", req.User, req.By, until.Format(time.RFC3339), req.Reason, over)
		out = &BreakGlass{Target: req.Target, User: req.User, Description: desc, Until: until}
		rec.BreakGlass = append(rec.BreakGlass, record.GrantEntry{User: req.User, At: rec.Updated, Until: metav1.NewMicroTime(until)})
		if n := len(rec.BreakGlass) - record.KeptHistory; n > 0 {
			rec.BreakGlass = append([]record.GrantEntry(nil), rec.BreakGlass[n:]...)
		}
		mark := map[string]string{
			record.BreakGlassUserAnnotation:  req.User,
			record.BreakGlassStateAnnotation: stateOf(rec, cm),
			record.BreakGlassAnnotation:      desc,
			breakGlassUntilAnnotation:        record.MicroTime(metav1.NewMicroTime(until)),
		}
		return change{Decision: record.Decision{Record: rec}, annotate: mark, stored: func(ctx context.Context, written *corev1.ConfigMap) {
			c.event(ctx, written, true, reasonBreakGlass, desc)
		}}, nil
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// EndBreakGlass drops target's grant, if any; it reports whether there
// was one.
func (c *Client) EndBreakGlass(ctx context.Context, target string) (bool, error) {
	ended := false
	err := c.update(ctx, "end break-glass", target, nil, func(cm *corev1.ConfigMap) (change, error) {
		ended = false
		if cm == nil || cm.Annotations[record.BreakGlassUserAnnotation] == "" {
			return change{}, nil
		}
		rec, err := c.decode(cm, target)
		if err != nil {
			return change{}, err
		}
		ended = true
		rec.Updated = metav1.NewMicroTime(c.clk.Now())
		drop := map[string]string{}
		for _, k := range breakGlassKeys {
			drop[k] = ""
		}
		return change{Decision: record.Decision{Record: rec}, annotate: drop}, nil
	})
	return ended, err
}

// activeBreakGlass describes target's grant as read on cm, "" when there
// is none or it ended (its time is up at now, or the lock changed hands or
// freeze since).
func activeBreakGlass(cm *corev1.ConfigMap, rec *record.Record, now time.Time) string {
	if cm == nil || rec == nil || !grantLives(cm.Annotations, stateOf(rec, cm), now) {
		return ""
	}
	return cm.Annotations[record.BreakGlassAnnotation]
}

// grantLives reports whether the grant in annotations still applies to a
// lock in state at t.
func grantLives(annotations map[string]string, state string, t time.Time) bool {
	if annotations[record.BreakGlassUserAnnotation] == "" || annotations[record.BreakGlassStateAnnotation] != state {
		return false
	}
	until, err := time.Parse(metav1.RFC3339Micro, annotations[breakGlassUntilAnnotation])
	return err == nil && t.Before(until)
}

// dropEndedGrant removes from next, the version about to be written with
// rec, a break-glass grant that no longer applies: its time is up at the
// record's updated, or the lock changed hands or freeze.
func dropEndedGrant(next *corev1.ConfigMap, rec *record.Record) {
	if next.Annotations[record.BreakGlassUserAnnotation] == "" {
		return
	}
	if grantLives(next.Annotations, stateOf(rec, nil), rec.Updated.Time) {
		return
	}
	for _, k := range breakGlassKeys {
		delete(next.Annotations, k)
	}
}

// notEnforcedError is returned for a break-glass on a lock that does not
// exist, so that nothing is enforced to break.
type notEnforcedError struct{ Target string }

func (e *notEnforcedError) Error() string {
	return fmt.Sprintf("lock %q does not exist, so nothing enforces it: break-glass is for an enforced lock (lockctl enforce %s)", e.Target, e.Target)
}
