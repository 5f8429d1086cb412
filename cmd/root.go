package cmd

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
)

// commands are the root's commands, one a line in the order of --help
// (cobra sorts it), so that adding one is a one-line change. None has an
// alias: args name a command by its name.
var commands = []struct {
	name string
	new  func(f *Factory) *cobra.Command
}{
	{"abort", func(f *Factory) *cobra.Command { return newAbortCmd(f, nil) }},
	{"acquire", func(f *Factory) *cobra.Command { return newAcquireCmd(f, nil) }},
	{"break-glass", func(f *Factory) *cobra.Command { return newBreakGlassCmd(f, nil) }},
	{"completion", newCompletionCmd},
	{"dashboard", func(f *Factory) *cobra.Command { return newDashboardCmd(f, nil) }},
	{"enforce", func(f *Factory) *cobra.Command { return newEnforceCmd(f, nil) }},
	{"freeze", func(f *Factory) *cobra.Command { return newFreezeCmd(f, nil) }},
	{"freeze-windows", newFreezeWindowsCmd},
	{"get", newGetCmd},
	{"history", func(f *Factory) *cobra.Command { return newHistoryCmd(f, nil) }},
	{"logs", func(f *Factory) *cobra.Command { return newLogsCmd(f, nil) }},
	{"prune", func(f *Factory) *cobra.Command { return newPruneCmd(f, nil) }},
	{"reconcile", func(f *Factory) *cobra.Command { return newReconcileCmd(f, nil) }},
	{"release", func(f *Factory) *cobra.Command { return newReleaseCmd(f, nil) }},
	{"run", func(f *Factory) *cobra.Command { return newRunCmd(f, nil) }},
	{"stamp", func(f *Factory) *cobra.Command { return newStampCmd(f, nil) }},
	{"stats", func(f *Factory) *cobra.Command { return newStatsCmd(f, nil) }},
	{"status", func(f *Factory) *cobra.Command { return newStatusCmd(f, nil) }},
	{"submit", func(f *Factory) *cobra.Command { return newSubmitCmd(f, nil) }},
	{"unfreeze", func(f *Factory) *cobra.Command { return newUnfreezeCmd(f, nil) }},
	{"version", func(f *Factory) *cobra.Command { return newVersionCmd(f, nil) }},
	{"wait", func(f *Factory) *cobra.Command { return newWaitCmd(f, nil) }},
}

// newRootCmd returns the root command with every command added: what the
// root's help, completion and the docs walk.
func newRootCmd(f *Factory) *cobra.Command {
	root := newBareRootCmd(f)
	for _, c := range commands {
		root.AddCommand(c.new(f))
	}
	cli.ListOverrides(root)
	return root
}

// newRootCmdFor returns the root Run executes args with. When args start
// with the name of one of the root's commands, the root gets that command
// alone (with its subcommands): what args run, their help, usage and flag
// errors are the same as in the whole tree, and the process builds one
// command's flags, help text and closures, not twenty (docs/adr/0100).
// Other args (no command, a flag first, help, a misspelt command) and
// completion, whose script names every command, get the whole tree.
//
// NOTE: the root's Long, whose list of overrides comes from every command
// (cli.ListOverrides), is left uncompleted then: only the root's help
// shows it, which args starting with a command never reach.
func newRootCmdFor(f *Factory, args []string) *cobra.Command {
	for _, c := range commands {
		if len(args) > 0 && args[0] == c.name && c.name != "completion" {
			root := newBareRootCmd(f)
			root.AddCommand(c.new(f))
			return root
		}
	}
	return newRootCmd(f)
}

// newBareRootCmd returns the root command with its flags and settings and
// no command added.
func newBareRootCmd(f *Factory) *cobra.Command {
	g := cli.NewGlobalFlags()
	root := &cobra.Command{
		Use:   "lockctl",
		Short: "Deploy safely to Kubernetes: namespace locks, job pods and their reconcile loop",
		Long: cli.Doc(`
			lockctl takes a per-namespace deploy lock, submits job pods and drives
			them to completion across the clusters named by kubeconfig contexts.
			All state lives in the cluster, so any number of lockctl processes can
			run at once.

			Every flag can also be set from the environment: --lock-namespace from
			LOCKCTL_LOCK_NAMESPACE, --context from LOCKCTL_CONTEXT; a flag on the
			command line wins. Overrides that break a lock's promises are taken
			only from the command line, never from the environment (a variable set
			for one is ignored with a warning): %s.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Hold the lock of namespace staging while a pipeline deploys to it
			lockctl acquire staging && ./deploy.sh; lockctl release staging

			# See who holds which lock and who waits
			lockctl status
		`),
		SilenceUsage:      true,
		SilenceErrors:     true,
		PersistentPreRunE: g.PreRun(f),
	}
	cli.NameRoot(root, f.Executable)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &cmdutil.FlagError{Err: cmdutil.PlainFlagError(err)}
	})
	root.SetIn(f.IOStreams.In)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)

	pf := root.PersistentFlags()
	f.ConfigFlags.AddFlags(pf)
	g.AddFlags(pf)
	return root
}

// runE is the RunE of a command with options o, as each runs: complete
// (nil: nothing to do) fills o from the command line's arguments, then
// o.validate() checks o when o has the method, and o goes to runF, the
// tests' hook, when set, else to run with the command's context.
func runE[O any](o O, runF func(O) error, run func(context.Context, O) error, complete func(c *cobra.Command, args []string)) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, args []string) error {
		if complete != nil {
			complete(c, args)
		}
		if v, ok := any(o).(interface{ validate() error }); ok {
			if err := v.validate(); err != nil {
				return err
			}
		}
		if runF != nil {
			return runF(o)
		}
		err := run(c.Context(), o)
		// NOTE: a --sort-by that finds nothing is known only once the
		// objects are read; it is still a flag error (exit 2).
		var sortErr *printers.SortByError
		if errors.As(err, &sortErr) {
			return cmdutil.FlagErrorf("%w", err)
		}
		return err
	}
}
