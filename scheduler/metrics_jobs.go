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
	each atomic.Pointer[func(add func(state job.State, name string, typ job.Type))]
}

var _ prometheus.Collector = (*jobsCollector)(nil)

// Describe implements prometheus.Collector.
func (c *jobsCollector) Describe(ch chan<- *prometheus.Desc) { ch <- c.desc }

// Collect implements prometheus.Collector.
func (c *jobsCollector) Collect(ch chan<- prometheus.Metric) {
	each := c.each.Load()
	if each == nil {
		return
	}
	type key struct{ state, name, typ string }
	counts := map[key]int{}
	(*each)(func(state job.State, name string, typ job.Type) {
		counts[key{string(state), name, string(typ)}]++
	})
	for k, n := range counts {
		ch <- prometheus.MustNewConstMetric(c.desc, prometheus.GaugeValue, float64(n), k.state, k.name, k.typ)
	}
}
