package enforce

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// Locks is what Enforce needs of the lock namespace's locks
// (lock.Client).
type Locks interface {
	// Summarize makes the lock of a target readable by the policy: it
	// writes the lock's summary, creating the lock when there is none,
	// marks it enforced in mode ("" removes the mark), and reports whether
	// it wrote (lock.Client.Summarize).
	Summarize(ctx context.Context, target, mode string) (wrote bool, err error)
	// Get returns a target's lock, nil when there is none or it is free.
	Get(ctx context.Context, target string) (*lock.LockView, error)
}

// SystemNamespaces are the namespaces of the cluster's own components:
// a lock there would fence the control plane's add-ons, which the
// policy's exemption of kube-system's service accounts does not cover
// (an operator's own service account, a user's kubectl).
var SystemNamespaces = []string{"kube-system", "kube-public", "kube-node-lease"}

// TargetError is a target Enforce refuses unless forced: the lock
// namespace itself (every other lock kept there would be written only by
// this lock's holder), or a system namespace.
type TargetError struct {
	Target, Why string
}

func (e *TargetError) Error() string {
	return fmt.Sprintf("namespace %q %s: enforce it only with --force", e.Target, e.Why)
}

// UserlessHoldError is a lock held by a claim without a Kubernetes user
// (taken before the lock was enforced, or by a lockctl that could not
// learn its user): enforced, nobody's writes would be the holder's, and
// only writes carrying its fencing token would be admitted until it ends.
type UserlessHoldError struct {
	Target, Holder string
}

func (e *UserlessHoldError) Error() string {
	return fmt.Sprintf("lock %q is held by %s, whose claim has no Kubernetes user (it was taken before the lock was enforced): enforced now, only writes carrying its fencing token would be admitted until it ends; enforce after its release, or with --force", e.Target, e.Holder)
}

// EnforceOptions tune Enforce.
type EnforceOptions struct {
	// Force enforces a target that TargetError or UserlessHoldError would
	// refuse.
	Force bool
}

// Enforce installs the policies and bindings of s (Install), then makes
// the lock of s.Target readable by them and marks it enforced (locks);
// summarized reports whether locks wrote. It refuses the lock namespace
// and the system namespaces as targets, and a lock held without a user,
// unless o.Force. When the lock cannot be marked, the objects it
// installed are removed again, so that nothing is left enforced and
// unmarked. It does not wait for the API server to apply the policy:
// AwaitInEffect does.
func Enforce(ctx context.Context, c kube.AdmissionregistrationV1Interface, locks Locks, s Settings, o EnforceOptions) (summarized bool, err error) {
	if err := s.Validate(); err != nil {
		return false, err
	}
	if !o.Force {
		switch {
		case s.Target == s.LockNamespace:
			return false, &TargetError{Target: s.Target, Why: "is the lock namespace: every other lock kept there would be written only by this lock's holder"}
		case slices.Contains(SystemNamespaces, s.Target):
			return false, &TargetError{Target: s.Target, Why: "is a system namespace: its add-ons and operators would be refused while the lock is held"}
		}
		v, err := locks.Get(ctx, s.Target)
		if err != nil {
			return false, fmt.Errorf("read its lock: %w", err)
		}
		if v != nil && v.Status.Holder != nil && v.Status.Alive && v.Status.Holder.User == "" {
			return false, &UserlessHoldError{Target: s.Target, Holder: v.Status.Holder.Identity.String()}
		}
	}
	created, err := Install(ctx, c, s)
	if err != nil {
		return false, err
	}
	// NOTE: after the policies: the create guard marks a lock created
	// meanwhile, and the mark makes contenders record their user, which
	// the policy admits the holder's writes by.
	summarized, err = locks.Summarize(ctx, s.Target, string(s.mode()))
	if err != nil {
		err = fmt.Errorf("make its lock readable by the policy: %w", err)
		if created {
			if _, uerr := Uninstall(ctx, c, s.Target); uerr != nil {
				err = errors.Join(err, fmt.Errorf("remove the policy installed: %w", uerr))
			}
		}
		return false, err
	}
	return summarized, nil
}

// State is the state Install leaves for s.
func (s Settings) State() State {
	return State{Enforced: true, Mode: s.Mode, RequireHolder: s.RequireHolder, Strict: s.Strict}
}

// Unenforce removes the policies and bindings of target that lockctl
// made (Uninstall), then the lock's enforced mark: after the policies, so
// that no contender takes the lock without its user while they apply.
// The API server applies the removal asynchronously, and refuses the
// mark's removal until it has: that is tried again every interval until
// timeout (0: no limit beyond ctx). It reports whether there was anything
// to remove.
func Unenforce(ctx context.Context, c kube.AdmissionregistrationV1Interface, locks Locks, target string, interval, timeout time.Duration) (bool, error) {
	removed, err := Uninstall(ctx, c, target)
	if err != nil {
		return removed, err
	}
	if timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, timeout)
		defer cancel()
	}
	var last error
	err = wait.PollUntilContextCancel(ctx, interval, true, func(ctx context.Context) (bool, error) {
		_, last = locks.Summarize(ctx, target, "")
		if last != nil && strings.Contains(last.Error(), "[lockctl-enforced=") {
			return false, nil
		}
		return true, last
	})
	if err != nil {
		if last == nil {
			last = err
		}
		return removed, fmt.Errorf("remove its mark %s: %w", record.EnforcedAnnotation, last)
	}
	return removed, nil
}
