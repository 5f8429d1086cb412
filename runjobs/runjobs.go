// Package runjobs is lockctl run's account of where runs may have left
// jobs behind, kept in the record of each lock a run holds
// (docs/adr/0075-run-jobs-account.md): the job namespaces a run holding the
// lock must look in (Pending), and those it need not (Swept), so that a
// run on a lock whose last holders cleaned up after themselves skips
// listing the jobs of its job namespace.
//
// Package lock stores the account in the record's runJobs field without
// reading it, and passes it on with the hold while the holder carries
// lock.Claim.LedgerKept (the record's runJobsKept). What goes into it is
// decided here, by a Keeper: the hook lockctl run hands lock as its
// lock.Request.Ledger (docs/adr/0095-lock-front-door.md). A holder put in
// place by any other contender (lockctl acquire, the reconcile loop, a
// lockctl before record version 1.7) keeps no account, so the next run
// looks.
package runjobs

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/lockctl/lockctl/internal/base/schema"
)

// Account is the lock's account of run jobs, the runJobs field of its
// record. Added in record version 1.7.
type Account struct {
	// Pending are the marks of runs that took or re-entered the lock and
	// submitted a job that is not known to have ended, or had to look for
	// jobs left behind and are not known to have finished looking. The
	// next run with a job namespace named here looks there.
	Pending []Mark `json:"pending,omitempty"`
	// Swept are the job namespaces a run looked in, or was vouched for,
	// and left with no job of a run that held this lock behind: the next
	// run there need not look, while the holder keeps the account. At
	// most MaxSwept, the oldest dropped first.
	Swept []string `json:"swept,omitempty"`

	// unknown keeps the fields of a newer minor version, written back as
	// they were.
	unknown map[string]json.RawMessage
}

// Mark is one run's mark in Account.Pending.
type Mark struct {
	// Namespace is the run's job namespace.
	Namespace string `json:"namespace"`
	// ClaimID is the claim of the run that made the mark (its own, also
	// when it re-entered another's hold); its release removes the mark.
	ClaimID string `json:"session"`

	// unknown keeps the fields of a newer minor version, written back as
	// they were.
	unknown map[string]json.RawMessage
}

// MaxSwept bounds Account.Swept: a namespace dropped from it is only
// looked in once more.
const MaxSwept = 16

// accountFields and markFields are the types' JSON fields, found by
// reflection on first use.
var (
	accountFields schema.FieldSet[Account]
	markFields    schema.FieldSet[Mark]
)

// UnmarshalJSON decodes the account, keeping the fields it does not know.
func (a *Account) UnmarshalJSON(b []byte) error {
	type plain Account
	var err error
	a.unknown, err = schema.DecodeKeeping(b, (*plain)(a), accountFields.Get())
	return err
}

// MarshalJSON encodes the account with the unknown fields it was read with.
func (a Account) MarshalJSON() ([]byte, error) {
	type plain Account
	return schema.EncodeKeeping(plain(a), a.unknown)
}

// UnmarshalJSON decodes a mark, keeping the fields it does not know.
func (m *Mark) UnmarshalJSON(b []byte) error {
	type plain Mark
	var err error
	m.unknown, err = schema.DecodeKeeping(b, (*plain)(m), markFields.Get())
	return err
}

// MarshalJSON encodes a mark with the unknown fields it was read with.
func (m Mark) MarshalJSON() ([]byte, error) {
	type plain Mark
	return schema.EncodeKeeping(plain(m), m.unknown)
}

// Decode decodes the account stored in a record; nil for none.
func Decode(raw json.RawMessage) (*Account, error) {
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	a := &Account{}
	if err := json.Unmarshal(raw, a); err != nil {
		return nil, fmt.Errorf("decode the account of run jobs: %w", err)
	}
	return a, nil
}

// Encode encodes a to store in a record: nil for an empty account with
// nothing else in it, which a record leaves out.
func (a *Account) Encode() (json.RawMessage, error) {
	if a = a.orNil(); a == nil {
		return nil, nil
	}
	raw, err := json.Marshal(a)
	if err != nil {
		return nil, fmt.Errorf("encode the account of run jobs: %w", err)
	}
	return raw, nil
}

// MustLook reports whether a lockctl run with job namespace ns that holds
// or takes a lock whose record has the account a must look there for jobs
// earlier runs left behind: unless the record's holder kept the account
// (kept) and it names ns swept and no run's mark is pending there.
func MustLook(a *Account, kept bool, ns string) bool {
	if !kept || a == nil {
		return true
	}
	return a.PendingIn(ns) || !slices.Contains(a.Swept, ns)
}

// PendingIn reports whether a run's mark is pending in ns.
func (a *Account) PendingIn(ns string) bool {
	return a != nil && slices.ContainsFunc(a.Pending, func(m Mark) bool { return m.Namespace == ns })
}

// orNil returns a with empty lists nil, or nil for an empty account with
// nothing else in it.
func (a *Account) orNil() *Account {
	if a == nil || (len(a.Pending) == 0 && len(a.Swept) == 0 && len(a.unknown) == 0) {
		return nil
	}
	if len(a.Pending) == 0 {
		a.Pending = nil
	}
	if len(a.Swept) == 0 {
		a.Swept = nil
	}
	return a
}

// mark adds claim's pending mark in ns. With replace, the marks of others
// in ns go: the taker of the lock looks there, which covers them.
func (a *Account) mark(ns, claim string, replace bool) {
	a.Swept = slices.DeleteFunc(a.Swept, func(s string) bool { return s == ns })
	a.Pending = slices.DeleteFunc(a.Pending, func(m Mark) bool {
		return m.Namespace == ns && (replace || m.ClaimID == claim)
	})
	a.Pending = append(a.Pending, Mark{Namespace: ns, ClaimID: claim})
}

// done removes claim's mark in ns, and names ns swept unless another
// run's mark is pending there.
func (a *Account) done(ns, claim string) {
	a.Pending = slices.DeleteFunc(a.Pending, func(m Mark) bool { return m.Namespace == ns && m.ClaimID == claim })
	if a.PendingIn(ns) || slices.Contains(a.Swept, ns) {
		return
	}
	a.Swept = append(a.Swept, ns)
	if n := len(a.Swept) - MaxSwept; n > 0 {
		a.Swept = slices.Clone(a.Swept[n:])
	}
}

// Keeper is a lockctl run's side of the account, the lock.Ledger it hands
// package lock with each of its lock requests. The zero value keeps
// nothing; a run gives its job namespace.
type Keeper struct {
	// Namespace is the run's job namespace, where it would look for jobs
	// earlier runs left behind.
	Namespace string
	// SubmitsJob says the run submits a job there while it holds the lock
	// (lockctl run -f): its write that takes the lock marks the namespace,
	// until its release says the job ended (Done).
	SubmitsJob bool
	// Done, set by the run before it releases its locks, says its job, if
	// any, has ended and nothing is left behind in Namespace: it looked
	// there and aborted every job left behind, or did not have to look
	// (lock.Held.Vouched). The release then removes the run's mark and
	// names the namespace swept. False leaves the mark for the next run
	// to look.
	Done bool
}

// Take is the rule of the account for the run k when a decision leaves its
// claim claimID holding the lock: cur is the account of the record read
// and kept whether that record's holder kept it, took says the run takes
// the lock (a take-over, or the confirmation of a hand-over to it) rather
// than re-entering a hold. It returns the account to store and whether to
// store it, whether the run must look for jobs left behind (MustLook on
// cur), and whether it left a mark its release removes.
//
// A run that takes the lock keeps cur if its holder kept it, else starts
// a new one (what a holder that did not keep it vouched for is void). It
// marks its namespace when it must look there (its look covers the marks
// of others there, which it replaces) or submits a job. A run that
// re-enters a hold that keeps the account marks its namespace in the same
// cases, beside the others; one that re-enters a hold that does not keep
// it stores nothing.
func (k *Keeper) Take(cur json.RawMessage, kept, took bool, claimID string) (next json.RawMessage, store, mustLook, marked bool, err error) {
	a, err := Decode(cur)
	if err != nil {
		return nil, false, false, false, err
	}
	mustLook = MustLook(a, kept, k.Namespace)
	mark := mustLook || k.SubmitsJob
	switch {
	case took:
		if !kept || a == nil {
			a = &Account{}
		}
		if mark {
			a.mark(k.Namespace, claimID, true)
		}
	case kept && mark:
		// NOTE: a hold re-entered (or already held) keeps its account; the
		// run's own mark goes beside the holder's.
		if a == nil {
			a = &Account{}
		}
		a.mark(k.Namespace, claimID, false)
	default:
		return cur, false, mustLook, false, nil
	}
	next, err = a.Encode()
	return next, true, mustLook, mark, err
}

// Release is the rule of the account at the end of the run k's hold (or
// re-entrance) of a lock whose holder kept the account cur: when the run
// is Done, the mark its take left (claimID; "" for none) goes and its
// namespace is named swept. It returns the account to store, and whether
// the run's mark was still in it.
func (k *Keeper) Release(cur json.RawMessage, claimID string) (next json.RawMessage, marked bool, err error) {
	if !k.Done || k.Namespace == "" || len(cur) == 0 {
		// NOTE: an account the run took the lock with is never empty (its
		// mark, or the namespace swept); one emptied since says nothing.
		return cur, false, nil
	}
	a, err := Decode(cur)
	if err != nil || a == nil {
		return cur, false, err
	}
	marked = claimID != "" && slices.ContainsFunc(a.Pending, func(m Mark) bool { return m.Namespace == k.Namespace && m.ClaimID == claimID })
	a.done(k.Namespace, claimID)
	next, err = a.Encode()
	return next, marked, err
}
