package cmd

import (
	"context"
	"fmt"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/cli"
	"github.com/lockctl/lockctl/internal/cmdutil"
	"github.com/lockctl/lockctl/internal/printers"
	"github.com/lockctl/lockctl/lock"
)

// statusOptions configure `lockctl status`.
type statusOptions struct {
	f *Factory

	cli.LockFlags
	Target        string
	AllNamespaces bool
	Output        string
}

func newStatusCmd(f *Factory, runF func(*statusOptions) error) *cobra.Command {
	o := &statusOptions{f: f}
	c := &cobra.Command{
		Use:   "status [NAMESPACE]",
		Short: "Show who holds each deploy lock and who waits",
		Long: heredoc.Doc(`
			Show the deploy locks in the lock namespace (with -A, in every
			namespace), or the lock of NAMESPACE: the holder, its fencing token,
			since when, whether it is still alive (its pod runs or its expiry is
			ahead) and the queue, in the order it is served, each waiter marked
			with its priority unless normal ("(high)", "(low, aged to normal)").

			-o json and -o yaml print Lock objects; status.state is held,
			stale, free or invalid, status.token the holder's fencing token,
			and times are RFC 3339. The lock of NAMESPACE is printed even when
			it is free (state free, no holder).

			No lock is not a failure: status says so on stderr and exits 0.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Every lock, as a table
			lockctl status

			# The locks of every lock namespace
			lockctl status -A

			# One lock, as YAML
			lockctl status staging -o yaml

			# Who holds staging, and with which token (empty when free)
			lockctl status staging -o json | jq -r '.status.state, .status.token'
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
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "show the locks of every lock namespace (--lock-namespace is then ignored)")
	cli.AddOutputFlag(fs, &o.Output, "json", "yaml")
	return c
}

func (o *statusOptions) validate() error {
	if o.Target == "" {
		return nil
	}
	if o.AllNamespaces {
		// NOTE: as kubectl: a lock is named within one lock namespace.
		return cmdutil.FlagErrorf("a lock cannot be shown by name across all namespaces: drop -A, or NAMESPACE to list every lock")
	}
	return cli.ValidateTarget(o.Target)
}

func runStatus(ctx context.Context, o *statusOptions) error {
	var locks *lock.Client
	var err error
	if o.AllNamespaces {
		locks, err = o.f.LockClientIn(metav1.NamespaceAll)
	} else {
		locks, err = cli.NewFreezeAwareLockClient(ctx, o.f, &o.LockFlags)
	}
	if err != nil {
		return err
	}
	if o.Target != "" {
		l, err := locks.Get(ctx, o.Target)
		if err != nil {
			return err
		}
		if l == nil {
			free := locks.Free(o.Target)
			if f := free.Status.Freeze; f != nil {
				fmt.Fprintf(o.f.IOStreams.ErrOut, "lock %q is free; %s (%s)\n", o.Target, f.Describe(), locks.Describe(o.Target))
			} else {
				fmt.Fprintf(o.f.IOStreams.ErrOut, "lock %q is free (%s)\n", o.Target, locks.Describe(o.Target))
			}
			if o.Output == "" {
				return nil
			}
			l = &free
		}
		if o.Output != "" {
			return printers.Object(o.f.IOStreams.Out, o.Output, l)
		}
		printers.LockTable(o.f.IOStreams.Out, []lock.Lock{*l}, false, locks.Clock.Now())
		return nil
	}
	items, err := locks.List(ctx)
	if err != nil {
		return err
	}
	if len(items) == 0 {
		where := fmt.Sprintf("in namespace %q", locks.Namespace())
		if o.AllNamespaces {
			where = "in any namespace"
		}
		fmt.Fprintln(o.f.IOStreams.ErrOut, "no locks "+where)
		if o.Output == "" {
			return nil
		}
	}
	if o.Output != "" {
		return printers.Object(o.f.IOStreams.Out, o.Output, printers.ListOf(items))
	}
	// NOTE: ages count on the clock the lock was stamped on, the API server's.
	printers.LockTable(o.f.IOStreams.Out, items, o.AllNamespaces, locks.Clock.Now())
	return nil
}
