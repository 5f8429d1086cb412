package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/lock"
)

// releaseOptions configure `lockctl release`.
type releaseOptions struct {
	f *Factory

	cli.LockFlags
	// Target is the first of Targets, the locks to release.
	Target  string
	Targets []string
	Force   bool
	Token   string
}

func newReleaseCmd(f *Factory, runF func(*releaseOptions) error) *cobra.Command {
	o := &releaseOptions{f: f}
	c := &cobra.Command{
		Use:   "release NAMESPACE [NAMESPACE...]",
		Short: "Give up the deploy lock of a namespace",
		Long: cli.Doc(`
			Release the deploy lock of NAMESPACE held by this build (the same
			owner, repo, branch and build as acquire used). The next waiter, if
			any, holds the lock at once; otherwise the lock is free, and kept
			for its history (lockctl history NAMESPACE).

			Like rm -f, releasing a lock that is not held, or already gone,
			succeeds with a message, so pipelines can release in a finally
			block. A build that only waits leaves the queue. A lock held by
			someone else is refused unless --force, which breaks it and says
			whose it was; --force also removes a lock whose record is corrupt.

			With --token, the lock is released if its holder's fencing token
			(the number acquire printed) is TOKEN, whatever the identity of
			the caller: a later step, another shell or another machine can
			release the hold it was handed. Another token is refused and
			nothing changes. In CI, a hold is its job's: another job of the
			same pipeline (a later stage's, a matrix sibling's) releases it
			only with --token; a re-run of the job releases it without.

			Several namespaces (locks taken together by acquire) are released
			together, the last in name order first; a failure on one does not
			stop the others, and is reported at the end.

			With --contexts the locks are released in the cluster of each
			context at once, --token being the composite token acquire
			printed. A cluster that cannot be reached does not keep the
			others held: its lock is named, and stays held until its expiry
			or until released again (exit 1).
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Release in a pipeline's finally block
			lockctl release staging

			# Release by the fencing token acquire printed, from anywhere
			lockctl release staging --token "$LOCKCTL_FENCING_TOKEN"

			# Break a lock left by a build that will never finish
			lockctl release staging --force

			# Release locks taken together
			lockctl release staging db-migrations
		`),
		Args: cli.MinArgs(1),
		RunE: runE(o, runF, runRelease, func(_ *cobra.Command, args []string) { o.Target, o.Targets = args[0], args }),
	}
	o.AddIdentityFlags(c.Flags())
	o.AddLockNamespaceFlag(c.Flags())
	o.AddContextsFlag(c.Flags())
	c.Flags().BoolVar(&o.Force, "force", o.Force, "release the lock whoever holds it, or delete a corrupt lock")
	c.Flags().StringVar(&o.Token, "token", o.Token, "release the lock if its holder's fencing token (printed by acquire) is this one, whatever the caller's identity")
	cli.MarkOverride(c.Flags(), "force", "token")
	return c
}

func (o *releaseOptions) validate() error {
	if err := cli.ValidateTargets(o.Targets); err != nil {
		return err
	}
	if o.Token != "" && len(o.Targets) > 1 {
		return cmdutil.FlagErrorf("--token names the hold of one lock: give one NAMESPACE")
	}
	if o.Token != "" && o.Force {
		return cmdutil.FlagErrorf("--token and --force exclude each other: --force releases whatever the token")
	}
	return nil
}

func runRelease(ctx context.Context, o *releaseOptions) error {
	r, err := o.Releaser(o.f, o.Force, o.Token)
	if err != nil {
		return err
	}
	sites, err := cli.NewSites(o.f, &o.LockFlags, cli.LockClientOptions{})
	if err != nil {
		return err
	}
	if sites.Across() {
		return cli.ReleaseAcross(ctx, o.f, sites, o.Targets, r, o.Force, o.Token)
	}
	locks := sites.Locks[0]
	ro := lock.ReleaseOptions{Force: o.Force, By: r.Breaker, Token: o.Token, Job: r.Job}
	if len(o.Targets) > 1 {
		all, err := locks.ReleaseAll(ctx, o.Targets, r.Identity, ro)
		printers.ReleasedAll(o.f.IOStreams.ErrOut, o.Targets, r.Identity, all, o.Token)
		return err
	}
	res, err := locks.Release(ctx, o.Target, r.Identity, ro)
	if err != nil {
		return fmt.Errorf("release lock %q: %w", o.Target, err)
	}
	printers.Released(o.f.IOStreams.ErrOut, o.Target, r.Identity, res, o.Token)
	return nil
}
