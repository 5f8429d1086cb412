package record

import (
	"encoding/json"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// MaxHistory is how many past holds a lock record keeps: the oldest go
// first. Each entry is a few hundred bytes of the record's one annotation
// (about 280 with identities of usual length, 1.3 KB at the longest), so
// the history of a busy lock is some 28 KB of it; statistics and wait
// estimates are made from it (docs/adr/0101-a-history-of-100-holds.md).
// Before record version 1.9 it was 20.
const MaxHistory = 100

// KeptHistory is how many past holds a queue that grows never takes the
// room of: a contender whose joining would make the record larger than
// MaxQueueBytes drops the oldest holds beyond these first, and is refused
// only when the record is still too large (ADR 0090's bound, which
// counted a history of 20).
const KeptHistory = 20

// HistoryEntryBytes is the most bytes a history entry takes (identities
// of the longest length): dropping one frees at most this much.
const HistoryEntryBytes = 1400

// Ending says how a hold of the lock ended.
type Ending string

const (
	// EndReleased: the holder released the lock and nobody waited.
	EndReleased Ending = "released"
	// EndHandedOver: the holder released the lock to the first waiter (By).
	EndHandedOver Ending = "handedOver"
	// EndBroken: someone else (By) broke the hold with release --force.
	EndBroken Ending = "broken"
	// EndExpired: the holder's expiry passed without a renewal and a
	// contender removed it.
	EndExpired Ending = "expired"
	// EndLost: the holder's pod was gone, finished, replaced or lost with
	// its node (Reason says which) and a contender removed it.
	EndLost Ending = "lost"
	// EndRanAgain: the holder's CI job ran again (a re-run or retry, By)
	// and its new run took over the hold (Reason names the job). Added in
	// record version 1.6.
	EndRanAgain Ending = "ranAgain"
)

// HistoryEntry is one past hold of a lock. Added in record version 1.3.
type HistoryEntry struct {
	// Identity is the build that held the lock.
	Identity `json:",inline"`
	// Pod is the pod the holder ran in, if any.
	Pod *PodRef `json:"pod,omitempty"`
	// Since and Until are when the hold started and ended, as the record's
	// times (which never go backwards).
	Since metav1.MicroTime `json:"since"`
	Until metav1.MicroTime `json:"until"`
	// Ended says how the hold ended.
	Ended Ending `json:"ended"`
	// By is who took part in the end: the waiter the lock was handed to,
	// or who broke it.
	By string `json:"by,omitempty"`
	// Reason says why a holder was removed as stale, for people ("pod
	// ci/build-7 is gone").
	Reason string `json:"reason,omitempty"`
	// IgnoredFreeze is the freeze the holder took the lock in spite of
	// (--ignore-freeze), as Freeze.Describe renders it. Added in record
	// version 1.4.
	IgnoredFreeze string `json:"ignoredFreeze,omitempty"`
	// Queued is when the holder joined the queue: Since - Queued is how
	// long it waited for the hold (0 when it took a free lock). Nil for
	// holds written before record version 1.9, or by an older lockctl,
	// whose wait is not known. Added in record version 1.9.
	Queued *metav1.MicroTime `json:"queued,omitempty"`
	// SupersededBy is the newer build of the holder's branch that had asked
	// it to stop (run --cancel-in-progress) when the hold ended. Added in
	// record version 1.9.
	SupersededBy string `json:"supersededBy,omitempty"`

	// unknown keeps the fields of a newer minor version, written back as
	// they were.
	unknown map[string]json.RawMessage
}

// Describe renders how the hold ended, for people: "handed over to X",
// "broken by X", "expired", "lost: pod ci/build-7 is gone".
func (h HistoryEntry) Describe() string {
	switch h.Ended {
	case EndHandedOver:
		return "handed over to " + printable(h.By)
	case EndBroken:
		return "broken by " + printable(h.By)
	case EndRanAgain:
		return "taken over by " + printable(h.By) + ", a new run of its job"
	case EndExpired, EndLost:
		if h.Reason != "" {
			return string(h.Ended) + ": " + printable(h.Reason)
		}
	case EndReleased:
	default:
		return printable(string(h.Ended))
	}
	return string(h.Ended)
}

// Ended appends the end of h's hold at ts to the history, dropping the
// oldest entries beyond MaxHistory. A free lock's placeholder holder is no
// hold and is not recorded.
func (r *Record) Ended(h Claim, ts metav1.MicroTime, how Ending, by, reason string) {
	if h.Released {
		return
	}
	e := HistoryEntry{
		Identity: h.Identity, Pod: h.Pod, Since: h.Since, Until: ts, Ended: how, By: by, Reason: reason,
		IgnoredFreeze: h.IgnoredFreeze, Queued: h.Queued,
	}
	if h.CancelRequest != nil {
		e.SupersededBy = h.CancelRequest.Identity.String()
	}
	r.History = append(r.History, e)
	if n := len(r.History) - MaxHistory; n > 0 {
		r.History = append([]HistoryEntry(nil), r.History[n:]...)
	}
}

// Free makes the lock free at ts, kept for its history: the holder becomes
// a placeholder without a pod whose expiry is ts, which every lockctl of
// this major version takes over. The placeholder keeps the ledger (the
// account of run jobs) if the holder did (Claim.LedgerKept).
func (r *Record) Free(ts metav1.MicroTime) {
	r.Holder = Claim{
		Identity: Identity{Owner: "lockctl", Repo: "free", Branch: "free", Build: "0"},
		ClaimID:  "released",
		Since:    ts,
		Expires:  &ts,
		Released: true,
		// The ledger passes on to the free lock (Ledger).
		LedgerKept: r.Holder.LedgerKept,
	}
	r.Waiters = nil
}

// IsFree reports whether the record is a free lock kept for its history.
func (r *Record) IsFree() bool { return r.Holder.Released }

// KindLockHistory is the kind of the History objects `lockctl history -o`
// prints.
const KindLockHistory = "LockHistory"

// History is what `lockctl history` shows of a lock: a Kubernetes-style
// object (apiVersion, kind and metadata naming the lock, so that -o name
// and templates read it as kubectl's do) with the holds.
type History struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`

	// Context is the kubeconfig context of the lock's cluster when it was
	// read as one of several (lockctl history --contexts); "" otherwise.
	Context string `json:"context,omitempty"`
	Target  string `json:"target"`
	// Holder is the current hold; nil when the lock is free.
	Holder *CurrentHold `json:"holder,omitempty"`
	// Entries are the past holds, newest first.
	Entries []HistoryEntry `json:"entries"`
}

// CurrentHold is the current hold of a lock, as History shows it.
type CurrentHold struct {
	Identity `json:",inline"`
	Pod      *PodRef           `json:"pod,omitempty"`
	Since    metav1.MicroTime  `json:"since"`
	Expires  *metav1.MicroTime `json:"expires,omitempty"`
}

// Fill sets h's holder and entries, newest first, from rec.
func (h *History) Fill(rec *Record) {
	if !rec.IsFree() {
		c := rec.Holder
		h.Holder = &CurrentHold{Identity: c.Identity, Pod: c.Pod, Since: c.Since, Expires: c.Expires}
	}
	for i := len(rec.History) - 1; i >= 0; i-- {
		h.Entries = append(h.Entries, rec.History[i])
	}
}

// Wait is how long the holder waited for the hold: from joining the queue
// to taking the lock. ok is false when the entry does not say (written
// before record version 1.9, or by an older lockctl).
func (h HistoryEntry) Wait() (d time.Duration, ok bool) {
	if h.Queued == nil || h.Queued.IsZero() {
		return 0, false
	}
	return max(h.Since.Sub(h.Queued.Time), 0), true
}

// Held is how long the hold lasted.
func (h HistoryEntry) Held() time.Duration { return max(h.Until.Sub(h.Since.Time), 0) }

// StaleEnding says how a holder judged not alive for why ended.
func StaleEnding(h Claim) Ending {
	if h.Pod == nil {
		return EndExpired
	}
	return EndLost
}

func IsFree(cm *corev1.ConfigMap) bool {
	if cm == nil {
		return false
	}
	rec, err := Decode(cm)
	return err == nil && Idle(rec)
}

// Idle reports whether rec is free with nobody waiting and no freeze.
//
// NOTE: a frozen free lock, or one with waiters, is still a lock to show
// and to wait for.
func Idle(rec *Record) bool {
	return rec.IsFree() && rec.Freeze == nil && len(rec.Waiters) == 0
}
