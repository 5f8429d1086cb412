package scheduler

import (
	"context"
	"log/slog"
	"time"

	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/base/logutil"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/liveness"
)

// Defaults of Options, as in Prow's plank.
const (
	DefaultUnscheduledTimeout = 5 * time.Minute
	DefaultPendingTimeout     = 10 * time.Minute
	DefaultRunningTimeout     = 48 * time.Hour
	DefaultRevivalLimit       = 3
	DefaultWorkers            = 16
)

// Options configure a Reconciler and a Controller. The zero value is usable:
// no limits, Prow's timeouts, pods in the job namespace.
type Options struct {
	// MaxConcurrency is the global maximum of running jobs; 0 means no
	// global limit.
	MaxConcurrency int
	// QueueCapacities maps a job queue to how many of its jobs may run at
	// once: 0 means none runs, a negative number means no limit. A job naming
	// a queue that is not here ends in error.
	QueueCapacities map[string]int
	// UnscheduledTimeout ends a pod that has not been scheduled (no start
	// time) after this long; 0 means DefaultUnscheduledTimeout, negative
	// means never.
	UnscheduledTimeout time.Duration
	// PendingTimeout ends a scheduled pod whose containers have not started
	// after this long; 0 means DefaultPendingTimeout, negative means never.
	PendingTimeout time.Duration
	// RunningTimeout aborts a pod running longer than this; 0 means
	// DefaultRunningTimeout, negative means never.
	RunningTimeout time.Duration
	// RevivalLimit is how many of a job's pods may be lost (evicted, gone
	// with their node, taken away by Kubernetes) and replaced before the job
	// ends in error; 0 means DefaultRevivalLimit, negative means no limit.
	RevivalLimit int
	// PodNamespace is the namespace of job pods in every build cluster;
	// empty means the job namespace.
	PodNamespace string
	// JobURLTemplate is a text/template executed with the *job.Job to give
	// status.url; empty means no URL.
	JobURLTemplate string
	// DryRun makes the reconciler write nothing and record what it would do
	// (see Plan).
	DryRun bool
	// Workers is how many jobs the Controller reconciles at once; 0 means
	// DefaultWorkers.
	Workers int
	// OnlyJob makes the Controller reconcile only the job record of that
	// name (lockctl run); empty means every job.
	OnlyJob string
	// Runs, when set, is asked whether the lockctl run that submitted a job
	// lives; jobs of ended runs are aborted. Nil means every job's run
	// lives.
	Runs RunChecker
	// Locker takes the namespace locks of jobs with spec.lock; nil means such
	// jobs end in error.
	Locker NamespaceLocker
	// Liveness tunes when a pod counts as lost (its node's grace, the
	// margin past a terminating pod's grace period); the zero value means
	// liveness's defaults.
	Liveness liveness.Options
	// Clock is the time source; nil means clock.RealClock{}.
	Clock clock.WithTicker
	// Log receives the reconciler's logs; nil means they are discarded.
	Log *slog.Logger
	// Metrics receives the reconciler's metrics; nil means none are kept.
	Metrics *Metrics
	// OnJobChange, when set, is called after every job status written, with
	// the job before and after (lockctl's Events); nil means none.
	OnJobChange func(ctx context.Context, before, after *job.Job)
}

// withDefaults returns o with every zero value replaced by its default.
func (o Options) withDefaults() Options {
	o.UnscheduledTimeout = orDefault(o.UnscheduledTimeout, DefaultUnscheduledTimeout)
	o.PendingTimeout = orDefault(o.PendingTimeout, DefaultPendingTimeout)
	o.RunningTimeout = orDefault(o.RunningTimeout, DefaultRunningTimeout)
	if o.RevivalLimit == 0 {
		o.RevivalLimit = DefaultRevivalLimit
	}
	if o.Workers <= 0 {
		o.Workers = DefaultWorkers
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	o.Log = logutil.OrDiscard(o.Log)
	return o
}

func orDefault(d, def time.Duration) time.Duration {
	if d == 0 {
		return def
	}
	return d
}

// Result says when to look at a job again.
type Result struct {
	// RequeueAfter is when the next timeout of the job falls due; 0 means
	// only when the job or its pod changes.
	RequeueAfter time.Duration
}
