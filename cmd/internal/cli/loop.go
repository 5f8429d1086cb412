package cli

import (
	"context"
	"sync"
	"time"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/metricsserver"
	"github.com/lockctl/lockctl/events"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/metrics"
	"github.com/lockctl/lockctl/notify"
	"github.com/lockctl/lockctl/run"
	"github.com/lockctl/lockctl/scheduler"
	"github.com/lockctl/lockctl/stats"
)

// EventsFlushTimeout bounds how long lockctl reconcile, stopping, writes
// the Events still queued.
const EventsFlushTimeout = 5 * time.Second

// LoopConfig is what lockctl reconcile's loop runs on: the job records of
// Namespace in Jobs, their pods in Clusters (alias → clientset).
type LoopConfig struct {
	Jobs      kube.Interface
	Namespace string
	Clusters  map[string]scheduler.Clientset
	// Options are the loop's; NewLoop sets their Registry, Locker, Runs
	// and OnJobChange.
	Options scheduler.LoopOptions
	// JobEvents says which job state changes are Events.
	JobEvents events.JobEvents
	// MetricsAddr, when set, serves the loop's metrics and readiness,
	// and, unless Once, the metrics of the locks of the lock namespace.
	MetricsAddr string
	// Once says the loop makes one pass (--once).
	Once bool
	// Notify, unless Once, sends webhook notifications of the locks of
	// the lock namespace (--notify-webhook); nil or no webhook sends none.
	Notify *NotifyFlags
}

// NewLoop builds lockctl reconcile's loop from f and the locks of l: a
// metrics registry with the Go and process collectors, the job and lock
// Events written in the background (as many writers as workers: at most
// one Event per state write), the locks taken for job pods, the holds of
// lockctl run sessions, and the metrics server of c.MetricsAddr. stop
// stops the server and writes the Events still queued, within
// EventsFlushTimeout.
func NewLoop(ctx context.Context, f *Factory, l *LockFlags, c LoopConfig) (loop *scheduler.Loop, stop func(), err error) {
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewGoCollector(), metrics.NewProcessCollector())
	lo := c.Options
	lo.Registry = reg
	rec, err := f.LoopEventRecorder(c.Jobs, c.JobEvents, reg)
	if err != nil {
		return nil, nil, err
	}
	var stops []func()
	stop = func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
	}
	stopEvents := rec.Background(events.DefaultQueueCapacity, lo.Workers)
	stops = append(stops, func() {
		flush, cancel := context.WithTimeout(context.WithoutCancel(ctx), EventsFlushTimeout)
		defer cancel()
		stopEvents(flush)
	})
	defer func() {
		if err != nil {
			stop()
		}
	}()
	locks, err := NewLockClient(f, l, LockClientOptions{Events: rec})
	if err != nil {
		return nil, nil, err
	}
	lo.Locker = run.NewPodLocker(locks)
	// NOTE: the locks of lockctl run sessions live beside the job records,
	// so the job cluster's client reads them.
	lo.Runs = run.NewHoldChecker(c.Jobs.CoreV1(), run.HoldCheckerOptions{Clock: f.LockClock()})
	lo.OnJobChange = rec.JobChanged
	loop, err = scheduler.NewLoop(ctx, c.Jobs, c.Namespace, c.Clusters, lo)
	if err != nil {
		return nil, nil, cmdutil.UsageIfInvalid(err)
	}
	if !c.Once {
		stopWatch, err := observeLoopLocks(ctx, f, reg, locks, c)
		if err != nil {
			return nil, nil, err
		}
		stops = append(stops, stopWatch)
	}
	if c.MetricsAddr != "" {
		stopMetrics, err := metricsserver.Start(ctx, c.MetricsAddr, reg, loop.Ready, f.Log)
		if err != nil {
			return nil, nil, err
		}
		stops = append(stops, stopMetrics)
	}
	return loop, stop, nil
}

// LoopOptions merges the loop's --config (cfg) with the flags given
// (changed), which win: the loop group l, --pod-namespace of cf, and the
// pruning ages of r, which apply unless only (--job) names one job. A
// config file that cannot be used is a *cmdutil.UsageError.
func LoopOptions(cfg *scheduler.Config, l *LoopFlags, cf *ClusterFlags, r *RetentionFlags, only string, changed func(name string) bool) (scheduler.LoopOptions, error) {
	opts, err := cfg.Options()
	if err != nil {
		return scheduler.LoopOptions{}, &cmdutil.UsageError{Err: err}
	}
	l.Apply(&opts, changed)
	if changed("pod-namespace") {
		opts.PodNamespace = cf.PodNamespace
	}
	opts.OnlyJob = only
	lo := scheduler.LoopOptions{Options: opts}
	if only == "" {
		prune, err := cfg.Retention.Apply(r.PruneOptions(changed))
		if err != nil {
			return lo, &cmdutil.UsageError{Err: err}
		}
		lo.Prune = &prune
	}
	return lo, nil
}

// observeLoopLocks watches the locks of the loop's lock namespace for
// their metrics (with c.MetricsAddr) and notifications (c.Notify), when
// either is asked for.
func observeLoopLocks(ctx context.Context, f *Factory, reg *metrics.Registry, locks *lock.Client, c LoopConfig) (stop func(), err error) {
	var observers []stats.Observer
	if c.MetricsAddr != "" {
		exporter, err := NewLockExporter(f, reg)
		if err != nil {
			return nil, err
		}
		observers = append(observers, exporter)
	}
	var n *notify.Notifier
	if c.Notify != nil {
		if n, err = c.Notify.Notifier(f, locks); err != nil {
			return nil, err
		}
	}
	if n != nil {
		observers = append(observers, n)
	}
	if len(observers) == 0 {
		return func() {}, nil
	}
	ctx, cancel := context.WithCancel(ctx)
	stopWatch, err := ObserveLocks(ctx, f, locks.Namespace(), observers...)
	if err != nil {
		cancel()
		return nil, err
	}
	var wg sync.WaitGroup
	if n != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			n.Run(ctx)
		}()
	}
	return func() { cancel(); stopWatch(); wg.Wait() }, nil
}
