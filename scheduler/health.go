package scheduler

// HasSynced reports whether the controller's informers have filled their
// caches with a first list of the job records, the admission ledger and the
// pods of every build cluster. Until then the controller has looked at no
// job: a readiness probe reports it not ready.
func (c *Controller) HasSynced() bool {
	if !c.jobInf.HasSynced() || !c.ledgerInf.HasSynced() {
		return false
	}
	for _, inf := range c.podInfs {
		if !inf.HasSynced() {
			return false
		}
	}
	return true
}
