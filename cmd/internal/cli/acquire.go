package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/internal/base/human"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// confirmTimeout bounds giving back the locks of an acquisition whose
// hand-over could not be confirmed.
const confirmTimeout = 10 * time.Second

// AcquireConfirmed takes the locks of parts, all or nothing
// (lock.AcquireAcross), then waits on cmdCtx for the confirmation of
// every hand-over among them (lock.Held.Confirm): the hold outlives the
// command, so it is confirmed first, each bounded by the waiter's expiry
// it stands on. When one fails, the hold is lost: the locks are given
// back, as far as the API servers answer, and its error returned.
func AcquireConfirmed(ctx, cmdCtx context.Context, s Sites, parts []lock.Part) ([]*lock.Held, error) {
	all, err := lock.AcquireAcross(ctx, parts)
	if err != nil {
		return nil, err
	}
	for _, held := range all {
		if _, err := held.Confirm(cmdCtx); err != nil {
			rctx, cancel := context.WithTimeout(context.WithoutCancel(cmdCtx), confirmTimeout)
			defer cancel()
			for i := len(all) - 1; i >= 0; i-- {
				_, _ = s.Of(all[i].Context).ReleaseHeld(rctx, all[i], lock.ReleaseOptions{})
			}
			if len(all) == 1 {
				return nil, err
			}
			return nil, fmt.Errorf("lock %q: %w", held.Where(), err)
		}
	}
	return all, nil
}

// AcquireFailed is the error of an acquire of targets that failed with
// err, said as one lock or several, in the contexts of s; interrupted
// says the command was interrupted while it waited, which it says on the
// console (Main exits 128+signal without a message).
func AcquireFailed(f *Factory, err error, interrupted bool, id record.Identity, targets []string, s Sites) error {
	where := ""
	if s.Across() {
		where = fmt.Sprintf(" in contexts %q", s.Contexts())
	}
	if len(targets) == 1 && !s.Across() {
		if interrupted {
			f.Console().Statusf(term.StyleWarn, logrus.Fields{"lock": targets[0], "holder": id.String()},
				"interrupted while waiting for lock %q; left the queue", targets[0])
		}
		return fmt.Errorf("acquire lock %q: %w", targets[0], err)
	}
	names := fmt.Sprintf("%q", targets)
	if interrupted {
		f.Console().Statusf(term.StyleWarn, logrus.Fields{"holder": id.String()},
			"interrupted while waiting for locks %s%s; left the queue and gave back the locks taken", names, where)
	}
	if len(targets) == 1 {
		return fmt.Errorf("acquire lock %q%s: %w", targets[0], where, err)
	}
	return fmt.Errorf("acquire locks %s%s: %w", names, where, err)
}

// PrintAcquired says on stderr that each lock of all was taken (or was
// already held), and prints the hold on stdout: one lock's fencing token;
// several's, one "NAMESPACE TOKEN" line each; across clusters, each
// namespace's composite token (lock.Tokens: CONTEXT=TOKEN,...), bare for
// one namespace; with output (json, yaml) the Lock objects, a List of
// several.
func PrintAcquired(ctx context.Context, f *Factory, s Sites, all []*lock.Held, id record.Identity, targets []string, output string) error {
	single := len(all) == 1 && !s.Across()
	for _, held := range all {
		printAcquired(f, held, id, s.Of(held.Context), single)
	}
	out := f.IOStreams.Out
	if output != "" {
		single = len(all) == 1
		var items []lock.LockView
		for _, held := range all {
			l, err := s.Of(held.Context).Get(ctx, held.Target)
			if err != nil {
				return err
			}
			if single {
				return printers.Object(out, output, l)
			}
			if l != nil {
				items = append(items, *l)
			}
		}
		return printers.Object(out, output, printers.ListOf(items))
	}
	switch {
	case single:
		fmt.Fprintln(out, all[0].Token)
	case !s.Across():
		for _, held := range all {
			fmt.Fprintf(out, "%s %s\n", held.Target, held.Token)
		}
	case len(targets) == 1:
		fmt.Fprintln(out, lock.TokensOf(all))
	default:
		for _, target := range targets {
			var of []*lock.Held
			for _, held := range all {
				if held.Target == target {
					of = append(of, held)
				}
			}
			fmt.Fprintf(out, "%s %s\n", target, lock.TokensOf(of))
		}
	}
	return nil
}

// printAcquired says on stderr that held was taken (or was already held),
// and warns when a freeze was ignored; with one lock, a re-entry says
// since when.
func printAcquired(f *Factory, held *lock.Held, id record.Identity, locks *lock.Client, single bool) {
	fields := logrus.Fields{"lock": held.Where(), "holder": id.String(), "token": held.Token}
	if fr := held.IgnoredFreeze; fr != nil {
		fmt.Fprintf(f.IOStreams.ErrOut, "warning: lock %q is %s; taken anyway (--ignore-freeze), and the freeze records it\n", held.Where(), fr.Describe())
	}
	switch {
	case held.Reentered && single:
		f.Console().Statusf(term.StyleNone, fields, "lock %q already held by %s since %s; nothing to do (%s)",
			held.Where(), id, held.Holder.Since.UTC().Format(time.RFC3339), locks.Describe(held.Target))
	case held.Reentered:
		f.Console().Statusf(term.StyleNone, fields, "lock %q already held by %s; nothing to do (%s)", held.Where(), id, locks.Describe(held.Target))
	default:
		f.Console().Statusf(term.StyleGood, fields, "lock %q acquired by %s after %s (%s)",
			held.Where(), id, human.Duration(held.Waited), locks.Describe(held.Target))
	}
}
