package lock

import (
	"encoding/json"
	"time"

	"github.com/lockctl/lockctl/lock/record"
)

// Ledger is the hook through which a contender keeps its own bookkeeping
// in the lock's record beside its hold (Request.Ledger): lockctl run's
// account of where runs may have left jobs behind (package runjobs,
// docs/adr/0075-run-jobs-account.md). lock stores what the Ledger gives in
// the record (Record.Ledger) without reading it, and keeps it only while
// the holder carries Claim.LedgerKept: a contender with a Ledger that takes
// the lock sets it, a release or a hand-over to a Cancelable contender
// passes it on, and any other contender that takes the lock drops the
// ledger (docs/adr/0095-lock-front-door.md).
type Ledger interface {
	// Take is the ledger's rule when a decision leaves the contender, of
	// claim claimID, holding the lock: cur is the ledger of the record
	// read and kept whether that record's holder kept it; took says the
	// contender takes the lock (a take-over, or the confirmation of a
	// hand-over to it) rather than re-entering a hold. It returns the
	// ledger to store and whether to store it, whether the contender must
	// look for what earlier holders left behind (Request.Callbacks.OnTaking is
	// called, Held.Vouched is false), and whether it left a mark for its
	// release (Release) to clear.
	Take(cur json.RawMessage, kept, took bool, claimID string) (next json.RawMessage, store, mustLook, marked bool, err error)
	// Release is the ledger's rule when the contender's hold, or its
	// re-entrance of another's, ends and the holder kept the ledger cur:
	// mark is the contender's claim when its Take left a mark, "" when it
	// did not. It returns the ledger to store, and whether the mark was
	// still in it.
	Release(cur json.RawMessage, mark string) (next json.RawMessage, marked bool, err error)
}

// takeLedger is the rule of the ledger for contender me, keeping ledger l
// (nil: none), that the decision d on cur (nil: no lock) leaves holding
// the lock: it changes d's record, writing one for a re-entered hold if l
// says to store, and reports whether me must look for what earlier
// holders left behind and the mark it left ("" for none). A contender
// without a ledger must look, and drops the ledger of a lock it takes.
func takeLedger(cur *record.Record, d *record.Decision, me record.Claim, l Ledger, now time.Time) (mustLook bool, mark string, err error) {
	if d.Outcome != record.Acquired {
		return false, "", nil
	}
	// NOTE: confirming a hand-over (ADR 0074) takes the lock as a
	// take-over does: the hold began with the hand-over.
	took := (d.TookOver || d.Confirmed) && d.Record != nil
	if l == nil {
		if took {
			d.Record.Ledger = nil
		}
		return true, "", nil
	}
	var (
		prev json.RawMessage
		kept bool
	)
	if cur != nil {
		prev, kept = cur.Ledger, cur.Holder.LedgerKept
	}
	if !took && d.Record != nil {
		prev = d.Record.Ledger
	}
	next, store, mustLook, marked, err := l.Take(prev, kept, took, me.ClaimID)
	if err != nil {
		return false, "", err
	}
	if marked {
		mark = me.ClaimID
	}
	switch {
	case took:
		d.Record.Ledger = next
		d.Record.Holder.LedgerKept = true
	case store:
		if d.Record == nil {
			d.Record = cur.DeepCopy()
			d.Record.Updated = record.Later(now, cur.Updated)
		}
		d.Record.Ledger = next
	}
	return mustLook, mark, nil
}

// releaseLedger is the rule of the ledger at the release of rec's holder: a
// holder that kept it leaves it to the next (Record.free and HandOver pass
// LedgerKept on), as the releasing contender's ledger o.ledger (nil: none)
// leaves it; a holder that did not keep it leaves none. A ledger the
// releasing contender cannot read stays as it is.
func releaseLedger(rec *record.Record, o ReleaseOptions) {
	if !rec.Holder.LedgerKept {
		rec.Ledger = nil
		return
	}
	if o.ledger == nil || rec.Ledger == nil {
		return
	}
	if next, _, err := o.ledger.Release(rec.Ledger, o.ledgerMark); err == nil {
		rec.Ledger = next
	}
}
