package scheduler

// HasSynced reports whether the controller's informers have filled their
// caches with a first list of the job records and the admission ledger, and
// every build cluster has been tried once: its pods listed, or it recorded
// unreachable (its jobs wait; the others are driven). Until then the
// controller has not looked at every job it could: a readiness probe
// reports it not ready.
func (c *Controller) HasSynced() bool {
	if !c.jobInf.HasSynced() || !c.ledgerInf.HasSynced() {
		return false
	}
	for _, cc := range c.conns {
		cc.mu.Lock()
		tried := cc.status.State != ""
		cc.mu.Unlock()
		if !cc.ready.Load() && !tried {
			return false
		}
	}
	return true
}
