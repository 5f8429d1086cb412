package scheduler

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/job"
)

// LedgerName is the admission ledger ConfigMap in the job namespace: the
// jobs admitted under a concurrency limit that have not finished yet.
const LedgerName = "lockctl.admission"

// KindAdmission is the job.LabelKind value of the admission ledger.
const KindAdmission = "admission"

// ledgerKey is the data key holding the ledger's entries as JSON.
const ledgerKey = "entries"

// admissionRetry is how soon a job waiting for capacity looks again when no
// event (a job finishing, the ledger changing) wakes it earlier.
const admissionRetry = 30 * time.Second

// admissionAttempts bounds the compare-and-swap retries of one pass.
const admissionAttempts = 20

// ledgerEntry is one admitted job: what it counts against.
type ledgerEntry struct {
	Job     string `json:"job"`
	Queue   string `json:"queue,omitempty"`
	Cluster string `json:"cluster"`
}

type ledger map[string]ledgerEntry

// decision is the outcome of admission for one job: admitted, waiting (and
// why) or impossible (and why).
type decision struct {
	wait string
	fail string
}

// limit is one concurrency limit a job is subject to.
type limit struct {
	key  string
	max  int
	what string
}

// admit decides whether a triggered job may start now. Jobs under no limit
// always may. Others must be in the admission ledger; if they are not, an
// admission pass adds as many waiting jobs as the limits allow, oldest
// first.
func (r *Reconciler) admit(ctx context.Context, j *job.Job) (decision, error) {
	if q := j.Spec.Queue; q != "" {
		capacity, ok := r.opts.QueueCapacities[q]
		switch {
		case !ok:
			return decision{fail: fmt.Sprintf("unknown queue %q", q)}, nil
		case capacity == 0:
			return decision{wait: fmt.Sprintf("queue %q has capacity 0", q)}, nil
		}
	}
	if len(r.limitsOf(j)) == 0 {
		return decision{}, nil
	}
	admitted, waits, err := r.Admit(ctx)
	if err != nil {
		return decision{}, err
	}
	if admitted[j.Name] {
		return decision{}, nil
	}
	if why, ok := waits[j.Name]; ok {
		return decision{wait: why}, nil
	}
	return decision{wait: "waiting for admission"}, nil
}

// limitsOf returns the limits j is subject to, in the order they are
// checked: global, per job name, queue.
func (r *Reconciler) limitsOf(j *job.Job) []limit {
	var ls []limit
	if m := r.opts.MaxConcurrency; m > 0 {
		ls = append(ls, limit{key: "global", max: m, what: fmt.Sprintf("global limit of %d running jobs reached", m)})
	}
	if m := j.Spec.MaxConcurrency; m > 0 {
		ls = append(ls, limit{key: "job/" + j.Spec.Job, max: m, what: fmt.Sprintf("max concurrency %d of job %q reached", m, j.Spec.Job)})
	}
	if q := j.Spec.Queue; q != "" {
		if m := r.opts.QueueCapacities[q]; m > 0 {
			ls = append(ls, limit{key: "queue/" + q, max: m, what: fmt.Sprintf("queue %q is full (capacity %d)", q, m)})
		}
	}
	return ls
}

// countKeys are the limit counters a job counts against when it runs or
// waits ahead of others.
func countKeys(jobName, queue string) []string {
	keys := []string{"global", "job/" + jobName}
	if queue != "" {
		keys = append(keys, "queue/"+queue)
	}
	return keys
}

// Admit runs one admission pass: it drops ledger entries of jobs that have
// finished (and whose pods are gone or finished), then walks the triggered
// jobs oldest first and admits each whose limits all have room, counting
// running jobs and older waiting ones against every limit. The ledger is
// written with one compare-and-swap; a lost race repeats the pass on a fresh
// read. It returns the jobs in the ledger and, for those still waiting, why.
func (r *Reconciler) Admit(ctx context.Context) (map[string]bool, map[string]string, error) {
	r.admitMu.Lock()
	defer r.admitMu.Unlock()
	fresh := false
	for range admissionAttempts {
		cm, err := r.currentLedger(ctx, fresh)
		if err != nil {
			return nil, nil, err
		}
		entries, err := decodeLedger(cm)
		if err != nil {
			return nil, nil, err
		}
		jobs, err := r.allJobs(ctx)
		if err != nil {
			return nil, nil, err
		}
		gone, err := r.finishedEntries(ctx, entries, jobs)
		if err != nil {
			return nil, nil, err
		}
		for _, name := range gone {
			delete(entries, name)
		}
		newly, waits := r.fill(entries, jobs)
		r.waiting.Store(int64(len(waits)))
		if len(newly) == 0 && len(gone) == 0 || r.opts.DryRun {
			return names(entries), waits, nil
		}
		out, err := r.writeLedger(ctx, cm, entries)
		if errors.Is(err, job.ErrConflict) {
			fresh = true
			continue
		}
		if err != nil {
			return nil, nil, err
		}
		r.lastLedger = out
		if len(newly) > 0 {
			r.opts.Log.Debug("admitted", "jobs", newly)
			if r.hooks.onAdmit != nil {
				r.hooks.onAdmit(newly)
			}
		}
		return names(entries), waits, nil
	}
	return nil, nil, fmt.Errorf("admission pass: %w", job.ErrConflict)
}

// admissionIdle reports whether an admission pass would do nothing: the
// last pass left no job waiting and the ledger holds no entry to free. A
// job that comes under a limit runs a pass itself (admit), and a ledger
// changed by another reconciler queues one when the cache sees it; so the
// passes queued for every job that completes and every pod that stops,
// each a walk over every job, are skipped while no limit is in use.
func (r *Reconciler) admissionIdle(ctx context.Context) bool {
	r.admitMu.Lock()
	defer r.admitMu.Unlock()
	if r.waiting.Load() != 0 {
		return false
	}
	cm, err := r.currentLedger(ctx, false)
	if err != nil {
		return false
	}
	entries, err := decodeLedger(cm)
	return err == nil && len(entries) == 0
}

// fill admits, in start order, every triggered job whose limits have room,
// adding it to entries. It returns the admitted jobs and why the others wait.
func (r *Reconciler) fill(entries ledger, jobs []*job.Job) ([]string, map[string]string) {
	counts := map[string]int{}
	for _, e := range entries {
		for _, k := range countKeys(e.Job, e.Queue) {
			counts[k]++
		}
	}
	for _, j := range jobs {
		if _, ok := entries[j.Name]; !ok && holdsPod(j) {
			for _, k := range countKeys(j.Spec.Job, j.Spec.Queue) {
				counts[k]++
			}
		}
	}
	job.SortByStart(jobs)
	var newly []string
	waits := map[string]string{}
	for _, j := range jobs {
		if _, ok := entries[j.Name]; ok || !r.admissible(j) {
			continue
		}
		why := ""
		for _, l := range r.limitsOf(j) {
			if counts[l.key] >= l.max {
				why = l.what
				break
			}
		}
		if why == "" {
			entries[j.Name] = ledgerEntry{Job: j.Spec.Job, Queue: j.Spec.Queue, Cluster: j.ClusterAlias()}
			newly = append(newly, j.Name)
		} else {
			waits[j.Name] = why
		}
		for _, k := range countKeys(j.Spec.Job, j.Spec.Queue) {
			counts[k]++
		}
	}
	return newly, waits
}

// admissible reports whether a job is waiting for admission: triggered,
// under some limit, in a known build cluster and a queue that can run it.
func (r *Reconciler) admissible(j *job.Job) bool {
	if j.Status.State != job.Triggered || len(r.limitsOf(j)) == 0 {
		return false
	}
	if _, ok := r.clusters[j.ClusterAlias()]; !ok {
		return false
	}
	if q := j.Spec.Queue; q != "" {
		if capacity, ok := r.opts.QueueCapacities[q]; !ok || capacity == 0 {
			return false
		}
	}
	return true
}

// holdsPod reports whether a job not in the ledger may have a running pod.
func holdsPod(j *job.Job) bool {
	return !j.IsTerminal() && j.Status.State != job.Triggered
}

// finishedEntries returns the ledger entries whose job is terminal or gone
// and whose pod no longer runs: their capacity is free again. A pod still
// terminating keeps its place, so a limit is never exceeded while it stops.
func (r *Reconciler) finishedEntries(ctx context.Context, entries ledger, jobs []*job.Job) ([]string, error) {
	byName := make(map[string]*job.Job, len(jobs))
	for _, j := range jobs {
		byName[j.Name] = j
	}
	var gone []string
	for _, name := range sortedKeys(entries) {
		j := byName[name]
		if j == nil {
			// A complete job may be left out of jobs: read it alone from
			// the cache, if there is one.
			if _, cached := r.read.(*cacheReader); cached {
				if got, err := r.read.job(ctx, name); err == nil {
					j = got
				}
			}
		}
		if j == nil {
			got, err := r.store.Get(ctx, name)
			switch {
			case errors.Is(err, job.ErrNotFound):
			case err != nil:
				return nil, err
			default:
				j = got
			}
		}
		if j != nil && !j.IsTerminal() {
			continue
		}
		running, err := r.podRuns(ctx, entries[name].Cluster, name)
		var cu *ClusterUnavailableError
		if errors.As(err, &cu) {
			continue // kept until its cluster tells
		}
		if err != nil {
			r.opts.Log.Warn("can not tell whether the pod of a finished job still runs", "error", err, "job", name)
			continue
		}
		if !running {
			gone = append(gone, name)
		}
	}
	return gone, nil
}

func (r *Reconciler) podRuns(ctx context.Context, alias, name string) (bool, error) {
	cl := r.clusters[alias]
	if cl == nil {
		return false, nil
	}
	pod, err := r.read.pod(ctx, cl, name, false)
	if err != nil || pod == nil {
		return false, err
	}
	return pod.Status.Phase != corev1.PodSucceeded && pod.Status.Phase != corev1.PodFailed, nil
}

// currentLedger reads the ledger, preferring this reconciler's last write
// when the view has not caught up with it.
func (r *Reconciler) currentLedger(ctx context.Context, fresh bool) (*corev1.ConfigMap, error) {
	cm, err := r.read.ledger(ctx, fresh)
	if err != nil {
		return nil, err
	}
	if last := r.lastLedger; !fresh && last != nil && (cm == nil || newerRV(last.ResourceVersion, cm.ResourceVersion)) {
		return last, nil
	}
	return cm, nil
}

func decodeLedger(cm *corev1.ConfigMap) (ledger, error) {
	entries := ledger{}
	if cm == nil || cm.Data[ledgerKey] == "" {
		return entries, nil
	}
	if err := json.Unmarshal([]byte(cm.Data[ledgerKey]), &entries); err != nil {
		return nil, fmt.Errorf("decode admission ledger %q: %w", cm.Name, err)
	}
	return entries, nil
}

// writeLedger stores the entries with a compare-and-swap on cm (a create if
// there is no ledger yet); a lost race returns job.ErrConflict.
func (r *Reconciler) writeLedger(ctx context.Context, cm *corev1.ConfigMap, entries ledger) (*corev1.ConfigMap, error) {
	data, err := json.Marshal(entries)
	if err != nil {
		return nil, fmt.Errorf("encode admission ledger: %w", err)
	}
	var out *corev1.ConfigMap
	if cm == nil {
		out, err = r.cms.Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{
				Name:      LedgerName,
				Namespace: r.namespace,
				Labels:    map[string]string{job.LabelManagedBy: job.ManagedByValue, job.LabelKind: KindAdmission},
			},
			Data: map[string]string{ledgerKey: string(data)},
		}, metav1.CreateOptions{})
	} else {
		next := cm.DeepCopy()
		if next.Data == nil {
			next.Data = map[string]string{}
		}
		next.Data[ledgerKey] = string(data)
		out, err = r.cms.Update(ctx, next, metav1.UpdateOptions{})
	}
	if apierrors.IsConflict(err) || apierrors.IsAlreadyExists(err) || apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("write admission ledger: %w", job.ErrConflict)
	}
	if err != nil {
		return nil, fmt.Errorf("write admission ledger: %w", err)
	}
	return out, nil
}

func names(entries ledger) map[string]bool {
	out := make(map[string]bool, len(entries))
	for n := range entries {
		out[n] = true
	}
	return out
}
