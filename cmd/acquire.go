package cmd

import (
	"context"
	"errors"

	"github.com/spf13/cobra"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/progress"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// acquireOptions configure `lockctl acquire`.
type acquireOptions struct {
	f *Factory

	cli.LockFlags
	// Target is the first of Targets, the locks to take.
	Target  string
	Targets []string
	cli.ContenderFlags
	NoWait bool
	Output string
}

func newAcquireCmd(f *Factory, runF func(*acquireOptions) error) *cobra.Command {
	o := &acquireOptions{f: f, ContenderFlags: cli.NewContenderFlags(record.DefaultTTL)}
	c := &cobra.Command{
		Use:   "acquire NAMESPACE [NAMESPACE...]",
		Short: "Take the deploy lock of a namespace, waiting for it if needed",
		Long: cli.Doc(`
			Take the deploy lock of NAMESPACE. If another build holds it, wait in
			the queue until it is released, its pod ends or its expiry passes,
			showing who holds it and for how long.

			Among builds of the same owner/repo/branch only the newest waits: an
			older build gives up with exit status 3 ("superseded") when a newer
			one waits or holds the lock. With --policy fifo nobody is superseded.
			Outside CI, without --build, the build is this terminal session:
			acquire and release from one shell match, and such local claims are
			served first come, first served.

			--priority high puts a hotfix ahead of normal waiters (never ahead
			of the holder); --priority low lets everyone else go first. A
			waiter's priority rises one level for every 10 minutes it waits, so
			a low waiter is never passed for ever. Newest-wins applies among
			waiters of the same priority.

			While the lock is frozen (lockctl freeze), acquire waits showing
			the freeze, or gives up at --timeout with exit status 4;
			--ignore-freeze takes it anyway in an emergency, and the freeze
			records who did.

			When lockctl runs in a pod, the lock lives as long as that pod.
			Otherwise it expires after --ttl unless released first.

			On success the fencing token is printed on stdout: it grows with
			every new holder, so a deploy step can refuse to act on a lock it
			no longer holds. With -o json or -o yaml the Lock object is printed
			instead, as status prints it, with the token in status.token. Acquiring a lock your build already holds (same
			owner, repo, branch and build, and the same pod or none) returns at
			once with the token of that hold; another pod of the same build
			waits like anyone else.

			In CI the unit that holds is one job (docs/ci-identity.md): another
			job of the same pipeline (a matrix sibling, a parallel job) waits,
			a retried step of the job returns at once, and a re-run of the job
			(GitHub's next run attempt, GitLab's retry) takes over its hold
			with a new token. Newest-wins compares builds of one sequence only
			(on GitHub, runs of one workflow).

			With --no-wait, acquire tries once: if the lock is held it says by
			whom and exits 4 without joining the queue or changing anything.

			Several namespaces are locked all or nothing, one after the other
			in the order of their names whatever the order given (so that
			contenders for overlapping sets never deadlock), holding the
			earlier locks while waiting for the later ones; the waiting line
			names the lock waited for. If one cannot be taken, those taken are
			released again. Each lock has its own fencing token: stdout has
			one "NAMESPACE TOKEN" line per lock. Release them together with
			lockctl release NAMESPACE [NAMESPACE...].

			With --contexts the locks are taken in the cluster of each
			kubeconfig context, one hold, all or nothing, in one order
			(context, then namespace); each cluster keeps its own lock and
			token, and stdout has the composite token CONTEXT=TOKEN,... (one
			line per namespace with several) that release --token and stamp
			take. A cluster that does not answer is waited for, named on the
			waiting line, until --timeout (exit 4); the locks taken are then
			given back (docs/clusters.md).
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# In a pipeline: lock, deploy, release even when the deploy fails
			lockctl acquire staging --timeout 30m && ./deploy.sh; lockctl release staging

			# Identity from flags instead of the CI environment
			lockctl acquire staging --owner acme --repo web --branch main --build 42

			# A hotfix goes ahead of the normal deploys waiting
			lockctl acquire production --priority high --timeout 1h && ./hotfix.sh; lockctl release production

			# Keep the token for the deploy step, and release by it later
			LOCKCTL_FENCING_TOKEN=$(lockctl acquire staging)
			lockctl release staging --token "$LOCKCTL_FENCING_TOKEN"

			# The lock as JSON, token included
			lockctl acquire staging -o json | jq -r .status.token

			# Deploy only if nobody holds the lock now
			lockctl acquire staging --no-wait && ./deploy.sh; lockctl release staging

			# Two locks, all or nothing, released together
			lockctl acquire staging db-migrations --timeout 30m && ./migrate-and-deploy.sh; lockctl release staging db-migrations

			# One hold in three clusters, released together
			lockctl acquire production --contexts prod-us,prod-eu,prod-ap --timeout 30m && ./deploy-all.sh; lockctl release production --contexts prod-us,prod-eu,prod-ap
		`),
		Args: cli.MinArgs(1),
		RunE: runE(o, runF, runAcquire, func(_ *cobra.Command, args []string) { o.Target, o.Targets = args[0], args }),
	}
	fs := c.Flags()
	o.AddIdentityFlags(fs)
	o.AddLockNamespaceFlag(fs)
	o.AddContextsFlag(fs)
	o.ContenderFlags.AddFlags(fs, cli.ContenderUsage{
		TTL:      "how long the lock lasts when the holder runs outside a pod",
		Timeout:  "give up waiting after this long (exit 4); 0 waits forever; auto: a budget from the lock's recent holds and your place in its queue",
		Progress: "progress display while waiting: auto, tty or plain",
	})
	fs.BoolVar(&o.NoWait, "no-wait", o.NoWait, "try once: if the lock is held, say by whom and exit 4 without queueing")
	cli.AddOutputFlag(fs, &o.Output, "json", "yaml")
	return c
}

func (o *acquireOptions) validate() error {
	if err := cli.ValidateTargets(o.Targets); err != nil {
		return err
	}
	if err := o.ContenderFlags.Validate(); err != nil {
		return err
	}
	if o.NoWait && (o.Timeout != 0 || o.TimeoutAuto) {
		return cmdutil.FlagErrorf("--no-wait and --timeout exclude each other: --no-wait does not wait at all")
	}
	return nil
}

func runAcquire(ctx context.Context, o *acquireOptions) error {
	holder, err := o.Identity(o.f)
	if err != nil {
		return err
	}
	id := holder.Identity
	sites, err := cli.NewSites(o.f, &o.LockFlags, cli.LockClientOptions{})
	if err != nil {
		return err
	}
	o.f.SetProgress(o.Progress)
	// NOTE: "held for" and "waited" count on the clock the lock is stamped on.
	wait := progress.NewWait(o.f.Console(), progress.WaitOptions{Clock: sites.Locks[0].Clock()})
	parts := sites.Parts(lock.Request{
		Identity: id, Job: holder.Job, RunURL: holder.RunURL, Unordered: holder.Unordered, Pod: o.PodRef(o.f), TTL: o.TTL, Policy: o.Policy,
		Priority: o.Priority, IgnoreFreeze: o.IgnoreFreeze, Apps: o.Apps, Callbacks: lock.Callbacks{OnProgress: wait.Update}, NoWait: o.NoWait,
	}, o.Targets)
	cmdCtx := ctx
	ctx, cancel := watchtools.ContextWithOptionalTimeout(ctx, o.ResolveTimeout(ctx, o.f, parts))
	defer cancel()
	// NOTE: one lock or several, in one cluster or several, all or nothing.
	all, err := cli.AcquireConfirmed(ctx, cmdCtx, sites, parts)
	wait.Finish()
	if err != nil {
		return cli.AcquireFailed(o.f, err, errors.Is(err, context.Canceled) && ctx.Err() != nil, id, o.Targets, sites)
	}
	for _, held := range all {
		// NOTE: the locks stay held when the command exits: what the
		// client keeps running for a hold ends, and the Events of the
		// acquisitions are written before it exits.
		defer held.WaitEvents(ctx)
		defer held.StopWatching()
	}
	return cli.PrintAcquired(ctx, o.f, sites, all, id, o.Targets, o.Output)
}
