package cmd

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/lock"
)

// statusOptions configure `lockctl status`.
type statusOptions struct {
	f *Factory

	lockFlags
	Target string
	Output string
}

func newStatusCmd(f *Factory, runF func(*statusOptions) error) *cobra.Command {
	o := &statusOptions{f: f}
	c := &cobra.Command{
		Use:   "status [NAMESPACE]",
		Short: "Show who holds each deploy lock and who waits",
		Long: heredoc.Doc(`
			Show the deploy locks in the lock namespace, or the lock of
			NAMESPACE: the holder, since when, whether it is still alive (its
			pod runs or its expiry is ahead) and the queue, in the order it is
			served, each waiter marked with its priority unless normal ("(high)",
			"(low, aged to normal)").

			No lock is not a failure: status says so on stderr and exits 0.
		`) + "\n" + exitCodeHelp,
		Example: examples(`
			# Every lock, as a table
			lockctl status

			# One lock, as YAML
			lockctl status staging -o yaml
		`),
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Target = args[0]
				if err := validateTarget(o.Target); err != nil {
					return err
				}
			}
			if runF != nil {
				return runF(o)
			}
			return runStatus(c.Context(), o)
		},
	}
	o.addLockNamespaceFlag(c.Flags())
	addOutputFlag(c.Flags(), &o.Output, "json", "yaml")
	return c
}

func runStatus(ctx context.Context, o *statusOptions) error {
	locks, err := newLockClient(o.f, &o.lockFlags)
	if err != nil {
		return err
	}
	var items []lock.Lock
	if o.Target != "" {
		l, err := locks.Get(ctx, o.Target)
		if err != nil {
			return err
		}
		if l != nil {
			items = append(items, *l)
		}
	} else if items, err = locks.List(ctx); err != nil {
		return err
	}
	if len(items) == 0 {
		what := "no locks in namespace " + fmt.Sprintf("%q", locks.Namespace())
		if o.Target != "" {
			what = fmt.Sprintf("lock %q is free (%s)", o.Target, locks.Describe(o.Target))
		}
		fmt.Fprintln(o.f.IOStreams.ErrOut, what)
		if o.Output == "" {
			return nil
		}
	}
	switch {
	case o.Output != "" && o.Target != "" && len(items) == 1:
		return printObject(o.f.IOStreams.Out, o.Output, items[0])
	case o.Output != "":
		return printObject(o.f.IOStreams.Out, o.Output, listOf(items))
	}
	// NOTE: ages count on the clock the lock was stamped on, the API server's.
	printLockTable(o.f.IOStreams.Out, items, locks.Clock.Now())
	return nil
}

// printLockTable prints locks as kubectl prints resources.
func printLockTable(w io.Writer, items []lock.Lock, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "TARGET\tHOLDER\tSINCE\tLIVENESS\tWAITING")
	for _, l := range items {
		if l.Status.Invalid != "" {
			fmt.Fprintf(tw, "%s\t<invalid>\t-\t%s\t-\n", orDash(l.Spec.Target), l.Status.Invalid)
			continue
		}
		h := l.Status.Holder
		liveness := l.Status.Liveness
		if !l.Status.Alive {
			liveness += " (stale)"
		}
		if h.HandedOver {
			liveness += " (handed over)"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", l.Spec.Target, h.Identity, humanDuration(now.Sub(h.Since.Time)), liveness, waiting(l.Status.Waiters))
	}
	tw.Flush()
}

func waiting(ws []lock.Claim) string {
	if len(ws) == 0 {
		return "-"
	}
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = fmt.Sprintf("%d:%s%s", i+1, w.Identity, priorityNote(w))
	}
	return strings.Join(names, ",")
}

// priorityNote marks a waiter that is not plainly normal: "(high)", or
// "(low, aged to normal)" once ageing raised it.
func priorityNote(w lock.Claim) string {
	p := w.Priority.Level()
	switch {
	case w.Effective != "" && w.Effective != p:
		return fmt.Sprintf("(%s, aged to %s)", p, w.Effective)
	case p != lock.PriorityNormal:
		return "(" + string(p) + ")"
	}
	return ""
}

func orDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}
