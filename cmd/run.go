package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/cmd/internal/cli/progress"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/podwatch"
	"github.com/lockctl/lockctl/run"
)

// defaultRunTTL is how long the lock of a `lockctl run` outlives the
// process when it stops renewing it: a killed terminal frees the lock
// within this.
const defaultRunTTL = 30 * time.Second

// runOptions configure `lockctl run`.
type runOptions struct {
	f *Factory
	// childErr is the local command's stderr: the process's own, even with
	// -q, which silences only lockctl's status lines.
	childErr io.Writer
	// logs opens the job pod's log streams; nil means through the API
	// server.
	logs podwatch.LogOpener

	cli.LockFlags
	cli.ClusterFlags
	// Target is the first of Targets, the locks to hold (--lock, repeated).
	Target   string
	Targets  []string
	Filename string
	Command  []string
	cli.ContenderFlags
	// KillGrace is how long a command stopped because the lock could not
	// be renewed gets between SIGTERM and SIGKILL; 0 means
	// run.DefaultKillGrace(TTL).
	KillGrace time.Duration
	// CancelInProgress asks an older run of this branch holding the lock
	// to stop (docs/adr/0026-cancel-in-progress.md).
	CancelInProgress bool
	DryRun           bool
}

func newRunCmd(f *Factory, runF func(*runOptions) error) *cobra.Command {
	// NOTE: the command's stderr is captured now, before -q replaces
	// ErrOut with io.Discard.
	o := &runOptions{f: f, childErr: f.IOStreams.ErrOut, ContenderFlags: cli.NewContenderFlags(defaultRunTTL)}
	o.PerProcess = true
	c := &cobra.Command{
		Use:   "run --lock NAMESPACE [--lock NAMESPACE...] (-f FILE | -- COMMAND [ARG...])",
		Short: "Lock a namespace, run a job or a command, follow it, release the lock",
		Long: cli.Doc(`
			Take the deploy lock of the --lock namespace (waiting as acquire does),
			run a job or a local command while holding it, then release it and
			exit with the job's or the command's status.

			With -f FILE (YAML or JSON, "-" for stdin) the job is submitted and
			driven to its end by this process, with the same code as lockctl
			reconcile restricted to this one job: it works with no reconcile loop
			running, and safely beside one. Pod phase changes and the pod's logs
			are shown as they come. A job with spec.lock is locked by run
			instead of its pod; --lock defaults to spec.lock.namespace.

			With -- COMMAND, the command runs here with stdin, stdout and stderr
			passed through.

			With several --lock flags run holds all those locks, all or nothing:
			taken one after the other in the order of their names (as acquire
			takes several), so that runs and acquires with overlapping sets never
			deadlock. Each is renewed while the job or the command runs; losing
			any of them stops it as losing the only one would. Each acquired
			line shows that lock's fencing token; all are released at the end.
			With --contexts the locks are held in the cluster of each
			kubeconfig context (a command only): each renewed on its own API
			server's clock, the command stopped before any of them can
			expire, $LOCKCTL_FENCING_TOKEN the composite token
			CONTEXT=TOKEN,... that lockctl stamp --context picks from
			(docs/clusters.md).

			A lock your build and CI job already hold (lockctl acquire in an
			earlier step) is re-entered, not taken: run renews it only so that it
			cannot expire under the job or the command, never shortening it, and
			leaves it held at the end ("still held by …") for the step that took
			it to release. Locks it took beside it are released.

			With --cancel-in-progress (GitHub Actions' cancel-in-progress), an
			older lockctl run of the same owner/repo/branch holding the lock is
			asked to stop: at its next renewal it sends its command SIGTERM or
			aborts its job, releases, and exits 3; this run holds the lock next.
			A holder that is not a run (lockctl acquire) is never interrupted,
			nor is a local build (a terminal), which has no build order.

			The lock expires --ttl after run stops renewing it (every third of
			--ttl), so a killed terminal frees it within that. A run that cannot
			renew it (the API server unreachable, a silent connection) gives up
			at the renew deadline, --ttl - --kill-grace - 1s (clock margin): the
			command gets SIGTERM, and SIGKILL --kill-grace later, so it has ended
			before the lock can expire and another holder take it; run then
			exits 1. A job's run stops following it and aborts it if the API
			server answers; if not, its pod runs on until a reconcile loop or
			the next run finds the hold expired (docs/partitions.md).

			The job's pod is tied to this run's hold on the lock: once the hold
			of a run that died has expired, its pod is deleted by a running
			lockctl reconcile, or else by the next lockctl run
			(docs/adr/0006-run-session.md).

			Ctrl-C (or SIGTERM) once aborts the job, which deletes its pod, or
			passes the signal to the command and waits for it; then the lock is
			released and run exits 130 (143). On a terminal a second one exits at
			once; elsewhere (a CI cancel) it kills the command and releases.

			Waiting for the lock shows the holder, how long it has held the lock
			and the queue position, then the pod's phase and the time elapsed: a
			live line on a terminal, timestamped lines elsewhere (--progress
			auto|tty|plain); colour only on a terminal and never with NO_COLOR.
			-q shows only the job's logs or the command's output, and errors.

			Exit status:
			  0  the job or the command succeeded
			  1  error (API, permissions), the lock was lost or could not be renewed
			     in time (the command was stopped), or someone aborted the job
			  2  usage (bad flags, bad job or config file)
			  3  superseded: a newer build waits for or holds the lock, asked this
			     run to stop (--cancel-in-progress), or a newer run of the presubmit
			     replaced the job
			  4  timed out waiting for the lock (--timeout), or the job's pod timed out
			  5  the job failed or ended in error
			  N  with -- COMMAND: the command's exit status (128+n when signal n ended it;
			     127 when it is not found)
			  130, 143  interrupted by SIGINT, SIGTERM
		`),
		Example: cli.Examples(`
			# Deploy from a terminal: lock staging, run the job, follow it, release
			lockctl run --lock staging -f deploy.yaml

			# A hotfix waits ahead of normal deploys
			lockctl run --lock production --priority high -- ./hotfix.sh

			# The same for a local script; its exit status is lockctl's
			lockctl run --lock staging -- ./deploy.sh --env staging

			# Hold two locks while migrating (all or nothing, in name order)
			lockctl run --lock staging --lock db-migrations -- ./migrate.sh

			# Deploy to three clusters under one hold
			lockctl run --lock production --contexts prod-us,prod-eu,prod-ap -- ./deploy-all.sh

			# CI: a newer build of the branch stops the older run still deploying
			lockctl run --lock staging --cancel-in-progress -f deploy.yaml

			# Show the pod the job would create, touching nothing
			lockctl run --dry-run -f deploy.yaml
		`),
		Args: runArgs,
		RunE: runE(o, runF, runRun, func(_ *cobra.Command, args []string) {
			if len(args) > 0 {
				o.Command = args
			}
			if len(o.Targets) > 0 {
				o.Target = o.Targets[0]
			}
		}),
	}
	fs := c.Flags()
	fs.StringArrayVar(&o.Targets, "lock", o.Targets, "namespace whose deploy lock to hold; repeat to hold several, all or nothing (default for a job: its spec.lock.namespace)")
	fs.StringVarP(&o.Filename, "filename", "f", o.Filename, `job file, YAML or JSON; "-" reads stdin`)
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "print the pod the job would create and touch nothing")
	o.AddIdentityFlags(fs)
	o.AddLockNamespaceFlag(fs)
	o.AddContextsFlag(fs)
	o.ContenderFlags.AddFlags(fs, cli.ContenderUsage{
		TTL:      "how long the lock outlives run when run stops renewing it (a killed terminal)",
		Timeout:  "give up waiting for the lock after this long (exit 4); 0 waits forever; auto: a budget from the lock's recent holds and your place in its queue",
		Progress: "progress display: auto, tty or plain",
	})
	fs.DurationVar(&o.KillGrace, "kill-grace", o.KillGrace, "how long a command stopped because the lock could not be renewed gets between SIGTERM and SIGKILL; 0 means a sixth of --ttl, at most 10s")
	fs.BoolVar(&o.CancelInProgress, "cancel-in-progress", o.CancelInProgress, "ask an older lockctl run of this owner/repo/branch holding the lock to stop (it exits 3); this run holds the lock next")
	o.AddClusterFlags(fs)
	return c
}

// runArgs accepts arguments only after "--": they are the command.
func runArgs(c *cobra.Command, args []string) error {
	switch dash := c.ArgsLenAtDash(); {
	case dash < 0 && len(args) > 0:
		return cmdutil.FlagErrorf("unexpected argument %q: put the command after --, as in lockctl run --lock NAMESPACE -- %s", args[0], args[0])
	case dash > 0:
		return cmdutil.FlagErrorf("unexpected argument %q before --", args[0])
	}
	return nil
}

func (o *runOptions) validate() error {
	switch {
	case o.Filename != "" && len(o.Command) > 0:
		return cmdutil.FlagErrorf("give either -f FILE or -- COMMAND, not both")
	case o.Filename == "" && len(o.Command) == 0:
		return cmdutil.FlagErrorf("nothing to run: give a job with -f FILE or a command after --")
	case o.DryRun && o.Filename == "":
		return cmdutil.FlagErrorf("--dry-run needs -f FILE: it prints the job's pod")
	case o.Target == "" && len(o.Command) > 0:
		return cmdutil.FlagErrorf("required flag --lock not set: name the namespace to lock")
	case o.Filename != "" && len(o.Contexts) > 0:
		return cmdutil.FlagErrorf("--contexts holds locks in several clusters while a command runs (-- COMMAND); a job (-f) runs in one cluster: name it with --context")
	}
	if len(o.Targets) > 0 {
		if err := cli.ValidateTargets(o.Targets); err != nil {
			return err
		}
	}
	if err := o.ContenderFlags.Validate(); err != nil {
		return err
	}
	if err := cli.ValidateKillGrace(o.TTL, o.KillGrace); err != nil {
		return err
	}
	return o.ValidateClusters()
}

func runRun(ctx context.Context, o *runOptions) error {
	if o.Filename != "" {
		return runJob(ctx, o)
	}
	return runCommand(ctx, o)
}

// runJob submits a job while holding the lock and drives it to its end in
// this process, following its pod.
func runJob(ctx context.Context, o *runOptions) error {
	j, err := cli.ReadJob(o.f.IOStreams.In, o.Filename)
	if err != nil {
		return err
	}
	if err := o.lockFromJob(j); err != nil {
		return err
	}
	opts, contexts, err := o.JobsConfig()
	if err != nil {
		return err
	}
	if _, err := cli.JobContext(contexts, j); err != nil {
		return err
	}
	if o.DryRun {
		return o.printPod(j, opts.PodNamespace)
	}
	if o.Target == "" {
		return cmdutil.FlagErrorf("required flag --lock not set: name the namespace to lock, or give the job a spec.lock")
	}
	jobs, err := o.RunJobs(o.f, opts, contexts, o.logs)
	if err != nil {
		return err
	}
	// Missing permissions are one error before the lock is taken or the
	// job written.
	if err := jobs.Preflight(ctx, j.ClusterAlias()); err != nil {
		return err
	}
	if j.Namespace != "" && j.Namespace != jobs.Namespace() {
		return &cmdutil.UsageError{Err: fmt.Errorf("the job's namespace %q does not match the namespace %q: pass -n %s", j.Namespace, jobs.Namespace(), j.Namespace)}
	}

	res, err := o.run(ctx, jobs, func(ro *run.Options) { ro.Job, ro.Out = j, o.f.IOStreams.Out })
	if errors.Is(err, job.ErrExists) {
		err = &cmdutil.UsageError{Err: fmt.Errorf("%w: give the job metadata.generateName for a new name on every run", err)}
	}
	if err == nil && res.Job != nil {
		// The observer said how the job ended; its outcome picks the exit
		// status.
		_, _, err = progress.JobOutcome(res.Job, 0)
	}
	return cmdutil.JoinRelease(cmdutil.UsageIfInvalid(err), res.ReleaseErr)
}

// runCommand holds the lock while a local command runs, and exits with the
// command's status.
func runCommand(ctx context.Context, o *runOptions) error {
	c, err := run.NewCommand(o.Command, run.CommandOptions{Stdin: o.f.IOStreams.In, Stdout: o.f.IOStreams.Out, Stderr: o.childErr})
	if err != nil {
		return err
	}
	res, err := o.run(ctx, o.Sweeper(o.f, o.logs), func(ro *run.Options) { ro.Command = c })
	return cmdutil.JoinRelease(err, res.ReleaseErr)
}

// run runs what set puts in the run.Options built from the flags, holding
// the locks as acquire waits for them, shown on the console; jobs (nil:
// none) are where jobs earlier runs left behind are looked for.
func (o *runOptions) run(ctx context.Context, jobs *run.Jobs, set func(*run.Options)) (run.Result, error) {
	d := o.f.SetProgress(o.Progress)
	defer d.SetStatus(nil)
	sites, err := cli.NewSites(o.f, &o.LockFlags, cli.LockClientOptions{})
	if err != nil {
		return run.Result{}, err
	}
	holder, err := o.Identity(o.f)
	if err != nil {
		return run.Result{}, err
	}
	// NOTE: "held for" and "waited" count on the clock the lock is stamped on.
	wait := progress.NewWait(o.f.Console(), progress.WaitOptions{Clock: sites.Locks[0].Clock()})
	ro := run.Options{
		Timeout: o.Timeout, KillGrace: o.KillGrace, Jobs: jobs, Again: cli.Again(ctx),
		Observer: &progress.Run{Console: d, Clock: o.f.Clock, Target: o.Target, TTL: o.TTL, Wait: wait},
		Across: sites.Parts(lock.Request{
			Identity: holder.Identity, Job: holder.Job, RunURL: holder.RunURL, Unordered: holder.Unordered, Pod: o.PodRef(o.f), TTL: o.TTL, Policy: o.Policy,
			Priority: o.Priority, IgnoreFreeze: o.IgnoreFreeze, Apps: o.Apps, Callbacks: lock.Callbacks{OnProgress: wait.Update},
			Cancelable: true, CancelInProgress: o.CancelInProgress,
		}, o.Targets),
	}
	set(&ro)
	if sites.Across() {
		// NOTE: a run across clusters runs a command: no job, none left behind to look for.
		ro.Jobs = nil
	}
	ro.Timeout = o.ResolveTimeout(ctx, o.f, ro.Across)
	return run.Run(ctx, ro)
}

// lockFromJob makes run hold the lock a job asks for (run.LockFromJob).
func (o *runOptions) lockFromJob(j *job.Job) error {
	targets, err := run.LockFromJob(j, o.Targets)
	if err != nil {
		return &cmdutil.UsageError{Err: err}
	}
	if len(targets) > 0 {
		o.Target, o.Targets = targets[0], targets
	}
	return nil
}

// printPod prints the pod run would create for j, touching nothing.
func (o *runOptions) printPod(j *job.Job, podNS string) error {
	ns, err := o.f.Namespace()
	if err != nil {
		// NOTE: a dry run needs no cluster, so no kubeconfig either.
		ns = metav1.NamespaceDefault
	}
	pod := run.DryRunPod(j, ns, podNS)
	fmt.Fprintf(o.f.IOStreams.Out, "# The pod of job %q as lockctl run would create it. Its name (with\n"+
		"# generateName), build ID (%s here) and job UID are given when the job is\n"+
		"# submitted and starts; run also adds the annotation %s.\n",
		j.DisplayName(), run.DryRunBuildID, run.AnnotationHoldRef)
	return printers.Object(o.f.IOStreams.Out, "yaml", pod)
}
