package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/cmd/internal/cli/term"
)

// statusOptions configure `lockctl status`.
type statusOptions struct {
	f *Factory

	cli.LockFlags
	Target        string
	AllNamespaces bool
	cli.WatchFlags
	printers.PrintFlags

	out *printers.OutputFlags // PrintFlags parsed
}

func newStatusCmd(f *Factory, runF func(*statusOptions) error) *cobra.Command {
	o := &statusOptions{f: f, PrintFlags: printers.PrintFlags{Forms: printers.Forms{Wide: true, Table: true}}}
	c := &cobra.Command{
		Use:   "status [NAMESPACE]",
		Short: "Show who holds each deploy lock and who waits",
		Long: cli.Doc(`
			Show the deploy locks in the lock namespace (with -A, in every
			namespace), or the lock of NAMESPACE: the holder, its fencing token,
			since when, whether it is still alive (its pod runs or its expiry is
			ahead) and the queue, in the order it is served, each waiter marked
			with its priority unless normal ("(high)", "(low, aged to normal)").

			EST. WAIT is how long a contender that joined the queue now would
			wait for its turn, estimated from the lock's last holds, the queue
			and the freezes ahead; "-" when the history is too short to say.
			-o wide adds what each estimate is made from (BASIS) and each
			waiter's own estimate.

			-o json and -o yaml print Lock objects; status.state is held,
			stale, free or invalid, status.token the holder's fencing token,
			status.estimatedWait and status.basis the estimate (each waiter
			has its own), and times are RFC 3339. The lock of NAMESPACE is
			printed even when it is free (state free, no holder). -o name,
			-o jsonpath=…, -o go-template=… and -o custom-columns=… work as in
			kubectl get; --sort-by orders the rows.

			-w prints the locks, then a row (or an object) for every change
			until interrupted or --timeout, as kubectl get -w does.

			No lock is not a failure: status says so on stderr and exits 0.
			A freeze windows ConfigMap with an entry that cannot be read is:
			status prints the locks (judged with the windows it can read),
			then exits 1 with an error naming the entry (lockctl
			freeze-windows list shows it, remove takes it away).
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Every lock, as a table
			lockctl status

			# The locks of every lock namespace
			lockctl status -A

			# One lock, as YAML
			lockctl status staging -o yaml

			# Who holds staging, and with which token (empty when free)
			lockctl status staging -o json | jq -r '.status.state, .status.token // ""'
			lockctl status staging -o jsonpath='{.status.state} {.status.token}{"\n"}'

			# How long until a deploy queued now gets production
			lockctl status production -o jsonpath='{.status.estimatedWait} ({.status.basis}){"\n"}'

			# Targets and holders only, oldest hold first
			lockctl status -o custom-columns=TARGET:.spec.target,HOLDER:.status.holder.owner --sort-by=.status.holder.since

			# Follow every lock as it changes hands
			lockctl status -w
		`),
		Args: cli.MaxArgs(1),
		RunE: runE(o, runF, runStatus, func(_ *cobra.Command, args []string) {
			if len(args) == 1 {
				o.Target = args[0]
			}
		}),
	}
	fs := c.Flags()
	o.AddLockNamespaceFlag(fs)
	o.AddContextsFlag(fs)
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "show the locks of every lock namespace (--lock-namespace is then ignored)")
	o.WatchFlags.AddFlags(fs, "the locks")
	o.PrintFlags.AddFlags(fs)
	return c
}

func (o *statusOptions) validate() error {
	var err error
	if o.out, err = cli.ValidateRead(&o.WatchFlags, &o.PrintFlags); err != nil || o.Target == "" {
		return err
	}
	if o.AllNamespaces {
		// NOTE: as kubectl: a lock is named within one lock namespace.
		return cmdutil.FlagErrorf("a lock cannot be shown by name across all namespaces: drop -A, or NAMESPACE to list every lock")
	}
	return cli.ValidateTarget(o.Target)
}

func runStatus(ctx context.Context, o *statusOptions) error {
	sites, err := cli.NewSites(o.f, &o.LockFlags, cli.LockClientOptions{AllNamespaces: o.AllNamespaces})
	// windowsErr is a freeze windows ConfigMap with broken entries: the
	// locks are shown with the windows that can be read, and status then
	// fails naming the broken ones.
	var windowsErr error
	if err == nil && !o.AllNamespaces {
		if windowsErr, err = cli.LoadWindowsToShowAcross(ctx, sites); windowsErr != nil && o.Watch {
			o.f.Console().Statusf(term.StyleNone, nil, "warning: %v", windowsErr)
		}
	}
	if err != nil {
		return err
	}
	err = o.show(ctx, sites)
	if err == nil && windowsErr != nil && !o.Watch {
		// NOTE: as kubectl get with some objects it cannot show: what it
		// can on stdout, then the error, exit 1.
		return windowsErr
	}
	return err
}

// show prints the locks (or the lock of o.Target), in every cluster of
// sites, then follows them with -w until ctx ends (interrupted) or
// --timeout passes, which ends -w without error.
func (o *statusOptions) show(ctx context.Context, sites cli.Sites) error {
	items, found, err := cli.LocksToShowAcross(ctx, o.f, sites, o.Target, o.AllNamespaces)
	if err != nil || (!found && o.Output == "" && !o.Watch) {
		return err
	}
	// NOTE: ages count on the clock the lock was stamped on, the API server's.
	p := printers.NewLockPrinter(o.f.IOStreams.Out, o.out, printers.Options{AllNamespaces: o.AllNamespaces, Contexts: sites.Across(), Clock: sites.Locks[0].Clock()})
	if o.Target != "" && !o.Watch && len(items) == 1 {
		// NOTE: as kubectl does, one name gives the object, not a List.
		return p.Print(items[0])
	}
	if err := p.PrintAll(items, !o.Watch && (o.Target == "" || len(items) > 1)); err != nil || !o.Watch {
		return err
	}
	return o.Until(ctx, func(ctx context.Context) error { return cli.WatchLocksAcross(ctx, sites, o.Target, items, p.Print) })
}
