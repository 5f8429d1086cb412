package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	watchtools "k8s.io/client-go/tools/watch"

	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/podwatch"
)

// defaultRunTTL is how long the lock of a `lockctl run` outlives the
// process when it stops renewing it: a killed terminal frees the lock
// within this.
const defaultRunTTL = 30 * time.Second

// cleanupTimeout bounds the work after an interrupt: aborting the job and
// releasing the lock.
const cleanupTimeout = 30 * time.Second

// runOptions configure `lockctl run`.
type runOptions struct {
	f *Factory
	// childErr is the local command's stderr: the process's own, even with
	// -q, which silences only lockctl's status lines.
	childErr io.Writer
	// logs opens the job pod's log streams; nil means through the API
	// server.
	logs podwatch.LogOpener

	lockFlags
	clusterFlags
	Target   string
	Filename string
	Command  []string
	TTL      time.Duration
	Timeout  time.Duration
	Policy   lock.Policy
	Progress string
	DryRun   bool
}

func newRunCmd(f *Factory, runF func(*runOptions) error) *cobra.Command {
	// NOTE: the command's stderr is captured now, before -q replaces
	// ErrOut with io.Discard.
	o := &runOptions{f: f, childErr: f.IOStreams.ErrOut, TTL: defaultRunTTL, Policy: lock.PolicyNewest, Progress: "auto"}
	c := &cobra.Command{
		Use:   "run --lock NAMESPACE (-f FILE | -- COMMAND [ARG...])",
		Short: "Lock a namespace, run a job or a command, follow it, release the lock",
		Long: heredoc.Doc(`
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

			The lock expires --ttl after run stops renewing it (every third of
			--ttl), so a killed terminal frees it within that. The job's pod is
			tied to this run's hold on the lock: once the hold of a run that died
			has expired, its pod is deleted by a running lockctl reconcile, or
			else by the next lockctl run (docs/2026-12-02-run-session.md).

			Ctrl-C (or SIGTERM) once aborts the job, which deletes its pod, or
			passes the signal to the command and waits for it; then the lock is
			released and run exits 130 (143). A second Ctrl-C exits at once and
			says what is left behind.

			Waiting for the lock shows the holder, how long it has held the lock
			and the queue position, then the pod's phase and the time elapsed: a
			live line on a terminal, timestamped lines elsewhere (--progress
			auto|tty|plain); colour only on a terminal and never with NO_COLOR.
			-q shows only the job's logs or the command's output, and errors.

			Exit status:
			  0  the job or the command succeeded
			  1  error (API, permissions), the lock was lost, or someone aborted the job
			  2  usage (bad flags, bad job or config file)
			  3  superseded: a newer build waits for or holds the lock, or a newer
			     run of the presubmit replaced the job
			  4  timed out waiting for the lock (--timeout), or the job's pod timed out
			  5  the job failed or ended in error
			  N  with -- COMMAND: the command's exit status (128+n when signal n ended it;
			     127 when it is not found)
			  130, 143  interrupted by SIGINT, SIGTERM
		`),
		Example: examples(`
			# Deploy from a terminal: lock staging, run the job, follow it, release
			lockctl run --lock staging -f deploy.yaml

			# The same for a local script; its exit status is lockctl's
			lockctl run --lock staging -- ./deploy.sh --env staging

			# Show the pod the job would create, touching nothing
			lockctl run --dry-run -f deploy.yaml
		`),
		Args: runArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) > 0 {
				o.Command = args
			}
			if err := o.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(o)
			}
			return runRun(c.Context(), o)
		},
	}
	fs := c.Flags()
	fs.StringVar(&o.Target, "lock", o.Target, "namespace whose deploy lock to hold (default for a job: its spec.lock.namespace)")
	fs.StringVarP(&o.Filename, "filename", "f", o.Filename, `job file, YAML or JSON; "-" reads stdin`)
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "print the pod the job would create and touch nothing")
	o.addIdentityFlags(fs)
	o.addLockNamespaceFlag(fs)
	fs.DurationVar(&o.TTL, "ttl", o.TTL, "how long the lock outlives run when run stops renewing it (a killed terminal)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up waiting for the lock after this long (exit 4); 0 waits forever")
	fs.Var(policyFlag{&o.Policy}, "policy", "who waits when the lock is created: newest (older builds of a branch give up) or fifo")
	fs.StringVar(&o.Progress, "progress", o.Progress, "progress display: auto, tty or plain")
	o.addClusterFlags(fs)
	return c
}

// runArgs accepts arguments only after "--": they are the command.
func runArgs(c *cobra.Command, args []string) error {
	switch dash := c.ArgsLenAtDash(); {
	case dash < 0 && len(args) > 0:
		return flagErrorf("unexpected argument %q: put the command after --, as in lockctl run --lock NAMESPACE -- %s", args[0], args[0])
	case dash > 0:
		return flagErrorf("unexpected argument %q before --", args[0])
	}
	return nil
}

func (o *runOptions) validate() error {
	switch {
	case o.Filename != "" && len(o.Command) > 0:
		return flagErrorf("give either -f FILE or -- COMMAND, not both")
	case o.Filename == "" && len(o.Command) == 0:
		return flagErrorf("nothing to run: give a job with -f FILE or a command after --")
	case o.DryRun && o.Filename == "":
		return flagErrorf("--dry-run needs -f FILE: it prints the job's pod")
	case o.Target == "" && len(o.Command) > 0:
		return flagErrorf("required flag --lock not set: name the namespace to lock")
	}
	if o.Target != "" {
		if err := validateTarget(o.Target); err != nil {
			return err
		}
	}
	if o.TTL <= 0 {
		return flagErrorf("--ttl must be positive, got %s", o.TTL)
	}
	if o.Timeout < 0 {
		return flagErrorf("--timeout must not be negative, got %s", o.Timeout)
	}
	switch o.Progress {
	case "auto", "tty", "plain":
	default:
		return flagErrorf("--progress must be auto, tty or plain, got %q", o.Progress)
	}
	return o.validateClusters()
}

func runRun(ctx context.Context, o *runOptions) error {
	if o.Filename != "" {
		return runJob(ctx, o)
	}
	return runCommand(ctx, o)
}

// liveProgress reports whether progress is a live line (a terminal).
func (o *runOptions) liveProgress() bool {
	switch o.Progress {
	case "tty":
		return true
	case "plain":
		return false
	}
	return o.f.IsTerminal()
}

// newDisplay returns the display of this run: colour only on a real
// terminal, and never with NO_COLOR.
func (o *runOptions) newDisplay() *runDisplay {
	live := o.liveProgress()
	color := live && o.f.IsTerminal() && o.f.Getenv("NO_COLOR") == ""
	return newRunDisplay(o.f.IOStreams.ErrOut, o.f.Clock, live, color)
}

// sweeperEnv returns the job environment in which a run of a local command
// looks for jobs left behind by earlier runs, or nil when there is none to
// use (no jobs or no build cluster configured): the command runs anyway.
func (o *runOptions) sweeperEnv() *jobEnv {
	env, err := func() (*jobEnv, error) {
		cfg, err := o.loadConfig()
		if err != nil {
			return nil, err
		}
		opts, err := cfg.Options()
		if err != nil {
			return nil, err
		}
		if o.PodNamespace != "" {
			opts.PodNamespace = o.PodNamespace
		}
		contexts, err := o.clusterContexts(cfg)
		if err != nil {
			return nil, err
		}
		return o.newJobEnv(opts, contexts)
	}()
	if err != nil {
		o.f.Log.WithError(err).Debug("not looking for jobs left behind by earlier runs")
		return nil
	}
	return env
}

// libraryLog is the logger handed to the scheduler (at least at level
// warn) and podwatch (error) inside run. Their info lines would repeat what
// the display shows, and podwatch's warnings repeat its events, so below
// -v 1 only what the display does not say appears.
func (o *runOptions) libraryLog(level logrus.Level) *logrus.Entry {
	if o.f.Verbosity >= 1 {
		return o.f.Log
	}
	l := logrus.New()
	l.SetOutput(o.f.Log.Logger.Out)
	l.SetFormatter(o.f.Log.Logger.Formatter)
	l.SetLevel(min(level, o.f.Log.Logger.GetLevel()))
	return logrus.NewEntry(l)
}

// runLock is the lock a run holds: taken with a short expiry that a
// goroutine renews every third of it until release.
type runLock struct {
	o      *runOptions
	d      *runDisplay
	locks  *lock.Client
	id     lock.Identity
	held   *lock.Held
	cancel context.CancelFunc
	wg     sync.WaitGroup
	// lost receives the error of the renewal that found the lock taken.
	lost chan error

	mu       sync.Mutex
	isLost   bool
	released bool
}

// acquireLock waits for the lock as acquire does, with its display, then
// starts renewing it.
func (o *runOptions) acquireLock(ctx context.Context, d *runDisplay) (*runLock, error) {
	locks, err := newLockClient(o.f, &o.lockFlags)
	if err != nil {
		return nil, err
	}
	id, err := o.identity(o.f)
	if err != nil {
		return nil, err
	}
	progress := newWaitProgress(o.f.IOStreams.ErrOut, o.f.Clock, o.liveProgress())
	req := lock.Request{
		Target: o.Target, Identity: id, Pod: o.pod(o.f), TTL: o.TTL, Policy: o.Policy,
		OnProgress: progress.update,
	}
	waitCtx, cancel := watchtools.ContextWithOptionalTimeout(ctx, o.Timeout)
	defer cancel()
	held, err := locks.Acquire(waitCtx, req)
	progress.finish()
	if err != nil {
		if ctx.Err() != nil {
			d.printf(styleWarn, "interrupted while waiting for lock %q; left the queue", o.Target)
		}
		return nil, fmt.Errorf("acquire lock %q: %w", o.Target, err)
	}
	d.printf(styleGood, "lock %q acquired by %s after %s (%s)", o.Target, id, humanDuration(held.Waited), locks.Describe(o.Target))
	renewCtx, stop := context.WithCancel(context.WithoutCancel(ctx))
	l := &runLock{o: o, d: d, locks: locks, id: id, held: held, cancel: stop, lost: make(chan error, 1)}
	l.wg.Go(func() { l.renew(renewCtx) })
	return l, nil
}

// session is the run session the lock stands for (annotationRunSession).
func (l *runLock) session() runSession {
	return runSession{LockNamespace: l.locks.Namespace(), Target: l.o.Target, Session: l.held.Session}
}

// renew pushes the lock's expiry every third of the TTL until ctx ends or
// the lock turns out to be someone else's.
func (l *runLock) renew(ctx context.Context) {
	every := l.o.TTL / 3
	t := l.o.f.Clock.NewTicker(every)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C():
		}
		err := l.locks.Renew(ctx, l.held, l.o.TTL)
		switch {
		case errors.Is(err, lock.ErrLost):
			l.mu.Lock()
			l.isLost = true
			l.mu.Unlock()
			l.lost <- err
			return
		case err != nil && ctx.Err() == nil:
			l.d.printf(styleWarn, "cannot renew lock %q, trying again in %s: %v", l.o.Target, humanDuration(every), err)
		}
	}
}

// release stops the renewal and gives the lock up, saying who holds it
// next. A lost lock is left alone: it is someone else's.
func (l *runLock) release(ctx context.Context) error {
	l.cancel()
	l.wg.Wait()
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.isLost || l.released {
		return nil
	}
	l.released = true
	rel, err := l.locks.Release(ctx, l.o.Target, l.id, lock.ReleaseOptions{})
	if err != nil {
		return fmt.Errorf("release lock %q: %w", l.o.Target, err)
	}
	l.d.printf(styleNone, "lock %q released", l.o.Target)
	if rel.HandedTo != nil {
		l.d.printf(styleNone, "lock %q now held by %s", l.o.Target, rel.HandedTo.Identity)
	}
	return nil
}

// cleanupContext is the context of the work after ctx ended: not
// cancelled with it, but bounded.
func cleanupContext(ctx context.Context) (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.WithoutCancel(ctx), cleanupTimeout)
}

func init() {
	extraCommands = append(extraCommands, func(f *Factory) *cobra.Command { return newRunCmd(f, nil) })
}
