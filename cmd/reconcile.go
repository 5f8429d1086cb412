package cmd

import (
	"cmp"
	"context"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/events"
	"github.com/lockctl/lockctl/scheduler"
)

// Defaults of --kube-api-qps and --kube-api-burst: the client-side rate
// limit of lockctl reconcile. The loop's concurrency is bounded by its
// workers, and API Priority and Fairness (on by default since Kubernetes
// 1.20, GA in 1.29) shares the server between clients, so the client-side
// limit only guards against a runaway loop; a low one would make the client
// itself the bottleneck (docs/adr/0008-reconcile-client-rate-limit.md).
const (
	DefaultKubeAPIQPS   = 500
	DefaultKubeAPIBurst = 1000
)

// reconcileOptions configure `lockctl reconcile`.
type reconcileOptions struct {
	f *Factory

	cli.ClusterFlags
	cli.LockFlags
	cli.RetentionFlags
	cli.LoopFlags
	cli.NotifyFlags
	Once             bool
	DryRun           bool
	MetricsAddr      string
	DashboardAddress string
	Job              string
	KubeAPIQPS       float32
	KubeAPIBurst     int
	JobEvents        events.JobEvents

	// dashboardListening, when set, is told the dashboard's URL (tests).
	dashboardListening func(url string)
	// changed reports whether a flag was given, so it overrides --config.
	changed func(name string) bool
}

func newReconcileCmd(f *Factory, runF func(*reconcileOptions) error) *cobra.Command {
	o := &reconcileOptions{
		f:            f,
		LoopFlags:    cli.NewLoopFlags(),
		NotifyFlags:  cli.NewNotifyFlags(),
		KubeAPIQPS:   DefaultKubeAPIQPS,
		KubeAPIBurst: DefaultKubeAPIBurst,
		JobEvents:    events.JobEventsAll,
		RetentionFlags: cli.RetentionFlags{
			JobRetention: scheduler.DefaultJobRetention,
			PodRetention: scheduler.DefaultPodRetention,
		},
	}
	c := &cobra.Command{
		Use:   "reconcile",
		Short: "Run the loop that starts job pods and drives jobs to a final state",
		Long: cli.Doc(`
			Drive every job of the job namespace (-n, in --context) through its
			life: supersede older runs of a presubmit, start pods in creation
			order as the limits allow, follow them in their build clusters,
			enforce the unscheduled, pending and running timeouts, recreate
			evicted and lost pods, and record the final state.

			The loop watches job records and pods and runs until SIGINT or
			SIGTERM, then finishes the step in flight (within seconds) and
			exits 0. With --once it looks at every unfinished job once and
			exits (for cron); with --dry-run as well it prints what it would
			do and changes nothing.

			A build cluster that does not answer stops nothing else: its jobs
			keep their state (no timeout fires while lockctl can not see their
			pods), it is recorded unreachable with the reason (lockctl get
			clusters) and tried again with a back-off, and every other
			cluster's jobs are driven. --once then exits 1 naming it. An
			unreachable job API server (--context) is an error at once.

			Any number of reconcilers may run at once, in any number of
			processes: a job never gets two pods, a limit is never exceeded, a
			job never moves backwards (docs/adr/0004-concurrent-reconcilers.md).
			They should share one --config.

			The loop also prunes, at start and every hour, as lockctl prune does:
			job records that finished more than --job-retention ago (a week) and
			the pods of jobs that finished more than --pod-retention ago (a day);
			0 keeps them. --once prunes once after its pass.

			Settings come from --config (YAML: maxConcurrency, queueCapacities,
			timeouts, revivalLimit, podNamespace, buildClusters, jobURLTemplate,
			workers, retention: {jobs: 168h, pods: 24h}); flags override it. A
			bad config file exits 2, naming the key.

			Every job state change is an Event on the job record (kubectl get
			events), written in the background through a client of its own, so
			Events never slow the loop; --job-events=warnings records only
			failures, errors, timeouts, aborts and lost pods, none no job Events
			(two requests fewer per job; lock Events are always recorded). An
			Event that can not be queued (more than 1,000 waiting) is dropped
			and counted in lockctl_events_total{result="dropped"}.

			--dashboard-address serves lockctl dashboard's read-only page
			from the loop's own watches, on a loopback address only: the page
			shows what this ServiceAccount may read (pod logs included), so
			only those allowed pods/portforward reach it, with kubectl
			port-forward (docs/dashboard.md).

			The loop runs with a soft memory limit of 64 MiB, raised with the
			live heap to 1.25 times it plus 8 MiB (the Go runtime collects
			garbage more often near it; it is not a hard cap). GOMEMLIMIT, which
			deploy/ sets to the container's memory limit, is its ceiling.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# The loop, with a global limit and metrics
			lockctl reconcile -n ci --max-concurrency 10 --metrics-addr :9090

			# Every minute from cron, jobs in two build clusters
			lockctl reconcile --once --config lockctl.yaml --build-cluster gpu=gpu-context

			# What would the next pass do?
			lockctl reconcile --once --dry-run
		`),
		Args: cli.NoArgs(),
		RunE: runE(o, runF, runReconcile, func(c *cobra.Command, _ []string) { o.changed = c.Flags().Changed }),
	}
	o.addFlags(c.Flags())
	return c
}

func (o *reconcileOptions) addFlags(fs *pflag.FlagSet) {
	fs.BoolVar(&o.Once, "once", o.Once, "look at every unfinished job once, then exit")
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "with --once: print what would be done, change nothing")
	o.LoopFlags.AddFlags(fs)
	fs.StringVar(&o.MetricsAddr, "metrics-addr", o.MetricsAddr, "serve Prometheus metrics on this address, e.g. :9090")
	fs.StringVar(&o.DashboardAddress, "dashboard-address", o.DashboardAddress, "serve the read-only dashboard on this loopback address, e.g. 127.0.0.1:8081; reach it with kubectl port-forward")
	fs.StringVar(&o.Job, "job", o.Job, "reconcile only the job record of this name")
	fs.Float32Var(&o.KubeAPIQPS, "kube-api-qps", o.KubeAPIQPS, "client-side limit of requests per second to each API server; negative means no limit")
	fs.IntVar(&o.KubeAPIBurst, "kube-api-burst", o.KubeAPIBurst, "requests allowed at once above --kube-api-qps")
	cli.AddJobEventsFlag(fs, &o.JobEvents)
	o.AddClusterFlags(fs)
	o.AddLockNamespaceFlag(fs)
	o.AddRetentionFlags(fs)
	o.NotifyFlags.AddFlags(fs)
}

func (o *reconcileOptions) validate() error {
	if o.DryRun && !o.Once {
		return cmdutil.FlagErrorf("--dry-run needs --once")
	}
	if err := cli.ValidateLoopDashboardAddress(o.DashboardAddress); err != nil {
		return err
	}
	if o.DashboardAddress != "" && o.Once {
		return cmdutil.FlagErrorf("--dashboard-address needs the loop: drop --once, or run lockctl dashboard")
	}
	if err := o.LoopFlags.Validate(); err != nil {
		return err
	}
	if o.KubeAPIQPS == 0 {
		return cmdutil.FlagErrorf("--kube-api-qps must not be 0: give a positive limit, or a negative number for none")
	}
	if o.KubeAPIQPS > 0 && o.KubeAPIBurst < 1 {
		return cmdutil.FlagErrorf("--kube-api-burst must be at least 1 with a positive --kube-api-qps")
	}
	return cmp.Or(o.NotifyFlags.Validate(), o.ValidateClusters())
}

func runReconcile(ctx context.Context, o *reconcileOptions) error {
	o.f.QPS, o.f.Burst = o.KubeAPIQPS, o.KubeAPIBurst
	// NOTE: Main lowered GOMAXPROCS for the short commands (cli.CLIMaxProcs);
	// the loop goes back to the runtime's default, its heap under a soft
	// memory limit.
	defer scheduler.TuneRuntime(ctx, o.f.Getenv)()
	cfg, err := o.LoadConfig()
	if err != nil {
		return err
	}
	lo, err := cli.LoopOptions(cfg, &o.LoopFlags, &o.ClusterFlags, &o.RetentionFlags, o.Job, o.changed)
	if err != nil {
		return err
	}
	lo.DryRun, lo.Clock, lo.Log = o.DryRun, o.f.Clock, o.f.Logger()
	ns, jobs, clusters, err := o.Clusters(o.f, cfg)
	if err != nil {
		return err
	}
	loop, stop, err := cli.NewLoop(ctx, o.f, &o.LockFlags, cli.LoopConfig{
		Jobs: jobs, Namespace: ns, Clusters: clusters, Options: lo, JobEvents: o.JobEvents, MetricsAddr: o.MetricsAddr, Once: o.Once, Notify: &o.NotifyFlags,
	})
	if err != nil {
		return err
	}
	defer stop()
	if o.DashboardAddress != "" {
		stop, err := cli.StartLoopDashboard(ctx, o.f, &o.LockFlags, cli.LoopDashboard{
			Address: o.DashboardAddress, Jobs: jobs, JobNamespace: ns, Clusters: clusters,
			PodNamespace: lo.PodNamespace, Listening: o.dashboardListening,
		})
		if err != nil {
			return err
		}
		defer stop()
	}
	if !o.Once {
		o.f.Console().Statusf(term.StyleNone, nil, "reconciling jobs in namespace %q until interrupted", ns)
		return loop.Run(ctx)
	}
	res, err := loop.RunOnce(ctx)
	printers.Pass(o.f.IOStreams.Out, res, o.DryRun)
	return err
}
