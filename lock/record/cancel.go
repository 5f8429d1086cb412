package record

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CancelRequest is a newer build's request that the holder, an older
// lockctl run of its branch, stop what it runs and release the lock
// (run --cancel-in-progress, docs/adr/0026-cancel-in-progress.md). Added
// in record version 1.5.
type CancelRequest struct {
	// Identity is the build that asked; it holds the lock next.
	Identity `json:",inline"`
	// ClaimID is the asking contender's claim, to find it in the queue
	// (stored as "session").
	ClaimID string `json:"session"`
	// At is when it asked (record time).
	At metav1.MicroTime `json:"at"`
}

// cancelAsker returns the waiter that asked the holder to stop, when it
// still waits; it takes the place of the run it replaces.
func (r *Record) cancelAsker() *Claim {
	req := r.Holder.CancelRequest
	if req == nil || r.Unheld() {
		return nil
	}
	for _, w := range r.Waiters {
		if w.ClaimID == req.ClaimID {
			w := w
			return &w
		}
	}
	return nil
}

// asksToCancel reports whether contender me, with cancel-in-progress,
// asks holder h to stop: h is a run that can be asked (Cancelable), an
// older build of me's branch (both ordered: local identities never ask nor
// are asked), and no build at least as new as me asked it already.
func asksToCancel(h, me Claim) bool {
	if !me.CancelInProgress || !h.Cancelable || h.ClaimID == me.ClaimID || !competes(h, me) || buildOf(h) >= buildOf(me) {
		return false
	}
	if r := h.CancelRequest; r != nil {
		if r.ClaimID == me.ClaimID {
			return false
		}
		if n, _ := r.buildNumber(); n >= buildOf(me) {
			return false
		}
	}
	return true
}
