package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// breakGlassOptions configure `lockctl break-glass`.
type breakGlassOptions struct {
	f *Factory

	cli.LockFlags
	Target string
	For    time.Duration
	Reason string
	End    bool
}

func newBreakGlassCmd(f *Factory, runF func(*breakGlassOptions) error) *cobra.Command {
	o := &breakGlassOptions{f: f, For: 30 * time.Minute}
	c := &cobra.Command{
		Use:   "break-glass NAMESPACE --reason TEXT [--for DURATION]",
		Short: "Write an enforced namespace whatever its lock says, in the open",
		Long: cli.Doc(`
			Declare break-glass on NAMESPACE's enforced lock (lockctl
			enforce): the API server then admits your writes of NAMESPACE
			while someone else holds the lock or it is frozen, for --for at
			most, and until the lock changes hands or freeze. The grant is
			written beside the lock's record, with a BreakGlass Event on the
			lock, and status shows it; the audit log marks each write it
			admits. Declaring needs verb breakglass on locks.lockctl.dev
			NAMESPACE, granted with RBAC, and is for yourself only.
			--end ends it early.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Roll back production during someone else's deploy
			lockctl break-glass production --reason "roll back 4.2: checkout down" --for 15m
			kubectl -n production rollout undo deployment/web
			lockctl break-glass production --end
		`),
		Args: cli.ExactArgs(1),
		RunE: runE(o, runF, runBreakGlass, func(_ *cobra.Command, args []string) { o.Target = args[0] }),
	}
	fs := c.Flags()
	fs.DurationVar(&o.For, "for", o.For, "how long the grant lasts at most")
	fs.StringVar(&o.Reason, "reason", o.Reason, "why, shown on the lock and in its Event (required)")
	fs.BoolVar(&o.End, "end", o.End, "end your break-glass now")
	o.AddIdentityFlags(fs)
	o.AddLockNamespaceFlag(fs)
	return c
}

func (o *breakGlassOptions) validate() error {
	if err := cli.ValidateTarget(o.Target); err != nil {
		return err
	}
	if o.End {
		return nil
	}
	if o.For <= 0 {
		return cmdutil.FlagErrorf("--for must be positive, got %s", o.For)
	}
	if err := record.ValidateFreezeReason(o.Reason); err != nil {
		return cmdutil.FlagErrorf("invalid --reason: %v: say why the lock is overridden", err)
	}
	return nil
}

func runBreakGlass(ctx context.Context, o *breakGlassOptions) error {
	locks, err := cli.NewLockClient(o.f, &o.LockFlags, cli.LockClientOptions{})
	if err != nil {
		return err
	}
	cons := o.f.Console()
	if o.End {
		ended, err := locks.EndBreakGlass(ctx, o.Target)
		if err != nil {
			return fmt.Errorf("end break-glass on lock %q: %w", o.Target, err)
		}
		if !ended {
			cons.Statusf(term.StyleNone, nil, "lock %q has no break-glass", o.Target)
			return nil
		}
		cons.Statusf(term.StyleNone, nil, "lock %q: break-glass ended", o.Target)
		return nil
	}
	holder, err := o.Identity(o.f)
	if err != nil {
		return err
	}
	user := ""
	if who := cli.KubeUser(o.f); who != nil {
		user = who(ctx).Name
	}
	g, err := locks.GrantBreakGlass(ctx, lock.BreakGlassRequest{Target: o.Target, User: user, By: holder.Identity, Reason: o.Reason, For: o.For})
	if err != nil {
		return fmt.Errorf("break-glass on lock %q: %w", o.Target, err)
	}
	cons.Statusf(term.StyleNone, nil, "lock %q: %s (%s); lockctl break-glass %s --end ends it", o.Target, g.Description, locks.Describe(o.Target), o.Target)
	return nil
}
