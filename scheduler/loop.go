package scheduler

import (
	"context"
	"errors"

	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/metrics"
)

// LoopOptions configure NewLoop.
type LoopOptions struct {
	// Options configure the Controller; NewLoop sets Metrics.
	Options
	// Prune configures the pruning beside the loop, as lockctl prune
	// prunes; NewLoop sets its PodNamespace, DryRun, Clock and Log from
	// Options, and its Metrics. nil means the loop does not prune.
	Prune *PruneOptions
	// Registry receives the metrics of the loop and of its pruning; nil
	// means a registry of the loop's own, which nobody reads.
	Registry metrics.Registerer
}

// Loop is lockctl reconcile: a Controller driving the jobs of a job
// namespace in their build clusters, and the Pruner pruning beside it.
type Loop struct {
	c      *Controller
	pruner *Pruner
}

// NewLoop checks with Preflight that the caller may do what the loop does
// (before anything is written; an unreachable job API server fails here,
// at once), then builds the loop over the job records in namespace of jobs,
// whose pods run in clusters (alias → clientset). An invalid o is an error
// wrapping ErrConfig.
func NewLoop(ctx context.Context, jobs Clientset, namespace string, clusters map[string]Clientset, o LoopOptions) (*Loop, error) {
	if err := Preflight(ctx, jobs, namespace, clusters, o.PodNamespace, o.DryRun); err != nil {
		return nil, err
	}
	reg := o.Registry
	if reg == nil {
		reg = metrics.NewRegistry()
	}
	var err error
	if o.Metrics, err = NewMetrics(reg); err != nil {
		return nil, err
	}
	c, err := NewController(jobs, namespace, clusters, o.Options)
	if err != nil {
		return nil, err
	}
	l := &Loop{c: c}
	if o.Prune != nil {
		sopts := *o.Prune
		sopts.PodNamespace, sopts.DryRun = o.PodNamespace, o.DryRun
		sopts.Clock, sopts.Log = o.Clock, o.Log
		if sopts.Metrics, err = NewPruneMetrics(reg); err != nil {
			return nil, err
		}
		l.pruner = NewPruner(jobs.CoreV1(), namespace, PodsGetters(clusters), sopts)
	}
	return l, nil
}

// Controller returns the loop's controller.
func (l *Loop) Controller() *Controller { return l.c }

// Ready is the loop's readiness: an error until the caches of job records
// and pods are filled.
func (l *Loop) Ready() error {
	if !l.c.HasSynced() {
		return errors.New("caches of job records and pods not yet filled")
	}
	return nil
}

// Run reconciles until ctx ends, pruning (when it does) at start and every
// DefaultPruneInterval; it returns once the step in flight has finished.
func (l *Loop) Run(ctx context.Context) error {
	if l.pruner != nil {
		pruned := make(chan struct{})
		defer func() { <-pruned }()
		go func() {
			defer close(pruned)
			l.pruner.Run(ctx, DefaultPruneInterval)
		}()
	}
	return l.c.Run(ctx)
}

// OnceResult is what one pass of the loop did.
type OnceResult struct {
	// Plan is what a dry run would do, a line an action (Reconciler.Plan).
	Plan []string
	// Pruned is what the pruning after the pass deleted, or would delete;
	// nil when it did not run.
	Pruned *PruneResult
}

// RunOnce looks at every unfinished job once, then, unless ctx has ended,
// prunes once (when the loop prunes). The error joins the pass's and the
// pruning's.
func (l *Loop) RunOnce(ctx context.Context) (OnceResult, error) {
	err := l.c.RunOnce(ctx)
	res := OnceResult{Plan: l.c.Reconciler().Plan()}
	if l.pruner == nil || ctx.Err() != nil {
		return res, err
	}
	var perr error
	res.Pruned, perr = l.pruner.Prune(ctx)
	return res, errors.Join(err, perr)
}

// PodsGetters returns the pods client of each build cluster (alias →
// clientset), as NewPruner takes them.
func PodsGetters(clusters map[string]Clientset) map[string]kube.PodsGetter {
	out := make(map[string]kube.PodsGetter, len(clusters))
	for alias, cs := range clusters {
		out[alias] = cs.CoreV1()
	}
	return out
}
