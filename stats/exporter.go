package stats

import (
	"fmt"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/metrics"
)

// Buckets are the upper bounds, in seconds, of the wait and hold
// histograms: from a second to eight hours, about two per order of
// magnitude and finer where deploys usually fall (minutes).
func Buckets() []float64 {
	return []float64{1, 2.5, 5, 10, 30, 60, 120, 300, 600, 900, 1200, 1800, 2700, 3600, 7200, 14400, 28800}
}

// The enforcement modes lockctl_lock_enforcement reports, one series each.
func enforcementModes() []string { return []string{"none", "warn", "deny"} }

// Exporter keeps the Prometheus metrics of the locks it is shown: it is an
// Observer of lock ConfigMaps (WatchLocks). Events become counters and
// histograms once seen, from the first change after a lock is first seen
// (what happened before the process started is not counted again at each
// restart); the state of each lock (held, frozen, queue, enforcement) is
// read at each scrape. Every series is labelled with the lock's
// namespace and target, and goes when the lock does.
type Exporter struct {
	clk clock.PassiveClock

	wait, hold                        *metrics.HistogramVec
	ended, handovers, grants, waiters *metrics.CounterVec

	mu    sync.Mutex
	locks map[string]*lockState // by namespace/name
}

// lockState is what the Exporter remembers of a lock between versions.
type lockState struct {
	namespace, target string
	rec               *record.Record
	enforced          string
	// seen are the history entries (by historyKey) and grants already
	// counted, holder the claim already counted as a hold's start.
	seen   map[string]bool
	grants map[string]bool
	holder string
}

// ExporterOptions configure an Exporter.
type ExporterOptions struct {
	// Clock judges freezes and ages at scrape; nil means clock.RealClock.
	Clock clock.PassiveClock
}

var _ Observer = (*Exporter)(nil)

// NewExporter returns an Exporter whose families are registered on reg.
func NewExporter(reg metrics.Registerer, o ExporterOptions) (*Exporter, error) {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	e := &Exporter{
		clk:   o.Clock,
		locks: map[string]*lockState{},
		wait: metrics.NewHistogramVec("lockctl_lock_wait_seconds",
			"Time a contender waited for a lock, from joining its queue to taking it, observed when it took it.",
			Buckets(), "namespace", "target"),
		hold: metrics.NewHistogramVec("lockctl_lock_hold_seconds",
			"Time a lock was held, observed when the hold ended.", Buckets(), "namespace", "target"),
		ended: metrics.NewCounterVec("lockctl_lock_holds_ended_total",
			"Holds of a lock that ended, by how: released, expired (or lost with its pod), superseded by a newer build, forced (release --force).",
			"namespace", "target", "ended"),
		handovers: metrics.NewCounterVec("lockctl_lock_handovers_total",
			"Holds released straight to the next waiter.", "namespace", "target"),
		grants: metrics.NewCounterVec("lockctl_lock_break_glass_grants_total",
			"Break-glass grants made on a lock (lockctl break-glass).", "namespace", "target"),
		waiters: metrics.NewCounterVec("lockctl_lock_waiters_joined_total",
			"Contenders that joined a lock's queue.", "namespace", "target"),
	}
	state := func(name, help string, labels []string, value func(s *lockState, now time.Time, add func([]string, float64))) *metrics.Func {
		return metrics.NewGaugeFunc(name, help, append([]string{"namespace", "target"}, labels...), func(add func([]string, float64)) {
			now := e.clk.Now()
			e.mu.Lock()
			defer e.mu.Unlock()
			for _, s := range e.locks {
				value(s, now, func(more []string, v float64) { add(append([]string{s.namespace, s.target}, more...), v) })
			}
		})
	}
	bool01 := func(b bool) float64 {
		if b {
			return 1
		}
		return 0
	}
	cs := []metrics.Collector{e.wait, e.hold, e.ended, e.handovers, e.grants, e.waiters,
		state("lockctl_lock_waiters", "Contenders waiting in a lock's queue.", nil, func(s *lockState, _ time.Time, add func([]string, float64)) {
			add(nil, float64(len(s.rec.Waiters)))
		}),
		state("lockctl_lock_held", "Whether someone holds the lock (1) or not (0).", nil, func(s *lockState, _ time.Time, add func([]string, float64)) {
			add(nil, bool01(!s.rec.IsFree() && s.rec.Holder.ClaimID != ""))
		}),
		state("lockctl_lock_frozen", "Whether the lock is frozen (1) or not (0).", nil, func(s *lockState, now time.Time, add func([]string, float64)) {
			add(nil, bool01(s.rec.Freeze.ActiveAt(now)))
		}),
		state("lockctl_lock_enforcement", "How the API server enforces the lock (lockctl enforce): one series per mode, 1 for the lock's.",
			[]string{"mode"}, func(s *lockState, _ time.Time, add func([]string, float64)) {
				for _, m := range enforcementModes() {
					add([]string{m}, bool01(m == s.enforced))
				}
			}),
		state("lockctl_lock_held_since_timestamp_seconds", "When the current hold began, in seconds since the Unix epoch; no series when the lock is free.",
			nil, func(s *lockState, _ time.Time, add func([]string, float64)) {
				if !s.rec.IsFree() && s.rec.Holder.ClaimID != "" {
					add(nil, unix(s.rec.Holder.Since.Time))
				}
			}),
		state("lockctl_lock_waiting_since_timestamp_seconds", "When the longest-waiting contender joined the queue, in seconds since the Unix epoch; no series without waiters.",
			nil, func(s *lockState, _ time.Time, add func([]string, float64)) {
				var first time.Time
				for _, w := range s.rec.Waiters {
					t := w.Since.Time
					if w.Queued != nil {
						t = w.Queued.Time
					}
					if first.IsZero() || t.Before(first) {
						first = t
					}
				}
				if !first.IsZero() {
					add(nil, unix(first))
				}
			}),
		state("lockctl_lock_recorded_hold_seconds", "Quantiles (0.5, 0.9) of the holds the lock's record keeps (its last holds, lockctl stats); no series under three holds.",
			[]string{"quantile"}, func(s *lockState, _ time.Time, add func([]string, float64)) {
				var ds []time.Duration
				for _, h := range s.rec.History {
					ds = append(ds, h.Held())
				}
				if len(ds) < MinBudgetHolds {
					return
				}
				slices.Sort(ds)
				add([]string{"0.5"}, Quantile(ds, 0.5).Seconds())
				add([]string{"0.9"}, Quantile(ds, 0.9).Seconds())
			}),
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	return e, nil
}

func unix(t time.Time) float64 { return float64(t.UnixMicro()) / 1e6 }

// historyKey tells apart the entries of a lock's history.
func historyKey(e record.HistoryEntry) string {
	return fmt.Sprintf("%s|%s|%s|%s", e.Identity, e.Since.UTC().Format(time.RFC3339Nano), e.Until.UTC().Format(time.RFC3339Nano), e.Ended)
}

func grantKey(g record.GrantEntry) string { return g.User + "|" + g.At.UTC().Format(time.RFC3339Nano) }

// ObserveLock implements Observer: it counts what changed since the
// lock's last version (the history's new holds, a new holder's wait, new
// waiters and grants) unless the lock is seen for the first time in the
// first list (initial), whose past is not counted.
func (e *Exporter) ObserveLock(cm *corev1.ConfigMap, initial bool) {
	rec, err := record.Decode(cm)
	if err != nil {
		return
	}
	key := cm.Namespace + "/" + cm.Name
	e.mu.Lock()
	defer e.mu.Unlock()
	s, known := e.locks[key]
	if !known {
		s = &lockState{namespace: cm.Namespace, target: rec.Target, seen: map[string]bool{}, grants: map[string]bool{}}
		e.locks[key] = s
	}
	ns, target := s.namespace, s.target
	count := known || !initial
	seen := make(map[string]bool, len(rec.History))
	for _, h := range rec.History {
		k := historyKey(h)
		seen[k] = true
		if !count || s.seen[k] {
			continue
		}
		e.hold.WithLabelValues(ns, target).Observe(h.Held().Seconds())
		e.ended.WithLabelValues(ns, target, EndingOf(h)).Inc()
		if h.Ended == record.EndHandedOver {
			e.handovers.WithLabelValues(ns, target).Inc()
		}
	}
	s.seen = seen
	grants := make(map[string]bool, len(rec.BreakGlass))
	for _, g := range rec.BreakGlass {
		k := grantKey(g)
		grants[k] = true
		if count && !s.grants[k] {
			e.grants.WithLabelValues(ns, target).Inc()
		}
	}
	s.grants = grants
	if count {
		known := map[string]bool{}
		if s.rec != nil {
			for _, w := range s.rec.Waiters {
				known[w.ClaimID] = true
			}
			known[s.rec.Holder.ClaimID] = true
		}
		for _, w := range rec.Waiters {
			if !known[w.ClaimID] {
				e.waiters.WithLabelValues(ns, target).Inc()
			}
		}
	}
	if h := rec.Holder; !rec.IsFree() && h.ClaimID != "" && h.ClaimID != s.holder {
		if count && h.Queued != nil {
			e.wait.WithLabelValues(ns, target).Observe(max(h.Since.Sub(h.Queued.Time), 0).Seconds())
		}
		s.holder = h.ClaimID
	}
	s.rec = rec
	s.enforced = cm.Annotations[record.EnforcedAnnotation]
	if s.enforced == "" {
		s.enforced = "none"
	}
	e.touch(ns, target)
}

// touch makes the counters of a lock exist at 0, so that a rate over them
// starts at its first event.
func (e *Exporter) touch(ns, target string) {
	e.hold.WithLabelValues(ns, target)
	e.wait.WithLabelValues(ns, target)
	for _, end := range Endings() {
		e.ended.WithLabelValues(ns, target, end)
	}
	e.handovers.WithLabelValues(ns, target)
	e.grants.WithLabelValues(ns, target)
	e.waiters.WithLabelValues(ns, target)
}

// ForgetLock implements Observer: the lock is gone, and its series with it.
func (e *Exporter) ForgetLock(cm *corev1.ConfigMap) {
	key := cm.Namespace + "/" + cm.Name
	e.mu.Lock()
	defer e.mu.Unlock()
	s, ok := e.locks[key]
	if !ok {
		return
	}
	delete(e.locks, key)
	e.hold.DeleteLabelValues(s.namespace, s.target)
	e.wait.DeleteLabelValues(s.namespace, s.target)
	for _, end := range Endings() {
		e.ended.DeleteLabelValues(s.namespace, s.target, end)
	}
	e.handovers.DeleteLabelValues(s.namespace, s.target)
	e.grants.DeleteLabelValues(s.namespace, s.target)
	e.waiters.DeleteLabelValues(s.namespace, s.target)
}
