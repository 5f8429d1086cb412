// Package scheduler implements lockctl's reconcile loop: it drives every job
// record of a namespace (package job) through its life, creating the job's
// pod in its build cluster when the concurrency limits allow, following the
// pod, enforcing timeouts, recovering from evictions and lost nodes,
// superseding duplicate presubmits and recording the final state.
//
// The Reconciler is level-based: Reconcile(ctx, name) reads the job and its
// pod, decides, acts, and returns when to look again (the nearest timeout).
// The Controller feeds it from informers on job records and pods through a
// rate-limited work queue (Run), or looks at every job once (RunOnce).
// The Pruner prunes finished jobs and their pods. Loop is lockctl
// reconcile as a whole, the entry point cmd calls: Preflight, a Controller
// and its metrics, and the Pruner pruning beside it.
//
// Any number of reconcilers, in any number of processes, may run at once;
// docs/adr/0004-concurrent-reconcilers.md has the argument. In short: a
// job's pod has one name, so a second create fails with AlreadyExists and
// the pod is adopted; every pod creation is preceded by a compare-and-swap on
// the job's status, so only a reconciler with a current view creates; and
// limited jobs are admitted through an admission ledger, one ConfigMap per
// job namespace changed by compare-and-swap, in creation order, before their
// pod is created.
package scheduler
