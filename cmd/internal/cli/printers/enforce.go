package printers

import (
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/lockctl/lockctl/enforce"
)

// Unenforced says on w what lockctl enforce --uninstall did to the lock of
// target: removed its policy and binding, or found none.
func Unenforced(w io.Writer, target string, removed bool) {
	if removed {
		fmt.Fprintf(w, "lock %q is no longer enforced (removed ValidatingAdmissionPolicy and binding %s)\n", target, enforce.Name(target))
		return
	}
	fmt.Fprintf(w, "lock %q was not enforced\n", target)
}

// Enforced says on w that the policy of s is installed, and, in deny mode,
// that the command waits for the API server to apply it.
func Enforced(w io.Writer, s enforce.Settings) {
	desc := s.State().Describe()
	if s.Mode != enforce.ModeDeny {
		fmt.Fprintf(w, "lock %q enforced (%s) by ValidatingAdmissionPolicy %s; the API server applies it within seconds\n", s.Target, desc, enforce.Name(s.Target))
		return
	}
	fmt.Fprintf(w, "lock %q enforced (%s) by ValidatingAdmissionPolicy %s; waiting for the API server to apply it...\n", s.Target, desc, enforce.Name(s.Target))
}

// InEffect says on w how the wait for the policy of target to apply
// (enforce.AwaitInEffect, up to timeout) ended with err: in effect, not
// checkable, or waiting for the namespace. A policy not in effect in time
// is the error returned.
func InEffect(w io.Writer, target string, err error, timeout time.Duration) error {
	switch {
	case errors.Is(err, enforce.ErrNoTargetNamespace):
		fmt.Fprintf(w, "lock %q: namespace %q does not exist yet; the policy applies to its writes once it is created\n", target, target)
	case errors.Is(err, enforce.ErrTargetTerminating):
		fmt.Fprintf(w, "lock %q: namespace %q is being deleted; the policy applies to its writes if it is created again\n", target, target)
	case errors.Is(err, enforce.ErrNotInEffect):
		return fmt.Errorf("lock %q: %w after %s; it is installed and will apply, check with a write to %q", target, err, timeout, target)
	case err != nil:
		fmt.Fprintf(w, "lock %q: could not check that the policy is in effect: %v\n", target, err)
	default:
		fmt.Fprintf(w, "lock %q: the API server refuses writes from anyone but the holder\n", target)
	}
	return nil
}
