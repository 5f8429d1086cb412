package enforce

import (
	"context"
	"fmt"

	"github.com/lockctl/lockctl/kube"
)

// Summarizer makes the lock of a target readable by the policy: it writes
// the lock's summary, creating the lock when there is none, marks it
// enforced in mode ("" removes the mark), and reports whether it wrote
// (lock.Client.Summarize).
type Summarizer interface {
	Summarize(ctx context.Context, target, mode string) (wrote bool, err error)
}

// Enforce makes the lock of s.Target readable by the policy (locks), then
// installs the policy and binding of s (Install); summarized reports
// whether locks wrote, also when Install then fails. It does not wait for
// the API server to apply the policy: AwaitInEffect does.
func Enforce(ctx context.Context, c kube.AdmissionregistrationV1Interface, locks Summarizer, s Settings) (summarized bool, err error) {
	// NOTE: before the policy: the policy's parameter is the lock, which
	// must exist, and a record written by a lockctl before 1.8 has no
	// summary for it to read (it would read the lock as free until its
	// next write). The mark makes contenders record their user, which the
	// policy admits the holder's writes by.
	summarized, err = locks.Summarize(ctx, s.Target, string(s.mode()))
	if err != nil {
		return false, fmt.Errorf("make its lock readable by the policy: %w", err)
	}
	return summarized, Install(ctx, c, s)
}

// State is the state Install leaves for s.
func (s Settings) State() State {
	return State{Enforced: true, Mode: s.Mode, RequireHolder: s.RequireHolder, Strict: s.Strict}
}
