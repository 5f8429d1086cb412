package scheduler

import (
	"sync/atomic"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/metrics"
)

// jobsCollector counts the jobs of the reconciler's view when scraped, so the
// gauge is never out of step with the cache.
type jobsCollector struct {
	*metrics.Func
	each atomic.Pointer[func(add func(state job.State, name string, typ job.Type))]
}

func newJobsCollector() *jobsCollector {
	c := &jobsCollector{}
	c.Func = metrics.NewGaugeFunc("lockctl_jobs", "Jobs known to the reconciler, by state, job name and type.",
		[]string{"state", "job", "type"}, c.collect)
	return c
}

func (c *jobsCollector) collect(add func(labelValues []string, v float64)) {
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
		add([]string{k.state, k.name, k.typ}, float64(n))
	}
}
