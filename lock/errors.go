package lock

import (
	"errors"
	"fmt"
	"time"
)

// Sentinel errors, matched with errors.Is against the typed errors below.
var (
	// ErrSuperseded: a newer build of the same branch waits or holds the lock.
	ErrSuperseded = errors.New("superseded")
	// ErrTimeout: the wait ended before the lock was free.
	ErrTimeout = errors.New("timed out waiting for the lock")
	// ErrNotHolder: the caller tried to release a lock someone else holds.
	ErrNotHolder = errors.New("not the holder")
)

// SupersededError reports the claim that made the caller give up.
type SupersededError struct {
	Target string
	By     Claim
	// Holding is true when By holds the lock rather than waits for it.
	Holding bool
}

func (e *SupersededError) Error() string {
	role := "is waiting for it"
	if e.Holding {
		role = "holds it"
	}
	return fmt.Sprintf("superseded on lock %q: build %s %s", e.Target, e.By.Identity, role)
}

// Is matches ErrSuperseded.
func (e *SupersededError) Is(target error) bool { return target == ErrSuperseded }

// TimeoutError reports who held the lock when the wait ended.
type TimeoutError struct {
	Target string
	Holder Claim
	Waited time.Duration
}

func (e *TimeoutError) Error() string {
	return fmt.Sprintf("timed out after %s waiting for lock on %q, held by %s since %s",
		e.Waited.Round(time.Second), e.Target, e.Holder.Identity, e.Holder.Since.UTC().Format(time.RFC3339))
}

// Is matches ErrTimeout.
func (e *TimeoutError) Is(target error) bool { return target == ErrTimeout }

// NotHolderError reports who holds the lock the caller tried to release.
type NotHolderError struct {
	Target string
	// Namespace is the lock namespace.
	Namespace string
	Holder    Claim
}

func (e *NotHolderError) Error() string {
	return fmt.Sprintf("lock on %q is held by %s, not by the caller", e.Target, e.Holder.Identity)
}

// Is matches ErrNotHolder.
func (e *NotHolderError) Is(target error) bool { return target == ErrNotHolder }

// ErrNoNamespace: the lock namespace does not exist.
var ErrNoNamespace = errors.New("lock namespace not found")

// NamespaceError reports a lock namespace that does not exist, found when
// a lock was to be created in it.
type NamespaceError struct {
	Namespace string
}

func (e *NamespaceError) Error() string {
	return fmt.Sprintf("lock namespace %q does not exist", e.Namespace)
}

// Is matches ErrNoNamespace.
func (e *NamespaceError) Is(target error) bool { return target == ErrNoNamespace }
