package cmd

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/term"
	"github.com/lockctl/lockctl/lock"
)

// historyOptions configure `lockctl history`.
type historyOptions struct {
	f *Factory

	lockFlags
	Target string
	Output string
}

func newHistoryCmd(f *Factory, runF func(*historyOptions) error) *cobra.Command {
	o := &historyOptions{f: f}
	c := &cobra.Command{
		Use:   "history NAMESPACE",
		Short: "Show the last holders of a deploy lock and how each hold ended",
		Long: heredoc.Docf(`
			Show the last holders of the deploy lock of NAMESPACE, newest
			first: who held it, from when until when, and how the hold ended
			(released, handed over to the next waiter, broken with --force by
			whom, expired, or lost with its pod or node). The current holder,
			if any, comes first.

			The lock record keeps the last %d holds, so the history outlives
			the lock's Events, which the API server keeps for an hour. A
			released lock is kept, free, for its history; a lock whose holder
			pod is deleted is garbage-collected with it.

			Reading changes nothing. A lock never taken has no history: history
			says so on stderr and exits 0.
		`, lock.MaxHistory) + "\n" + exitCodeHelp,
		Example: examples(`
			# Who deployed to staging lately
			lockctl history staging

			# The same, for a script
			lockctl history staging -o json | jq -r '.entries[] | select(.ended == "broken") | .by'
		`),
		Args: exactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.Target = args[0]
			if err := validateTarget(o.Target); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runHistory(c.Context(), o)
		},
	}
	o.addLockNamespaceFlag(c.Flags())
	addOutputFlag(c.Flags(), &o.Output, "json", "yaml")
	return c
}

func runHistory(ctx context.Context, o *historyOptions) error {
	locks, err := newLockClient(o.f, &o.lockFlags)
	if err != nil {
		return err
	}
	h, err := locks.History(ctx, o.Target)
	if err != nil {
		return err
	}
	if h.Holder == nil && len(h.Entries) == 0 {
		fmt.Fprintf(o.f.IOStreams.ErrOut, "lock %q has no history (%s)\n", o.Target, locks.Describe(o.Target))
		if o.Output == "" {
			return nil
		}
	}
	if o.Output != "" {
		return printObject(o.f.IOStreams.Out, o.Output, h)
	}
	printHistoryTable(o.f.IOStreams.Out, h, o.f.Clock.Now())
	return nil
}

// printHistoryTable prints the holds newest first, with times as ages.
func printHistoryTable(w io.Writer, h *lock.History, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "HOLDER\tPOD\tFROM\tUNTIL\tHELD\tENDED")
	ago := func(t time.Time) string { return term.HumanDuration(now.Sub(t)) + " ago" }
	if c := h.Holder; c != nil {
		fmt.Fprintf(tw, "%s\t%s\t%s\t-\t%s\tholding\n", c.Identity, podOf(c.Pod), ago(c.Since.Time), term.HumanDuration(now.Sub(c.Since.Time)))
	}
	for _, e := range h.Entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Identity, podOf(e.Pod), ago(e.Since.Time), ago(e.Until.Time),
			term.HumanDuration(e.Until.Sub(e.Since.Time)), describeEnding(e))
	}
	tw.Flush()
}

func podOf(p *lock.PodRef) string {
	if p == nil {
		return "-"
	}
	return p.String()
}

// describeEnding is how a hold ended, and whether it was taken in spite of
// a deploy freeze.
func describeEnding(e lock.HistoryEntry) string {
	if e.IgnoredFreeze != "" {
		return e.Describe() + " (took the lock in spite of a freeze, --ignore-freeze)"
	}
	return e.Describe()
}
