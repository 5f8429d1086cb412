package cmd

import (
	"context"
	"fmt"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/cmdutil"
	"github.com/lockctl/lockctl/internal/printers"
	"github.com/lockctl/lockctl/lock"
)

// historyOptions configure `lockctl history`.
type historyOptions struct {
	f *Factory

	cli.LockFlags
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
		`, lock.MaxHistory) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Who deployed to staging lately
			lockctl history staging

			# The same, for a script
			lockctl history staging -o json | jq -r '.entries[] | select(.ended == "broken") | .by'
		`),
		Args: cli.ExactArgs(1),
		RunE: runE(o, runF, runHistory, func(_ *cobra.Command, args []string) { o.Target = args[0] }),
	}
	o.AddLockNamespaceFlag(c.Flags())
	cli.AddOutputFlag(c.Flags(), &o.Output, "json", "yaml")
	return c
}

func (o *historyOptions) validate() error { return cli.ValidateTarget(o.Target) }

func runHistory(ctx context.Context, o *historyOptions) error {
	locks, err := cli.NewLockClient(o.f, &o.LockFlags)
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
		return printers.Object(o.f.IOStreams.Out, o.Output, h)
	}
	printers.HistoryTable(o.f.IOStreams.Out, h, o.f.Clock.Now())
	return nil
}
