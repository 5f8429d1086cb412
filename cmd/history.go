package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/lock/record"
)

// historyOptions configure `lockctl history`.
type historyOptions struct {
	f *Factory

	cli.LockFlags
	Target string
	cli.WatchFlags
	printers.PrintFlags

	out *printers.OutputFlags // PrintFlags parsed
}

func newHistoryCmd(f *Factory, runF func(*historyOptions) error) *cobra.Command {
	o := &historyOptions{f: f, PrintFlags: printers.PrintFlags{Forms: printers.Forms{Table: true}}}
	c := &cobra.Command{
		Use:   "history NAMESPACE",
		Short: "Show the last holders of a deploy lock and how each hold ended",
		Long: fmt.Sprintf(cli.Doc(`
			Show the last holders of the deploy lock of NAMESPACE, newest
			first: who held it, from when until when, and how the hold ended
			(released, handed over to the next waiter, broken with --force by
			whom, expired, or lost with its pod or node). The current holder,
			if any, comes first.

			The lock record keeps the last %d holds, so the history outlives
			the lock's Events, which the API server keeps for an hour. A
			released lock is kept, free, for its history; a lock whose holder
			pod is deleted is garbage-collected with it.

			-o json and -o yaml print a LockHistory object; -o name,
			-o jsonpath=…, -o go-template=… work as in kubectl get.
			-o custom-columns=… and --sort-by take each hold's fields (owner,
			repo, branch, build, since, until, ended, by, reason).

			-w prints the history, then a row (or an object) for every change
			(a new holder, a hold that ended) until interrupted or --timeout.

			Reading changes nothing. A lock never taken has no history: history
			says so on stderr and exits 0.
		`), record.MaxHistory) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Who deployed to staging lately
			lockctl history staging

			# The same, for a script
			lockctl history staging -o json | jq -r '.entries[] | select(.ended == "broken") | .by'

			# Every hold as a table of your columns, oldest first
			lockctl history staging -o custom-columns=BUILD:.build,FROM:.since,UNTIL:.until --sort-by=.since

			# Follow who takes production
			lockctl history production -w
		`),
		Args: cli.ExactArgs(1),
		RunE: runE(o, runF, runHistory, func(_ *cobra.Command, args []string) { o.Target = args[0] }),
	}
	fs := c.Flags()
	o.AddLockNamespaceFlag(fs)
	o.AddContextsFlag(fs)
	o.WatchFlags.AddFlags(fs, "the history")
	o.PrintFlags.AddFlags(fs)
	return c
}

func (o *historyOptions) validate() error {
	var err error
	if o.out, err = cli.ValidateRead(&o.WatchFlags, &o.PrintFlags); err != nil {
		return err
	}
	if o.Watch && len(o.Contexts) > 0 {
		return cmdutil.FlagErrorf("-w follows the history of one cluster: drop --contexts, or -w")
	}
	return cli.ValidateTarget(o.Target)
}

func runHistory(ctx context.Context, o *historyOptions) error {
	sites, err := cli.NewSites(o.f, &o.LockFlags, cli.LockClientOptions{})
	if err != nil {
		return err
	}
	if sites.Across() {
		return cli.HistoryAcross(ctx, o.f, sites, o.Target, o.out)
	}
	locks := sites.Locks[0]
	h, err := locks.History(ctx, o.Target)
	if err != nil {
		return err
	}
	if h.Holder == nil && len(h.Entries) == 0 {
		o.f.Console().Statusf(term.StyleNone, nil, "lock %q has no history (%s)", o.Target, locks.Describe(o.Target))
		if o.Output == "" && !o.Watch {
			return nil
		}
	}
	p := printers.NewHistoryPrinter(o.f.IOStreams.Out, o.out, printers.Options{Clock: o.f.Clock})
	if err := p.PrintAll(h, !o.Watch); err != nil || !o.Watch {
		return err
	}
	return o.Until(ctx, func(ctx context.Context) error { return locks.WatchHistory(ctx, o.Target, p.Print) })
}
