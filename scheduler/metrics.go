package scheduler

import (
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/metrics"
)

// Metrics are the reconcile loop's Prometheus metrics.
type Metrics struct {
	transitions *metrics.CounterVec
	duration    *metrics.Histogram
	errors      *metrics.CounterVec
	clusters    *metrics.GaugeVec
	jobs        *jobsCollector
}

// NewMetrics creates the metrics and registers them on reg:
//
//   - lockctl_jobs{state,job,type}: jobs known to the reconciler, by state
//   - lockctl_job_transitions_total{from,to}: state changes written
//   - lockctl_reconcile_duration_seconds: time to reconcile one job
//   - lockctl_reconcile_errors_total{reason}: failed reconciles (conflict, api)
//   - lockctl_build_cluster_status{cluster,status}: 1 for the current
//     reachability of each build cluster
func NewMetrics(reg metrics.Registerer) (*Metrics, error) {
	m := &Metrics{
		transitions: metrics.NewCounterVec("lockctl_job_transitions_total",
			"Job state changes written by this reconciler.", "from", "to"),
		duration: metrics.NewHistogram("lockctl_reconcile_duration_seconds",
			"Time to reconcile one job.", metrics.ExponentialBuckets(0.001, 2, 15)),
		errors: metrics.NewCounterVec("lockctl_reconcile_errors_total",
			"Reconciles that failed and will be retried, by reason.", "reason"),
		clusters: metrics.NewGaugeVec("lockctl_build_cluster_status",
			"1 for the current reachability status of each build cluster.", "cluster", "status"),
		jobs: newJobsCollector(),
	}
	for _, c := range []metrics.Collector{m.transitions, m.duration, m.errors, m.clusters, m.jobs} {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return m, nil
}

func (m *Metrics) transition(from, to job.State) {
	if m != nil && from != to {
		m.transitions.WithLabelValues(string(from), string(to)).Inc()
	}
}

func (m *Metrics) observe(seconds float64, reason string) {
	if m == nil {
		return
	}
	m.duration.Observe(seconds)
	if reason != "" {
		m.errors.WithLabelValues(reason).Inc()
	}
}

func (m *Metrics) cluster(alias string, status ClusterState) {
	if m == nil {
		return
	}
	for _, s := range ClusterStates {
		v := 0.0
		if s == status {
			v = 1
		}
		m.clusters.WithLabelValues(alias, string(s)).Set(v)
	}
}

// setJobSource makes lockctl_jobs count, at scrape time, the jobs each
// tells add of: each job's state, job name and type.
func (m *Metrics) setJobSource(each func(add func(state job.State, name string, typ job.Type))) {
	if m != nil {
		m.jobs.each.Store(&each)
	}
}
