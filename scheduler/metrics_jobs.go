package scheduler

import (
	"sync/atomic"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/lockctl/lockctl/job"
)

// jobsCollector counts the jobs of the reconciler's view when scraped, so the
// gauge is never out of step with the cache.
type jobsCollector struct {
	desc *prometheus.Desc
	list atomic.Pointer[func() []*job.Job]
}

var _ prometheus.Collector = (*jobsCollector)(nil)

// Describe implements prometheus.Collector.
func (c *jobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *jobsCollector) Collect(ch chan<- prometheus.Metric) {
	list := c.list.Load()
	if list == nil {
		return
	}
	type key struct{ state, name, typ string }
	counts := map[key]int{}
	for _, j := range (*list)() {
		counts[key{string(j.Status.State), j.Spec.Job, string(j.Spec.Type)}]++
	}
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k.state, k.name, k.typ)
	}
}
