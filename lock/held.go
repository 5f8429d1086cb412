package lock

import (
	"context"
	"sync"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/types"
)

// Held is a lock the caller holds.
type Held struct {
	// Context is the kubeconfig context of the lock's cluster in a hold
	// across clusters (Options.Context); "" for one cluster.
	Context   string
	Target    string
	Namespace string
	Name      string
	UID       types.UID
	// ClaimID is the holder's claim (Claim.ClaimID).
	ClaimID string
	Holder  record.Claim
	// Token grows with every new holder of any lock in the cluster: it is the
	// resourceVersion of the write that made the caller the holder, also
	// kept in the record (Claim.Token) for re-entrant acquires.
	Token string
	// Waited is how long the caller waited.
	Waited time.Duration
	// IgnoredFreeze is the freeze the caller took the lock in spite of
	// (Request.IgnoreFreeze); nil when the lock was not frozen.
	IgnoredFreeze *record.Freeze
	// Reentered is true when the caller's build already held the lock (the
	// same identity, CI job and pod, or no pod; see sameHolder): nothing
	// changed, and Token is the token of that hold, unless that hold was
	// handed to the build and not yet confirmed, which the caller took.
	// Either way the hold is the process's that took it: ReleaseHeld
	// leaves it held, and renewals never shorten it.
	Reentered bool
	// Vouched is true when the caller's Request.Ledger found that nothing
	// earlier holders left behind needs a look (for lockctl run, no job in
	// its job namespace: runjobs.MustLook). False (the zero value, and
	// always without a Ledger) means look.
	Vouched bool

	// last is the version of the lock this hold last wrote or read, so
	// ReleaseHeld may write on it without reading the lock first.
	last *lastSeen
	// ledger and ledgerMark are the caller's Request.Ledger and the mark
	// its acquisition left in it ("" for none), for ReleaseHeld.
	ledger     Ledger
	ledgerMark string
	// events is closed once the Events of the acquisition are recorded;
	// nil when they were recorded before Acquire returned.
	events <-chan struct{}
	// watching is the watch of the lock kept while it is held (see
	// Acquire); nil when none.
	watching *heldWatch
	// confirming is the background confirmation of a hold that began with
	// a hand-over (see Confirm); nil for any other hold.
	confirming *confirmation
}

// Where names the lock for messages: its target, or CONTEXT/TARGET in a
// hold across clusters.
func (h *Held) Where() string { return Where(h.Context, h.Target) }

// WaitEvents waits, as long as ctx allows, until the Events of the
// acquisition are recorded (see Acquire).
func (h *Held) WaitEvents(ctx context.Context) {
	if h == nil || h.events == nil {
		return
	}
	select {
	case <-h.events:
	case <-ctx.Done():
	}
}

// lastSeen is a version of the lock, safe for concurrent use.
type lastSeen struct {
	mu sync.Mutex
	cm *corev1.ConfigMap
	// changed is closed, and replaced, when cm changes; nil until asked for.
	changed chan struct{}
}

// remember keeps cm as the version of the lock h last saw.
func (h *Held) remember(cm *corev1.ConfigMap) {
	if h == nil || h.last == nil || cm == nil {
		return
	}
	h.last.mu.Lock()
	defer h.last.mu.Unlock()
	if h.last.cm == nil || h.last.cm.UID != cm.UID || !rvOlder(cm.ResourceVersion, h.last.cm.ResourceVersion) {
		h.last.cm = cm
		if h.last.changed != nil {
			close(h.last.changed)
			h.last.changed = nil
		}
	}
}

// lastCM returns the version of the lock h last saw, nil if none.
func (h *Held) lastCM() *corev1.ConfigMap {
	if h == nil || h.last == nil {
		return nil
	}
	h.last.mu.Lock()
	defer h.last.mu.Unlock()
	return h.last.cm
}
