package lock

import (
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/lock/record"
)

// Sentinel errors, matched with errors.Is against the typed errors below.
var (
	// ErrSuperseded: a newer build of the same branch waits or holds the lock.
	ErrSuperseded = errors.New("superseded")
	// ErrTimeout: the wait ended before the lock was free.
	ErrTimeout = errors.New("timed out waiting for the lock")
	// ErrNotHolder: the caller tried to release a lock someone else holds.
	ErrNotHolder = errors.New("not the holder")
	// ErrHeld: the lock is held by someone else and the caller asked not to
	// wait (Request.NoWait).
	ErrHeld = errors.New("lock is held")
)

// TokenError reports a release by fencing token (ReleaseOptions.Token)
// that does not match the holder's token. Nothing was changed.
type TokenError struct {
	Target string
	// Namespace is the lock namespace.
	Namespace string
	// Token is the token the caller gave.
	Token string
	// Holder is the current holder and HolderToken its token, "" when it
	// has none yet (handed the lock, not confirmed).
	Holder      record.Claim
	HolderToken string
}

func (e *TokenError) Error() string {
	held := "with no fencing token yet"
	if e.HolderToken != "" {
		held = fmt.Sprintf("under fencing token %s", e.HolderToken)
	}
	return fmt.Sprintf("lock on %q is held by %s %s, not %s; nothing released", e.Target, e.Holder.Identity, held, e.Token)
}

// Is matches ErrNotHolder.
func (e *TokenError) Is(target error) bool { return target == ErrNotHolder }

// HeldError reports the holder of a lock the caller would have had to wait
// for, when it asked not to wait (Request.NoWait).
type HeldError struct {
	Target string
	Holder record.Claim
	// Waiters is how many others wait for the lock.
	Waiters int
	// Freeze is the freeze that holds the lock, if any.
	Freeze *record.Freeze
}

func (e *HeldError) Error() string {
	if e.Freeze != nil && e.Holder.Identity == (record.Identity{}) {
		return fmt.Sprintf("lock on %q is %s", e.Target, e.Freeze.Describe())
	}
	msg := fmt.Sprintf("lock on %q is held by %s since %s", e.Target, e.Holder.Identity, e.Holder.Since.UTC().Format(time.RFC3339))
	switch {
	case e.Holder.Pod != nil:
		msg += fmt.Sprintf(" (while pod %s runs)", e.Holder.Pod)
	case e.Holder.Expires != nil:
		msg += fmt.Sprintf(" (expires %s)", e.Holder.Expires.UTC().Format(time.RFC3339))
	}
	if e.Waiters > 0 {
		msg += fmt.Sprintf(", %d waiting", e.Waiters)
	}
	if e.Freeze != nil {
		msg += "; " + e.Freeze.Describe()
	}
	return msg
}

// Is matches ErrHeld.
func (e *HeldError) Is(target error) bool { return target == ErrHeld }

// QueueFullError reports a lock whose queue the caller could not join: its
// record would have grown past MaxQueueBytes, which keeps it within what the
// API server stores. Nothing was written. It matches ErrHeld: like a
// contender that asked not to wait, the caller does not wait, and may try
// again once the queue is shorter.
type QueueFullError struct {
	Target string
	Holder record.Claim
	// Waiters is how many others wait for the lock.
	Waiters int
	// Bytes is the size the record would have had with the caller queued.
	Bytes int
}

func (e *QueueFullError) Error() string {
	return fmt.Sprintf("lock on %q is held by %s and its queue is full: %d waiting, and one more would make the lock record %d KiB, over the %d KiB a queue may reach; nothing was written, try again when the queue is shorter",
		e.Target, e.Holder.Identity, e.Waiters, (e.Bytes+1023)>>10, record.MaxQueueBytes>>10)
}

// Is matches ErrHeld.
func (e *QueueFullError) Is(target error) bool { return target == ErrHeld }

// SupersededError reports the claim that made the caller give up.
type SupersededError struct {
	Target string
	By     record.Claim
	// holding is true when By holds the lock rather than waits for it.
	holding bool
}

func (e *SupersededError) Error() string {
	role := "is waiting for it"
	if e.holding {
		role = "holds it"
	}
	return fmt.Sprintf("superseded on lock %q: build %s %s", e.Target, e.By.Identity, role)
}

// Is matches ErrSuperseded.
func (e *SupersededError) Is(target error) bool { return target == ErrSuperseded }

// CancelRequestedError is what Renew returns, having renewed the hold,
// once a newer build of the holder's branch asked it to stop
// (run --cancel-in-progress). It matches ErrSuperseded: the holder stops
// what it runs, releases and exits as superseded.
type CancelRequestedError struct {
	Target string
	// By is the build that asked; it holds the lock next.
	By record.Identity
}

func (e *CancelRequestedError) Error() string {
	return fmt.Sprintf("superseded on lock %q: build %s asked this run to stop (cancel-in-progress)", e.Target, e.By)
}

// Is matches ErrSuperseded.
func (e *CancelRequestedError) Is(target error) bool { return target == ErrSuperseded }

// TimeoutError reports who held the lock when the wait ended: the
// caller's deadline passed before it held the lock.
type TimeoutError struct {
	Target string
	// Holder is the holder last seen; zero when the deadline passed before
	// the lock could be read.
	Holder record.Claim
	Waited time.Duration
	// Freeze is the freeze that held the lock when the wait ended, if any.
	Freeze *record.Freeze
}

func (e *TimeoutError) Error() string {
	waited := roundWait(e.Waited)
	if e.Freeze != nil {
		held := ""
		if e.Holder.Identity != (record.Identity{}) {
			held = fmt.Sprintf(", held by %s", e.Holder.Identity)
		}
		return fmt.Sprintf("timed out after %s waiting for lock on %q: %s%s", waited, e.Target, e.Freeze.Describe(), held)
	}
	if e.Holder.ClaimID == "" && e.Holder.Build == "" {
		return fmt.Sprintf("timed out after %s waiting for lock on %q, before the lock could be read", waited, e.Target)
	}
	return fmt.Sprintf("timed out after %s waiting for lock on %q, held by %s since %s",
		waited, e.Target, e.Holder.Identity, e.Holder.Since.UTC().Format(time.RFC3339))
}

// roundWait rounds d for a message: to the second from half a second on,
// and to what shows it otherwise ("1ns", "250ms").
func roundWait(d time.Duration) time.Duration {
	switch {
	case d >= time.Second/2:
		return d.Round(time.Second)
	case d >= time.Millisecond:
		return d.Round(time.Millisecond)
	}
	return d
}

// Is matches ErrTimeout.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// NotHolderError reports who holds the lock the caller tried to release.
type NotHolderError struct {
	Target string
	// Namespace is the lock namespace.
	Namespace string
	Holder    record.Claim
	// Caller is the caller's CI job when the holder is another job of the
	// caller's build: such a job releases the hold only with its token.
	Caller record.CIJob
}

// OtherJob reports whether the holder is another CI job of the caller's
// build.
func (e *NotHolderError) OtherJob() bool { return e.Caller.Known() }

func (e *NotHolderError) Error() string {
	if e.OtherJob() {
		return fmt.Sprintf("lock on %q is held by %s in %s, another job than the caller's %s",
			e.Target, e.Holder.Identity, e.Holder.CIJob.Describe(), e.Caller.Describe())
	}
	return fmt.Sprintf("lock on %q is held by %s, not by the caller", e.Target, e.Holder.Identity)
}

// Is matches ErrNotHolder.
func (e *NotHolderError) Is(target error) bool { return target == ErrNotHolder }

// errNoNamespace means the lock namespace does not exist.
var errNoNamespace = errors.New("lock namespace not found")

// NamespaceError reports a lock namespace that does not exist, found when
// a lock was to be created in it.
type NamespaceError struct {
	Namespace string
}

func (e *NamespaceError) Error() string {
	return fmt.Sprintf("lock namespace %q does not exist", e.Namespace)
}

// Is matches errNoNamespace.
func (e *NamespaceError) Is(target error) bool { return target == errNoNamespace }
