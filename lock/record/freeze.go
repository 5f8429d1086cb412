package record

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"
	"unicode"

	"github.com/lockctl/lockctl/internal/base/schema"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Freeze stops a lock from changing hands until Until: contenders wait (or
// time out), the holder at the time keeps the lock, and only contenders
// that ignore the freeze (an emergency) take it. docs/adr/0022-freeze.md
// has the design. A record with a freeze is written as major version 2
// (frozenVersion), which lockctl releases that do not know freezes
// refuse instead of ignoring it.
type Freeze struct {
	// Reason says why, shown to everyone who waits.
	Reason string `json:"reason"`
	// By is who froze the lock.
	By Identity `json:"by"`
	// User is the Kubernetes user who froze an enforced lock (a
	// SelfSubjectReview's username), the one its rights were judged by;
	// empty on a lock not enforced (record version 1.9).
	User string `json:"user,omitempty"`
	// Since is when the freeze was set.
	Since metav1.MicroTime `json:"since"`
	// Until is when the freeze ends by itself; the next write after it
	// removes the freeze from the record.
	Until metav1.MicroTime `json:"until"`
	// Overrides lists, newest last, the contenders that took the lock
	// during the freeze with --ignore-freeze; at most maxOverrides.
	Overrides []Override `json:"overrides,omitempty"`
}

// Override records a contender that took a frozen lock.
type Override struct {
	Identity `json:",inline"`
	// At is when it took the lock.
	At metav1.MicroTime `json:"at"`
}

// maxOverrides bounds Freeze.Overrides; the oldest are dropped first.
const maxOverrides = 20

// frozenVersion is the version of a record that carries a freeze:
// major 2, so lockctl releases without freezes (which read major 1 only)
// refuse the lock with a version error rather than hand it out, and the
// same minor as RecordVersion, whose fields it has too. Once the freeze is
// gone the record is written as RecordVersion again.
const frozenVersion = "2.10"

// frozenRecordVersion is frozenVersion parsed.
var frozenRecordVersion = schema.MustParse(frozenVersion)

// ActiveAt reports whether the freeze holds at now; a nil freeze never
// does.
func (f *Freeze) ActiveAt(now time.Time) bool {
	return f != nil && now.Before(f.Until.Time)
}

// Describe renders the freeze for people: `frozen until
// 2026-12-03T18:00:00Z by acme/web@main#1: "release party"`.
func (f *Freeze) Describe() string {
	by := f.By.String()
	if f.User != "" {
		by += " (user " + f.User + ")"
	}
	return fmt.Sprintf("frozen until %s by %s: %q", f.Until.UTC().Format(time.RFC3339), by, f.Reason)
}

// FreezeRequest describes a freeze to set.
type FreezeRequest struct {
	// Target is the namespace whose lock to freeze.
	Target string
	// By is who freezes it.
	By Identity
	// Reason is required.
	Reason string
	// Until is when the freeze ends; it must be in the future.
	Until time.Time
	// LookupUser, when set, tells who freezes as a Kubernetes user, asked
	// only when the lock is enforced (Request.Callbacks.LookupUser).
	LookupUser func(ctx context.Context) User
}

// maxFreezeReasonLen bounds Freeze.Reason in bytes.
const maxFreezeReasonLen = 1024

// WindowError is returned by Unfreeze during a freeze window: the window
// comes from configuration, which unfreeze does not change.
type WindowError struct {
	Target, Namespace string
	// Freeze is the window's freeze.
	Freeze *Freeze
}

func (e *WindowError) Error() string {
	return fmt.Sprintf("lock on %q is in freeze window %q of configmap %s/%s (%s); unfreeze cannot lift a window: remove it with lockctl freeze-windows remove %s, or acquire with --ignore-freeze",
		e.Target, e.Freeze.By.Branch, e.Namespace, FreezeWindowsName, e.Freeze.Describe(), e.Freeze.By.Branch)
}

// Unfrozen says what Unfreeze did.
type Unfrozen struct {
	// Previous is the freeze removed; nil when the lock was not frozen.
	Previous *Freeze
	// HandedTo is the waiter that holds the lock now, when the lock had no
	// holder.
	HandedTo *Claim
}

// Unheld reports whether nobody holds the lock: its holder is the free
// placeholder (IsFree), or empty.
func (r *Record) Unheld() bool { return r.Holder.ClaimID == "" || r.IsFree() }

// Thaw drops a freeze that is over at now, so that the record is written
// as major version 1 again; it reports whether it did.
func (r *Record) Thaw(now time.Time) bool {
	if r.Freeze == nil || r.Freeze.ActiveAt(now) {
		return false
	}
	r.unfreeze(now)
	return true
}

// unfreeze drops the record's freeze, ended at now or at its until when
// that came first, and keeps its span in Frozen for statistics.
func (r *Record) unfreeze(now time.Time) {
	f := r.Freeze
	if f == nil {
		return
	}
	until := f.Until
	if now.Before(until.Time) {
		until = metav1.NewMicroTime(now)
	}
	if until.After(f.Since.Time) {
		r.Frozen = append(r.Frozen, FrozenSpan{Since: f.Since, Until: until})
		if n := len(r.Frozen) - KeptHistory; n > 0 {
			r.Frozen = append([]FrozenSpan(nil), r.Frozen[n:]...)
		}
	}
	r.Freeze = nil
}

// FrozenSpan is a freeze that ended, as the record remembers it: from
// when until when the lock was frozen (record times). Added in record
// version 1.9.
type FrozenSpan struct {
	Since metav1.MicroTime `json:"since"`
	Until metav1.MicroTime `json:"until"`
}

// HolderOrNone is the holder, or the zero Claim when nobody holds the lock,
// for the waiting display and errors.
func (r *Record) HolderOrNone() Claim {
	if r.Unheld() {
		return Claim{}
	}
	return r.Holder
}

// Vacate makes the lock free at ts as free does, keeping the queue: a
// frozen lock whose holder left waits for the freeze to end.
func (r *Record) Vacate(ts metav1.MicroTime) {
	waiters := r.Waiters
	r.Free(ts)
	r.Waiters = waiters
}

// DropExpired removes the waiters whose place has expired at now.
func (r *Record) DropExpired(now time.Time) {
	live := r.Waiters[:0]
	for _, w := range r.Waiters {
		if w.Expires != nil && w.Expires.After(now) {
			live = append(live, w)
		}
	}
	r.Waiters = live
}

// mayTake reports whether c may take the lock at now: the lock is not
// frozen, or c ignores the freeze.
func (r *Record) mayTake(c Claim, now time.Time) bool {
	return c.IgnoreFreeze || !r.Freeze.ActiveAt(now)
}

// Overridden records, when the lock is frozen at now, that its holder took
// it at ts in spite of the freeze: in the freeze's Overrides, and on the
// holder's claim, whose history entry keeps it after the freeze is gone.
func (r *Record) Overridden(ts metav1.MicroTime, now time.Time) {
	if !r.Freeze.ActiveAt(now) {
		return
	}
	r.Holder.IgnoredFreeze = r.Freeze.Describe()
	r.Freeze.Overrides = append(r.Freeze.Overrides, Override{Identity: r.Holder.Identity, At: ts})
	if n := len(r.Freeze.Overrides); n > maxOverrides {
		r.Freeze.Overrides = r.Freeze.Overrides[n-maxOverrides:]
	}
}

// FirstEligible returns the first waiter that may take the lock at now:
// the build that asked the holder to stop (CancelRequest) when it still
// waits, else the first in the queue.
func (r *Record) FirstEligible(now time.Time) *Claim {
	if a := r.cancelAsker(); a != nil && r.mayTake(*a, now) {
		return a
	}
	for _, w := range r.Waiters {
		if r.mayTake(w, now) {
			w := w
			return &w
		}
	}
	return nil
}

func (f *Freeze) Same(o *Freeze) bool {
	if f == nil || o == nil {
		return f == o
	}
	return f.Until.Equal(&o.Until) && f.Reason == o.Reason && f.By == o.By
}

// ValidateFreezeReason checks a freeze reason: not empty, printable, at
// most maxFreezeReasonLen bytes.
func ValidateFreezeReason(reason string) error {
	switch {
	case strings.TrimSpace(reason) == "":
		return errors.New("the reason is empty")
	case len(reason) > maxFreezeReasonLen:
		return fmt.Errorf("the reason is %d bytes long, more than the %d allowed", len(reason), maxFreezeReasonLen)
	case strings.IndexFunc(reason, unicode.IsControl) >= 0:
		return errors.New("the reason contains control characters")
	}
	return nil
}
