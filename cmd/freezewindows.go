package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
)

// freezeWindowsAddOptions configure `lockctl freeze-windows add`.
type freezeWindowsAddOptions struct {
	f *Factory

	cli.LockFlags
	Name string
	cli.WindowFlags
}

// freezeWindowsListOptions configure `lockctl freeze-windows list`.
type freezeWindowsListOptions struct {
	f *Factory

	cli.LockFlags
	Output string
}

// freezeWindowsRemoveOptions configure `lockctl freeze-windows remove`.
type freezeWindowsRemoveOptions struct {
	f *Factory

	cli.LockFlags
	Name string
}

func newFreezeWindowsCmd(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "freeze-windows",
		Short: "Add, list and remove recurring freeze windows",
		Long: cli.Doc(`
			Recurring deploy freezes (every night, Friday afternoons) of the
			lock namespace: from every time a window's cron schedule fires,
			for its duration, the locks of its targets (every lock of the
			namespace when it names none) are frozen as lockctl freeze
			freezes them, with the window's reason. unfreeze cannot lift a
			window; remove it here.

			The windows live in the ConfigMap lockctl-freeze-windows of the
			lock namespace, key windows.yaml. add checks a window before it
			writes it; an entry written there by hand that cannot be read
			makes every acquire and release of the namespace refuse (exit 1)
			until it is fixed, and status and list name it.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# No deploys to production at night
			lockctl freeze-windows add nightly --schedule "0 22 * * *" --duration 8h \
			  --reason "nightly maintenance" --target production

			# What is configured, and what is broken
			lockctl freeze-windows list

			# Drop a window (broken or not)
			lockctl freeze-windows remove nightly
		`),
		Args: cli.NoArgs(),
		RunE: func(c *cobra.Command, _ []string) error {
			return cmdutil.FlagErrorf("name what to do: add, list or remove")
		},
	}
	c.AddCommand(newFreezeWindowsAddCmd(f, nil), newFreezeWindowsListCmd(f, nil), newFreezeWindowsRemoveCmd(f, nil))
	return c
}

func newFreezeWindowsAddCmd(f *Factory, runF func(*freezeWindowsAddOptions) error) *cobra.Command {
	o := &freezeWindowsAddOptions{f: f}
	c := &cobra.Command{
		Use:   "add NAME --schedule CRON --duration DURATION --reason TEXT [--target NAMESPACE]...",
		Short: "Add a recurring freeze window",
		Long: cli.Doc(`
			Add the window NAME to the lock namespace: from every time --schedule
			fires (five-field cron, UTC unless it starts with CRON_TZ=<zone>; or
			@daily...), for --duration, the locks of the --target namespaces (of
			every lock without --target) are frozen with --reason. Each target
			must be a namespace name; a schedule that never fires within a year,
			or freezes all of the time, needs --force. The write is a
			compare-and-swap on the ConfigMap, so concurrent edits are not lost.
			A name already there is an error: remove it first to change it.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Friday afternoons, every lock of the namespace
			lockctl freeze-windows add friday --schedule "0 14 * * FRI" --duration 10h --reason "no deploys on Friday afternoon"

			# Nights in Berlin time, production only
			lockctl freeze-windows add nightly --schedule "CRON_TZ=Europe/Berlin 0 22 * * *" --duration 8h \
			  --reason "nightly maintenance" --target production
		`),
		Args: cli.ExactArgs(1),
		RunE: runE(o, runF, runFreezeWindowsAdd, func(_ *cobra.Command, args []string) { o.Name = args[0] }),
	}
	o.WindowFlags.AddFlags(c.Flags())
	o.AddLockNamespaceFlag(c.Flags())
	return c
}

func (o *freezeWindowsAddOptions) validate() error { return o.Validate(o.Name, o.f.Clock.Now()) }

func runFreezeWindowsAdd(ctx context.Context, o *freezeWindowsAddOptions) error {
	return o.Add(ctx, o.f, &o.LockFlags, o.Name)
}

func newFreezeWindowsListCmd(f *Factory, runF func(*freezeWindowsListOptions) error) *cobra.Command {
	o := &freezeWindowsListOptions{f: f}
	c := &cobra.Command{
		Use:     "list",
		Aliases: []string{"ls"},
		Short:   "List the freeze windows, broken entries included",
		Long: cli.Doc(`
			List the freeze windows of the lock namespace: name, schedule,
			duration, targets, the freeze in force or the next one, and the
			reason. An entry that cannot be read is listed as invalid, with
			the field, the value and why; list still exits 0, and warns that
			acquire and release refuse the namespace's locks until it is
			fixed. -o json and -o yaml print a List of the entries.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			lockctl freeze-windows list
			lockctl freeze-windows list -o json | jq -r '.items[] | select(.invalid) | .invalid'
		`),
		Args: cli.NoArgs(),
		RunE: runE(o, runF, runFreezeWindowsList, nil),
	}
	fs := c.Flags()
	cli.AddOutputFlag(fs, &o.Output, "json", "yaml")
	o.AddLockNamespaceFlag(fs)
	return c
}

func runFreezeWindowsList(ctx context.Context, o *freezeWindowsListOptions) error {
	return cli.ListFreezeWindows(ctx, o.f, &o.LockFlags, o.Output)
}

func newFreezeWindowsRemoveCmd(f *Factory, runF func(*freezeWindowsRemoveOptions) error) *cobra.Command {
	o := &freezeWindowsRemoveOptions{f: f}
	c := &cobra.Command{
		Use:     "remove NAME",
		Aliases: []string{"rm"},
		Short:   "Remove a freeze window",
		Long: cli.Doc(`
			Remove the freeze window NAME from the lock namespace, broken or
			not; the others stay as they are. A freeze the window made ends
			with the next write to each lock. No window of that name is an
			error (exit 1). The write is a compare-and-swap on the ConfigMap.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			lockctl freeze-windows remove nightly
		`),
		Args: cli.ExactArgs(1),
		RunE: runE(o, runF, runFreezeWindowsRemove, func(_ *cobra.Command, args []string) { o.Name = args[0] }),
	}
	o.AddLockNamespaceFlag(c.Flags())
	return c
}

func runFreezeWindowsRemove(ctx context.Context, o *freezeWindowsRemoveOptions) error {
	return cli.RemoveFreezeWindow(ctx, o.f, &o.LockFlags, o.Name)
}
