package cmd

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
)

func newRootCmd(f *Factory) *cobra.Command {
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

	// NOTE: one command a line, in the order of --help (cobra sorts it), so
	// that adding one is a one-line change.
	root.AddCommand(
		newAbortCmd(f, nil),
		newAcquireCmd(f, nil),
		newBreakGlassCmd(f, nil),
		newCompletionCmd(f),
		newDashboardCmd(f, nil),
		newEnforceCmd(f, nil),
		newFreezeCmd(f, nil),
		newFreezeWindowsCmd(f),
		newGetCmd(f),
		newHistoryCmd(f, nil),
		newLogsCmd(f, nil),
		newPruneCmd(f, nil),
		newReconcileCmd(f, nil),
		newReleaseCmd(f, nil),
		newRunCmd(f, nil),
		newStampCmd(f, nil),
		newStatusCmd(f, nil),
		newSubmitCmd(f, nil),
		newUnfreezeCmd(f, nil),
		newVersionCmd(f, nil),
		newWaitCmd(f, nil),
	)
	cli.ListOverrides(root)
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
