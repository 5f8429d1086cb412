package scheduler

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/base/logutil"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/metrics"
)

// Retention defaults, as Prow's sinker: finished job records are kept for a
// week (max_prowjob_age), the pods of finished jobs for a day (max_pod_age).
const (
	DefaultJobRetention = 7 * 24 * time.Hour
	DefaultPodRetention = 24 * time.Hour
	// DefaultPruneInterval is how often the reconcile loop prunes, as
	// Prow's sinker resyncs.
	DefaultPruneInterval = time.Hour
	// orphanGrace is how old a finished pod without a job record must be
	// before it goes, so a pod whose record was created after the records
	// were listed is never taken for an orphan.
	orphanGrace = time.Minute
)

// PruneOptions configure a Pruner.
type PruneOptions struct {
	// JobRetention is how long a finished job record is kept after its
	// completion; 0 means DefaultJobRetention, negative means forever.
	JobRetention time.Duration
	// PodRetention is how long the pod of a finished job is kept after the
	// job's completion; 0 means DefaultPodRetention, negative means forever.
	// Pods whose job record is gone are deleted once finished or older than
	// this.
	PodRetention time.Duration
	// PodNamespace is the namespace of job pods in every build cluster;
	// empty means the job namespace.
	PodNamespace string
	// DryRun deletes nothing; Prune returns what it would delete.
	DryRun bool
	// Clock is the time source; nil means clock.RealClock{}.
	Clock clock.WithTicker
	// Log receives what is deleted; nil means it is discarded.
	Log *slog.Logger
	// Metrics counts what is deleted; nil means nothing is counted.
	Metrics *PruneMetrics
}

// ConfigRetention are the retention ages of a Config, Go durations as the
// flags --job-retention and --pod-retention of lockctl reconcile take them:
// empty keeps the default (DefaultJobRetention, DefaultPodRetention), 0
// keeps everything.
type ConfigRetention struct {
	// Jobs is how long a finished job record is kept after its completion.
	Jobs string `json:"jobs,omitempty"`
	// Pods is how long the pod of a finished job is kept after the job's
	// completion.
	Pods string `json:"pods,omitempty"`
}

// Apply fills the retention ages that opts leaves at 0 (no flag given)
// from r; an age both leave at 0 is the default. A bad key is a
// *ConfigError.
func (r ConfigRetention) Apply(opts PruneOptions) (PruneOptions, error) {
	fromFile, err := r.PruneOptions()
	if err != nil {
		return opts, err
	}
	if opts.JobRetention == 0 {
		opts.JobRetention = fromFile.JobRetention
	}
	if opts.PodRetention == 0 {
		opts.PodRetention = fromFile.PodRetention
	}
	return opts, nil
}

// PruneOptions returns the ages as PruneOptions retention fields (0 for
// an empty key, which means the default; negative for 0, which means
// forever), or a *ConfigError naming a bad key.
func (r ConfigRetention) PruneOptions() (PruneOptions, error) {
	var o PruneOptions
	for _, d := range []struct {
		key string
		val string
		dst *time.Duration
	}{
		{"retention.jobs", r.Jobs, &o.JobRetention},
		{"retention.pods", r.Pods, &o.PodRetention},
	} {
		if d.val == "" {
			continue
		}
		age, err := time.ParseDuration(d.val)
		switch {
		case err != nil:
			return o, &ConfigError{Key: d.key, Msg: fmt.Sprintf("%q is not a duration such as 168h or 24h", d.val)}
		case age < 0:
			return o, &ConfigError{Key: d.key, Msg: "must be 0 (keep everything) or more"}
		case age == 0:
			age = -1
		}
		*d.dst = age
	}
	return o, nil
}

// Pruner deletes finished job records and their pods once they are older
// than the retention ages, as Prow's sinker does, so records do not pile up
// beside the user's ConfigMaps and in every reconciler's cache. The newest
// run of each periodic job is kept whatever its age. Every delete carries
// the UID and resourceVersion read, so a record or pod that changed or was
// re-created meanwhile is never removed. Any number of Pruners may run at
// once: one deletes, the others find the object gone.
type Pruner struct {
	store     *job.Store
	cms       kube.ConfigMapInterface
	namespace string
	podNS     string
	clusters  map[string]kube.PodsGetter
	opts      PruneOptions
}

// NewPruner returns a Pruner for the job records in namespace, whose pods
// run in the given build clusters (alias → client).
func NewPruner(cms kube.ConfigMapsGetter, namespace string, clusters map[string]kube.PodsGetter, opts PruneOptions) *Pruner {
	if opts.JobRetention == 0 {
		opts.JobRetention = DefaultJobRetention
	}
	if opts.PodRetention == 0 {
		opts.PodRetention = DefaultPodRetention
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	opts.Log = logutil.OrDiscard(opts.Log)
	podNS := opts.PodNamespace
	if podNS == "" {
		podNS = namespace
	}
	return &Pruner{
		store:     job.NewStore(cms, namespace, job.StoreOptions{}),
		cms:       cms.ConfigMaps(namespace),
		namespace: namespace,
		podNS:     podNS,
		clusters:  clusters,
		opts:      opts,
	}
}

// Pruned is one object a prune deleted, or would delete in a dry run.
type Pruned struct {
	// Kind is "job" or "pod".
	Kind string
	// Cluster is the build-cluster alias of a pod; empty for a job.
	Cluster   string
	Namespace string
	Name      string
	// Reason says why it went, such as "finished 8d ago".
	Reason string
}

// String renders the object for people: `job "a" (finished 8d ago)`.
func (p Pruned) String() string {
	where := ""
	if p.Cluster != "" {
		where = fmt.Sprintf(" in cluster %q", p.Cluster)
	}
	return fmt.Sprintf("%s %q%s (%s)", p.Kind, p.Namespace+"/"+p.Name, where, p.Reason)
}

// PruneResult is what one prune did.
type PruneResult struct {
	// Deleted lists the records and pods deleted (in a dry run, those that
	// would be), pods first.
	Deleted []Pruned
	// Skipped counts objects that changed, were re-created or were deleted
	// by someone else between the list and the delete, and were left alone.
	Skipped int
}

// Count returns how many deleted objects are of kind ("job" or "pod").
func (r *PruneResult) Count(kind string) int {
	n := 0
	for _, p := range r.Deleted {
		if p.Kind == kind {
			n++
		}
	}
	return n
}

// Prune deletes, once, the pods of jobs finished longer ago than the pod
// retention, pods whose job record is gone, and job records finished longer
// ago than the job retention (but for the newest run of each periodic job).
// A build cluster that cannot be reached does not stop the others; its
// error is returned with the result once everything else is done.
func (s *Pruner) Prune(ctx context.Context) (*PruneResult, error) {
	now := s.opts.Clock.Now()
	jobs, err := s.store.List(ctx, job.ListOptions{})
	if err != nil && !errors.Is(err, job.ErrCorrupt) {
		return nil, fmt.Errorf("prune: %w", err)
	}
	listed := now
	res := &PruneResult{}
	var errs []error
	byName := make(map[string]*job.Job, len(jobs))
	for _, j := range jobs {
		byName[j.Name] = j
	}

	aliases := make([]string, 0, len(s.clusters))
	for a := range s.clusters {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	seen := map[types.UID]bool{}
	for _, alias := range aliases {
		if err := s.prunePods(ctx, alias, byName, listed, seen, res); err != nil {
			errs = append(errs, err)
		}
	}

	keep := newestPeriodics(jobs)
	for _, j := range jobs {
		if !j.IsTerminal() || keep[j.Name] || s.opts.JobRetention < 0 {
			continue
		}
		age := now.Sub(finishedAt(j))
		if age <= s.opts.JobRetention {
			continue
		}
		p := Pruned{Kind: "job", Namespace: s.namespace, Name: j.Name, Reason: fmt.Sprintf("%s %s ago", j.Status.State, shortAge(age))}
		deleted, err := s.deleteRecord(ctx, j)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.record(res, p, deleted)
	}
	return res, errors.Join(errs...)
}

// prunePods deletes the pods of one build cluster that are due.
func (s *Pruner) prunePods(ctx context.Context, alias string, jobs map[string]*job.Job, listed time.Time, seen map[types.UID]bool, res *PruneResult) error {
	sel := job.LabelManagedBy + "=" + job.ManagedByValue + "," + job.LabelRecordNamespace + "=" + s.namespace
	list, err := s.clusters[alias].Pods(s.podNS).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return fmt.Errorf("prune pods of cluster %q: %w", alias, err)
	}
	var errs []error
	for i := range list.Items {
		pod := &list.Items[i]
		if seen[pod.UID] {
			continue // two aliases for one cluster
		}
		seen[pod.UID] = true
		reason, due := s.podDue(pod, jobs, listed)
		if !due || s.newerRecord(ctx, pod, jobs) {
			continue
		}
		p := Pruned{Kind: "pod", Cluster: alias, Namespace: pod.Namespace, Name: pod.Name, Reason: reason}
		deleted, err := s.deletePod(ctx, alias, pod)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		s.record(res, p, deleted)
	}
	return errors.Join(errs...)
}

// newerRecord reports whether pod's job record, missing from the listing,
// is there but of a record version this lockctl cannot read: a newer
// lockctl's, whose reconcile loop owns the pod (docs/job-record.md).
func (s *Pruner) newerRecord(ctx context.Context, pod *corev1.Pod, jobs map[string]*job.Job) bool {
	name := pod.Labels[job.LabelRecord]
	if name == "" || jobs[name] != nil {
		return false
	}
	_, err := s.store.Get(ctx, name)
	var newer *job.VersionError
	return errors.As(err, &newer)
}

// podDue says whether pod should go, and why.
func (s *Pruner) podDue(pod *corev1.Pod, jobs map[string]*job.Job, now time.Time) (string, bool) {
	if pod.DeletionTimestamp != nil || s.opts.PodRetention < 0 {
		return "", false
	}
	j := jobs[pod.Labels[job.LabelRecord]]
	if j == nil || string(j.UID) != pod.Labels[job.LabelRecordUID] {
		// NOTE: records are created before their pods and the records were
		// listed first, so a pod without one lost it.
		age := now.Sub(pod.CreationTimestamp.Time)
		switch {
		case age > orphanGrace && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed):
			return "job record gone, pod finished", true
		case age > s.opts.PodRetention:
			return fmt.Sprintf("job record gone, pod created %s ago", shortAge(age)), true
		}
		return "", false
	}
	if !j.IsTerminal() {
		return "", false
	}
	age := now.Sub(finishedAt(j))
	if age <= s.opts.PodRetention {
		return "", false
	}
	return fmt.Sprintf("job %s %s ago", j.Status.State, shortAge(age)), true
}

// deleteRecord deletes j's record if it is still the version listed.
func (s *Pruner) deleteRecord(ctx context.Context, j *job.Job) (bool, error) {
	if s.opts.DryRun {
		return true, nil
	}
	err := s.cms.Delete(ctx, j.Name, preconditions(j.UID, j.ResourceVersion))
	if gone(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("prune job %q: %w", j.Name, err)
	}
	return true, nil
}

// deletePod deletes pod if it is still the version listed, and takes
// lockctl's finalizer off it so it does not stay Terminating.
func (s *Pruner) deletePod(ctx context.Context, alias string, pod *corev1.Pod) (bool, error) {
	if s.opts.DryRun {
		return true, nil
	}
	cl := &buildCluster{alias: alias, namespace: pod.Namespace, pods: s.clusters[alias]}
	err := cl.pods.Pods(pod.Namespace).Delete(ctx, pod.Name, preconditions(pod.UID, pod.ResourceVersion))
	if gone(err) {
		return false, nil
	}
	if err != nil {
		return false, fmt.Errorf("prune pod %q in cluster %q: %w", pod.Name, alias, err)
	}
	if err := removeFinalizer(ctx, cl, pod); err != nil {
		return true, err
	}
	return true, nil
}

func (s *Pruner) record(res *PruneResult, p Pruned, deleted bool) {
	if !deleted {
		res.Skipped++
		return
	}
	res.Deleted = append(res.Deleted, p)
	verb := "pruned"
	if s.opts.DryRun {
		verb = "would prune"
	} else {
		s.opts.Metrics.pruned(p.Kind)
	}
	s.opts.Log.Debug(verb+" "+p.Kind, p.Kind, p.Namespace+"/"+p.Name, "reason", p.Reason)
}

// Run prunes at once and then every interval until ctx ends, logging what
// went wrong; for the reconcile loop.
func (s *Pruner) Run(ctx context.Context, interval time.Duration) {
	ticker := s.opts.Clock.NewTicker(interval)
	defer ticker.Stop()
	for {
		res, err := s.Prune(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			s.opts.Metrics.failed()
			s.opts.Log.Warn("prune finished jobs", "error", err)
		case res != nil && len(res.Deleted) > 0:
			s.opts.Log.Info(fmt.Sprintf("pruned %d job records and %d pods", res.Count("job"), res.Count("pod")))
		}
		select {
		case <-ctx.Done():
			return
		case <-ticker.C():
		}
	}
}

// newestPeriodics returns the names of the newest record of each periodic
// job, which are kept: the record of its last run tells when it ran.
func newestPeriodics(jobs []*job.Job) map[string]bool {
	newest := map[string]*job.Job{}
	for _, j := range jobs {
		if j.Spec.Type != job.Periodic {
			continue
		}
		if n, ok := newest[j.Spec.Job]; !ok || job.Older(n, j) {
			newest[j.Spec.Job] = j
		}
	}
	keep := make(map[string]bool, len(newest))
	for _, j := range newest {
		keep[j.Name] = true
	}
	return keep
}

// finishedAt is when a terminal job finished: its completion time, else
// its start.
func finishedAt(j *job.Job) time.Time {
	if t := j.Status.CompletionTime; t != nil {
		return t.Time
	}
	if t := j.Status.StartTime; t != nil {
		return t.Time
	}
	return j.CreationTimestamp.Time
}

func preconditions(uid types.UID, rv string) metav1.DeleteOptions {
	return metav1.DeleteOptions{Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv}}
}

// gone reports an object that changed, was re-created or was deleted since
// it was read.
func gone(err error) bool { return apierrors.IsNotFound(err) || apierrors.IsConflict(err) }

// shortAge renders an age in days, hours, minutes or seconds: "8d", "3h".
func shortAge(d time.Duration) string {
	switch {
	case d >= 48*time.Hour:
		return fmt.Sprintf("%dd", int(d/(24*time.Hour)))
	case d >= 2*time.Hour:
		return fmt.Sprintf("%dh", int(d/time.Hour))
	case d >= 2*time.Minute:
		return fmt.Sprintf("%dm", int(d/time.Minute))
	}
	return fmt.Sprintf("%ds", int(d/time.Second))
}

// PruneMetrics count what the pruner deleted.
type PruneMetrics struct {
	deleted *metrics.CounterVec
	errors  *metrics.Counter
}

// NewPruneMetrics creates the metrics and registers them on reg:
//
//   - lockctl_pruned_total{kind}: job records ("job") and pods ("pod")
//     deleted for their age
//   - lockctl_prune_errors_total: prunes that failed in part
func NewPruneMetrics(reg metrics.Registerer) (*PruneMetrics, error) {
	m := &PruneMetrics{
		deleted: metrics.NewCounterVec("lockctl_pruned_total",
			"Finished job records and pods deleted for their age, by kind (job, pod).", "kind"),
		errors: metrics.NewCounter("lockctl_prune_errors_total",
			"Prunes that failed in part and are tried again at the next interval."),
	}
	for _, c := range []metrics.Collector{m.deleted, m.errors} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.deleted.WithLabelValues("job")
	m.deleted.WithLabelValues("pod")
	return m, nil
}

func (m *PruneMetrics) pruned(kind string) {
	if m != nil {
		m.deleted.WithLabelValues(kind).Inc()
	}
}

func (m *PruneMetrics) failed() {
	if m != nil {
		m.errors.Inc()
	}
}
