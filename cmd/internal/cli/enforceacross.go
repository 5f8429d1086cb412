package cli

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
	"time"

	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
)

// EnforceRequest is what lockctl enforce does in each cluster.
type EnforceRequest struct {
	Targets []string
	// Settings are the policy's settings for a target whose lock is in
	// lockNS.
	Settings func(target, lockNS string) enforce.Settings
	// Force enforces even the lock namespace, a system namespace, or a
	// lock held without a Kubernetes user (enforce.EnforceOptions).
	Force bool
	// Uninstall removes the policies instead of installing them.
	Uninstall bool
	// Timeout bounds, in deny mode, the wait for the API server to apply a
	// policy; 0 means no limit.
	Timeout time.Duration
}

// EnforceAcross runs lockctl enforce in the cluster of every client of s
// (Enforce), the clusters at once, each line it says prefixed with its
// context when there are several. A cluster where it fails leaves the
// others as they are: the error names the clusters done and those not,
// and how to complete the install (run it again) or remove it
// (--uninstall with the same --contexts).
func EnforceAcross(ctx context.Context, f *Factory, s Sites, r EnforceRequest) error {
	if !s.Across() {
		cs, err := f.Clientset()
		if err != nil {
			return err
		}
		return Enforce(ctx, f.IOStreams.ErrOut, cs, s.Locks[0], r)
	}
	var mu sync.Mutex
	var done, failed []string
	err := EachSite(s, func(c *lock.Client) error {
		cs, _, err := f.ContextClient(c.Context())
		if err == nil {
			w := &prefixWriter{out: f.IOStreams.ErrOut, mu: &mu, prefix: fmt.Sprintf("context %q: ", c.Context())}
			err = Enforce(ctx, w, cs, c, r)
		}
		mu.Lock()
		defer mu.Unlock()
		if err != nil {
			failed = append(failed, c.Context())
		} else {
			done = append(done, c.Context())
		}
		return err
	})
	if err == nil {
		return nil
	}
	verb, undo := "enforced", "remove it with --uninstall --contexts "+strings.Join(s.Contexts(), ",")
	if r.Uninstall {
		verb, undo = "no longer enforced", "nothing else to undo"
	}
	return fmt.Errorf("locks %q %s in contexts %q only, not in %q: run the same command again to complete it, or %s: %w",
		r.Targets, verb, done, failed, undo, err)
}

// Enforce installs (or, with r.Uninstall, removes) the policies of
// r.Targets in the cluster of cs, whose locks locks reads and marks, and
// says on errOut what it did.
func Enforce(ctx context.Context, errOut io.Writer, cs kube.Interface, locks *lock.Client, r EnforceRequest) error {
	admreg := cs.AdmissionregistrationV1()
	if r.Uninstall {
		for _, t := range r.Targets {
			removed, err := enforce.Unenforce(ctx, admreg, locks, t, 100*time.Millisecond, r.Timeout)
			if err != nil {
				return fmt.Errorf("stop enforcing lock %q: %w", t, err)
			}
			printers.Unenforced(errOut, t, removed)
		}
		return nil
	}
	for _, t := range r.Targets {
		s := r.Settings(t, locks.Namespace())
		summarized, err := enforce.Enforce(ctx, admreg, locks, s, enforce.EnforceOptions{Force: r.Force})
		if summarized {
			fmt.Fprintf(errOut, "lock %q: made its lock readable by the policy and marked it enforced (%s)\n", t, locks.Describe(t))
		}
		if err != nil {
			return fmt.Errorf("enforce lock %q: %w", t, err)
		}
		printers.Enforced(errOut, s)
		if s.Mode == enforce.ModeDeny {
			err := enforce.AwaitInEffect(ctx, cs.CoreV1(), s, 100*time.Millisecond, r.Timeout)
			if err := printers.InEffect(errOut, t, err, r.Timeout); err != nil {
				return err
			}
		}
	}
	return nil
}

// prefixWriter writes whole lines to out, each prefixed, one writer's at
// a time (mu).
type prefixWriter struct {
	out    io.Writer
	mu     *sync.Mutex
	prefix string
	buf    bytes.Buffer
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.buf.Write(p)
	for {
		line, err := w.buf.ReadBytes('\n')
		if err != nil {
			// An unfinished line waits for its end.
			w.buf.Write(line)
			return len(p), nil
		}
		w.mu.Lock()
		_, werr := fmt.Fprintf(w.out, "%s%s", w.prefix, line)
		w.mu.Unlock()
		if werr != nil {
			return len(p), werr
		}
	}
}
