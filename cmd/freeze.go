package cmd

import (
	"context"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/lock/record"
)

// freezeOptions configure `lockctl freeze`.
type freezeOptions struct {
	f *Factory

	cli.LockFlags
	Target string
	cli.EndFlags
	Reason string
	Output string
}

func newFreezeCmd(f *Factory, runF func(*freezeOptions) error) *cobra.Command {
	o := &freezeOptions{f: f}
	c := &cobra.Command{
		Use:   "freeze NAMESPACE (--for DURATION | --until TIME) --reason TEXT",
		Short: "Stop deploys to a namespace for a while (a deploy freeze)",
		Long: cli.Doc(`
			Freeze the deploy lock of NAMESPACE until a time: while frozen,
			acquire and run wait (showing the freeze, its reason, who set it
			and until when) or give up at --timeout with exit status 4. A
			build holding the lock when the freeze starts keeps it and is not
			interrupted; once it releases, nobody takes the lock until the
			freeze ends or is lifted with unfreeze. In an emergency, acquire
			and run take a frozen lock with --ignore-freeze, and the freeze
			records who did.

			The freeze ends by itself at --until (RFC 3339, e.g.
			2026-12-24T08:00:00Z) or after --for. Freezing a frozen lock
			replaces the freeze. A frozen lock's record is version 2, which
			lockctl releases without freezes refuse with an error instead of
			ignoring the freeze.

			Recurring freezes (every night, Friday afternoons) are freeze
			windows of the lock namespace: lockctl freeze-windows add, list
			and remove them.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Freeze production over the release party
			lockctl freeze production --for 2h --reason "release 4.2 party"

			# Until a fixed time
			lockctl freeze production --until 2026-12-27T08:00:00Z --reason "holidays"

			# Lift it early
			lockctl unfreeze production
		`),
		Args: cli.ExactArgs(1),
		RunE: runE(o, runF, runFreeze, func(_ *cobra.Command, args []string) { o.Target = args[0] }),
	}
	fs := c.Flags()
	o.EndFlags.AddFlags(fs, "the freeze")
	fs.StringVar(&o.Reason, "reason", o.Reason, "why, shown to everyone who waits (required)")
	o.AddIdentityFlags(fs)
	o.AddLockNamespaceFlag(fs)
	o.AddContextsFlag(fs)
	cli.AddOutputFlag(fs, &o.Output, "json", "yaml")
	return c
}

func (o *freezeOptions) validate() error {
	if err := cli.ValidateTarget(o.Target); err != nil {
		return err
	}
	if err := o.EndFlags.Validate("the freeze"); err != nil {
		return err
	}
	if err := record.ValidateFreezeReason(o.Reason); err != nil {
		return cmdutil.FlagErrorf("invalid --reason: %v: say why the namespace is frozen", err)
	}
	return nil
}

func runFreeze(ctx context.Context, o *freezeOptions) error {
	holder, err := o.Identity(o.f)
	if err != nil {
		return err
	}
	sites, err := cli.NewSites(o.f, &o.LockFlags, cli.LockClientOptions{})
	if err != nil {
		return err
	}
	until, _ := o.End(o.f.Clock.Now()) // checked by validate
	return cli.FreezeAcross(ctx, o.f, sites, record.FreezeRequest{Target: o.Target, By: holder.Identity, Reason: o.Reason, Until: until}, o.Output)
}

// unfreezeOptions configure `lockctl unfreeze`.
type unfreezeOptions struct {
	f *Factory

	cli.LockFlags
	Target string
}

func newUnfreezeCmd(f *Factory, runF func(*unfreezeOptions) error) *cobra.Command {
	o := &unfreezeOptions{f: f}
	c := &cobra.Command{
		Use:   "unfreeze NAMESPACE",
		Short: "Lift a deploy freeze",
		Long: cli.Doc(`
			Lift the freeze of NAMESPACE's deploy lock: the first waiter takes
			the lock if nobody holds it. Like rm -f, unfreezing a lock that is
			not frozen succeeds with a message. A recurring freeze window cannot
			be lifted while it lasts (exit 1): remove it with lockctl
			freeze-windows remove NAME, or acquire with --ignore-freeze.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			lockctl unfreeze production
		`),
		Args: cli.ExactArgs(1),
		RunE: runE(o, runF, runUnfreeze, func(_ *cobra.Command, args []string) { o.Target = args[0] }),
	}
	o.AddLockNamespaceFlag(c.Flags())
	o.AddContextsFlag(c.Flags())
	return c
}

func (o *unfreezeOptions) validate() error { return cli.ValidateTarget(o.Target) }

func runUnfreeze(ctx context.Context, o *unfreezeOptions) error {
	sites, err := cli.NewSites(o.f, &o.LockFlags, cli.LockClientOptions{})
	if err != nil {
		return err
	}
	return cli.UnfreezeAcross(ctx, o.f, sites, o.Target)
}
