package cmd

import (
	"context"
	"strings"

	"github.com/MakeNowJust/heredoc"
	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/cmdutil"
)

// envPrefix prefixes the environment variables that set flags:
// LOCKCTL_LOCK_NAMESPACE sets --lock-namespace.
const envPrefix = "LOCKCTL_"

// kubectlPluginPrefix starts the name of a kubectl plugin's executable.
const kubectlPluginPrefix = "kubectl-"

// globalOptions are the flags every command shares.
type globalOptions struct {
	Verbosity int
	Quiet     bool
}

func newRootCmd(f *Factory) *cobra.Command {
	g := &globalOptions{}
	root := &cobra.Command{
		Use:   "lockctl",
		Short: "Deploy safely to Kubernetes: namespace locks, job pods and their reconcile loop",
		Long: heredoc.Doc(`
			lockctl takes a per-namespace deploy lock, submits job pods and drives
			them to completion across the clusters named by kubeconfig contexts.
			All state lives in the cluster, so any number of lockctl processes can
			run at once.

			Every flag can also be set from the environment: --lock-namespace from
			LOCKCTL_LOCK_NAMESPACE, --context from LOCKCTL_CONTEXT; a flag on the
			command line wins.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Hold the lock of namespace staging while a pipeline deploys to it
			lockctl acquire staging && ./deploy.sh; lockctl release staging

			# See who holds which lock and who waits
			lockctl status
		`),
		SilenceUsage:  true,
		SilenceErrors: true,
		PersistentPreRunE: func(c *cobra.Command, args []string) error {
			if err := flagsFromEnv(c.Flags(), f.Getenv); err != nil {
				return err
			}
			setupLogging(f, g)
			return nil
		},
	}
	if strings.HasPrefix(f.Executable, kubectlPluginPrefix) {
		// NOTE: kubectl runs kubectl-lockctl for `kubectl lockctl`; usage
		// lines and hints then name the command the user typed.
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl " + strings.TrimPrefix(f.Executable, kubectlPluginPrefix)}
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error {
		return &cmdutil.FlagError{Err: cmdutil.PlainFlagError(err)}
	})
	root.SetIn(f.IOStreams.In)
	root.SetOut(f.IOStreams.Out)
	root.SetErr(f.IOStreams.ErrOut)

	pf := root.PersistentFlags()
	f.ConfigFlags.AddFlags(pf)
	pf.IntVarP(&g.Verbosity, "verbosity", "v", g.Verbosity, "log detail: 0 status, 1 debug, 2 detail, 3+ trace")
	pf.BoolVarP(&g.Quiet, "quiet", "q", g.Quiet, "print nothing but results and errors")

	// NOTE: one command a line, in the order of --help (cobra sorts it), so
	// that adding one is a one-line change.
	root.AddCommand(
		newAbortCmd(f, nil),
		newAcquireCmd(f, nil),
		newCompletionCmd(f),
		newFreezeCmd(f, nil),
		newGetCmd(f),
		newHistoryCmd(f, nil),
		newLogsCmd(f, nil),
		newPruneCmd(f, nil),
		newReconcileCmd(f, nil),
		newReleaseCmd(f, nil),
		newRunCmd(f, nil),
		newStatusCmd(f, nil),
		newSubmitCmd(f, nil),
		newUnfreezeCmd(f, nil),
		newVersionCmd(f, nil),
		newWaitCmd(f, nil),
	)
	registerCompletions(root, f)
	return root
}

// setupLogging maps -v and -q onto the logger and the status stream, and
// sends both through the console, so status lines, log entries and the
// live line share one form on stderr.
func setupLogging(f *Factory, g *globalOptions) {
	f.Verbosity = g.Verbosity
	c := f.Console()
	c.SetQuiet(g.Quiet)
	f.IOStreams.ErrOut = c.StatusWriter()
	f.Log.Logger.SetOutput(c.LogWriter())
	f.Log.Logger.SetFormatter(c.LogFormatter())
	level := logrus.InfoLevel
	switch {
	case g.Quiet:
		level = logrus.WarnLevel
	case g.Verbosity == 1:
		level = logrus.DebugLevel
	case g.Verbosity >= 2:
		level = logrus.TraceLevel
	case f.Getenv("JX_LOG_LEVEL") != "":
		return // jx-logging already applied it
	}
	f.Log.Logger.SetLevel(level)
}

// flagsFromEnv sets every flag not given on the command line from its
// LOCKCTL_* environment variable.
func flagsFromEnv(fs *pflag.FlagSet, getenv func(string) string) error {
	var err error
	fs.VisitAll(func(fl *pflag.Flag) {
		if err != nil || fl.Changed {
			return
		}
		name := envPrefix + strings.ToUpper(strings.ReplaceAll(fl.Name, "-", "_"))
		v := getenv(name)
		if v == "" {
			return
		}
		if serr := fs.Set(fl.Name, v); serr != nil {
			err = cmdutil.FlagErrorf("invalid value %q in %s for --%s: %v", v, name, fl.Name, serr)
		}
	})
	return err
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
		return run(c.Context(), o)
	}
}
