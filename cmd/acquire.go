package cmd

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/cmd/internal/cli/progress"
	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/internal/base/human"
	"github.com/lockctl/lockctl/lock"
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
	o := &acquireOptions{f: f, ContenderFlags: cli.NewContenderFlags(lock.DefaultTTL)}
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
		`),
		Args: cli.MinArgs(1),
		RunE: runE(o, runF, runAcquire, func(_ *cobra.Command, args []string) { o.Target, o.Targets = args[0], args }),
	}
	fs := c.Flags()
	o.AddIdentityFlags(fs)
	o.AddLockNamespaceFlag(fs)
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
	locks, err := cli.NewLockClient(o.f, &o.LockFlags, cli.LockClientOptions{})
	if err != nil {
		return err
	}
	o.f.SetProgress(o.Progress)
	// NOTE: "held for" and "waited" count on the clock the lock is stamped on.
	wait := progress.NewWait(o.f.Console(), progress.WaitOptions{Clock: o.f.LockClock()})
	reqs := lock.RequestsFor(lock.Request{
		Identity: id, Job: holder.Job, RunURL: holder.RunURL, LookupUser: cli.KubeUser(o.f), Unordered: holder.Unordered, Pod: o.PodRef(o.f), TTL: o.TTL, Policy: o.Policy,
		Priority: o.Priority, IgnoreFreeze: o.IgnoreFreeze, Apps: o.Apps, OnProgress: wait.Update, NoWait: o.NoWait,
	}, o.Targets)
	cmdCtx := ctx
	ctx, cancel := watchtools.ContextWithOptionalTimeout(ctx, o.ResolveTimeout(ctx, o.f, locks, reqs))
	defer cancel()
	// NOTE: one lock or several, all or nothing (lock.AcquireAll).
	all, err := locks.AcquireAll(ctx, reqs)
	if err == nil {
		// NOTE: a lock handed over is held before its hand-over is
		// confirmed; the hold outlives this process, so it is confirmed
		// first (each bounded by the waiter's expiry it stands on).
		err = cli.ConfirmAll(cmdCtx, locks, all)
	}
	wait.Finish()
	single := len(o.Targets) == 1
	if err != nil {
		interrupted := errors.Is(err, context.Canceled) && ctx.Err() != nil
		if single {
			if interrupted {
				// Main exits 128+signal without a message: say what became of
				// the place in the queue (Acquire gave it up).
				o.f.Console().Statusf(term.StyleWarn, logrus.Fields{"lock": o.Target, "holder": id.String()},
					"interrupted while waiting for lock %q; left the queue", o.Target)
			}
			return fmt.Errorf("acquire lock %q: %w", o.Target, err)
		}
		names := fmt.Sprintf("%q", o.Targets)
		if interrupted {
			o.f.Console().Statusf(term.StyleWarn, logrus.Fields{"holder": id.String()},
				"interrupted while waiting for locks %s; left the queue and gave back the locks taken", names)
		}
		return fmt.Errorf("acquire locks %s: %w", names, err)
	}
	for _, held := range all {
		// NOTE: the locks stay held when the command exits: what the
		// client keeps running for a hold ends, and the Events of the
		// acquisitions are written before it exits.
		defer held.WaitEvents(ctx)
		defer held.StopWatching()
	}
	var items []lock.LockView
	for _, held := range all {
		o.printAcquired(held, id, locks, single)
		switch {
		case o.Output == "" && single:
			fmt.Fprintln(o.f.IOStreams.Out, held.Token)
		case o.Output == "":
			fmt.Fprintf(o.f.IOStreams.Out, "%s %s\n", held.Target, held.Token)
		default:
			l, err := locks.Get(ctx, held.Target)
			if err != nil {
				return err
			}
			if single {
				return printers.Object(o.f.IOStreams.Out, o.Output, l)
			}
			if l != nil {
				items = append(items, *l)
			}
		}
	}
	if o.Output == "" {
		return nil
	}
	return printers.Object(o.f.IOStreams.Out, o.Output, printers.ListOf(items))
}

// printAcquired says on stderr that held was taken (or was already held),
// and warns when a freeze was ignored; with one lock, a re-entry says
// since when.
func (o *acquireOptions) printAcquired(held *lock.Held, id lock.Identity, locks *lock.Client, single bool) {
	fields := logrus.Fields{"lock": held.Target, "holder": id.String(), "token": held.Token}
	if f := held.IgnoredFreeze; f != nil {
		fmt.Fprintf(o.f.IOStreams.ErrOut, "warning: lock %q is %s; taken anyway (--ignore-freeze), and the freeze records it\n", held.Target, f.Describe())
	}
	switch {
	case held.Reentered && single:
		o.f.Console().Statusf(term.StyleNone, fields, "lock %q already held by %s since %s; nothing to do (%s)",
			held.Target, id, held.Holder.Since.UTC().Format(time.RFC3339), locks.Describe(held.Target))
	case held.Reentered:
		o.f.Console().Statusf(term.StyleNone, fields, "lock %q already held by %s; nothing to do (%s)", held.Target, id, locks.Describe(held.Target))
	default:
		o.f.Console().Statusf(term.StyleGood, fields, "lock %q acquired by %s after %s (%s)",
			held.Target, id, human.Duration(held.Waited), locks.Describe(held.Target))
	}
}
