package lock

import (
	"encoding/json"
	"slices"
	"time"

	"github.com/lockctl/lockctl/internal/base/schema"
)

// RunJobs is the lock's account of where lockctl run may have left jobs
// behind: the job namespaces a run holding the lock must look in (Pending),
// and those it need not (Swept), so that a run on a lock whose last
// holders cleaned up after themselves skips listing the jobs of its job
// namespace (docs/adr/0075-run-jobs-account.md). Added in record version
// 1.7.
//
// The account vouches for nothing unless the record's holder carries
// Claim.RunJobsKept: only lockctl run takes a lock keeping it, and a
// holder put in place by anyone else (lockctl acquire, the reconcile
// loop, a lockctl before 1.7, which keeps the field but not its meaning)
// has no such mark, so the next run looks. A namespace named nowhere is
// looked in.
type RunJobs struct {
	// Pending are the marks of runs that took or re-entered the lock and
	// submitted a job that is not known to have ended, or had to look for
	// jobs left behind and are not known to have finished looking. The
	// next run with a job namespace named here looks there.
	Pending []RunMark `json:"pending,omitempty"`
	// Swept are the job namespaces a run looked in, or was vouched for,
	// and left with no job of a run that held this lock behind: the next
	// run there need not look, while the holder carries RunJobsKept. At
	// most maxSwept, the oldest dropped first.
	Swept []string `json:"swept,omitempty"`

	// unknown keeps the fields of a newer minor version, written back as
	// they were.
	unknown map[string]json.RawMessage
}

// RunMark is one run's mark in RunJobs.Pending.
type RunMark struct {
	// Namespace is the run's job namespace.
	Namespace string `json:"namespace"`
	// ClaimID is the claim of the run that made the mark (its own, also
	// when it re-entered another's hold); its release removes the mark.
	ClaimID string `json:"session"`

	// unknown keeps the fields of a newer minor version, written back as
	// they were.
	unknown map[string]json.RawMessage
}

// maxSwept bounds RunJobs.Swept: a namespace dropped from it is only looked
// in once more.
const maxSwept = 16

var (
	runJobsFields = schema.Fields(RunJobs{})
	runMarkFields = schema.Fields(RunMark{})
)

// UnmarshalJSON decodes the account, keeping the fields it does not know.
func (rj *RunJobs) UnmarshalJSON(b []byte) error {
	type plain RunJobs
	var err error
	rj.unknown, err = schema.DecodeKeeping(b, (*plain)(rj), runJobsFields)
	return err
}

// MarshalJSON encodes the account with the unknown fields it was read with.
func (rj RunJobs) MarshalJSON() ([]byte, error) {
	type plain RunJobs
	return schema.EncodeKeeping(plain(rj), rj.unknown)
}

// UnmarshalJSON decodes a mark, keeping the fields it does not know.
func (m *RunMark) UnmarshalJSON(b []byte) error {
	type plain RunMark
	var err error
	m.unknown, err = schema.DecodeKeeping(b, (*plain)(m), runMarkFields)
	return err
}

// MarshalJSON encodes a mark with the unknown fields it was read with.
func (m RunMark) MarshalJSON() ([]byte, error) {
	type plain RunMark
	return schema.EncodeKeeping(plain(m), m.unknown)
}

// mustLookIn reports whether a lockctl run with job namespace ns that holds
// or takes the lock of rec (nil: there is no lock) must look there for
// jobs earlier runs left behind: unless rec's holder kept the account
// (Claim.RunJobsKept) and the account names ns swept and no run's mark is
// pending there.
func mustLookIn(rec *Record, ns string) bool {
	if rec == nil || !rec.Holder.RunJobsKept || rec.RunJobs == nil {
		return true
	}
	return rec.RunJobs.pendingIn(ns) || !slices.Contains(rec.RunJobs.Swept, ns)
}

func (rj *RunJobs) pendingIn(ns string) bool {
	return rj != nil && slices.ContainsFunc(rj.Pending, func(m RunMark) bool { return m.Namespace == ns })
}

// pending returns rj's pending marks; none for a nil account.
func (rj *RunJobs) pending() []RunMark {
	if rj == nil {
		return nil
	}
	return rj.Pending
}

func (rj *RunJobs) deepCopy() *RunJobs {
	if rj == nil {
		return nil
	}
	out := *rj
	out.Pending = slices.Clone(rj.Pending)
	out.Swept = slices.Clone(rj.Swept)
	return &out
}

// orNil returns rj with empty lists nil, or nil for an empty account with
// nothing else in it.
func (rj *RunJobs) orNil() *RunJobs {
	if rj == nil || (len(rj.Pending) == 0 && len(rj.Swept) == 0 && len(rj.unknown) == 0) {
		return nil
	}
	if len(rj.Pending) == 0 {
		rj.Pending = nil
	}
	if len(rj.Swept) == 0 {
		rj.Swept = nil
	}
	return rj
}

// mark adds claim's pending mark in ns. With replace, the marks of others
// in ns go: the taker of the lock looks there, which covers them.
func (rj *RunJobs) mark(ns, claim string, replace bool) {
	rj.Swept = slices.DeleteFunc(rj.Swept, func(s string) bool { return s == ns })
	rj.Pending = slices.DeleteFunc(rj.Pending, func(m RunMark) bool {
		return m.Namespace == ns && (replace || m.ClaimID == claim)
	})
	rj.Pending = append(rj.Pending, RunMark{Namespace: ns, ClaimID: claim})
}

// done removes claim's mark in ns, and names ns swept unless another
// run's mark is pending there.
func (rj *RunJobs) done(ns, claim string) {
	rj.Pending = slices.DeleteFunc(rj.Pending, func(m RunMark) bool { return m.Namespace == ns && m.ClaimID == claim })
	if rj.pendingIn(ns) || slices.Contains(rj.Swept, ns) {
		return
	}
	rj.Swept = append(rj.Swept, ns)
	if n := len(rj.Swept) - maxSwept; n > 0 {
		rj.Swept = slices.Clone(rj.Swept[n:])
	}
}

// RunJobsRequest makes a contender a lockctl run that keeps the lock's
// account of where runs left jobs (RunJobs). The zero value is a contender
// that does not keep it (lockctl acquire, the reconcile loop): a lock it
// takes vouches for nothing until a run has looked again.
type RunJobsRequest struct {
	// Namespace is the run's job namespace, where it would look for jobs
	// earlier runs left behind.
	Namespace string
	// SubmitsJob says the run submits a job there while it holds the lock
	// (lockctl run -f): its write that takes the lock marks the namespace,
	// until its release says the job ended (ReleaseOptions.RunJobsDone).
	SubmitsJob bool
}

// keeps reports whether the request keeps the account.
func (r RunJobsRequest) keeps() bool { return r.Namespace != "" }

// takeRunJobs is the rule of the account for contender me, of request r,
// that the decision d on cur (nil: no lock) leaves holding the lock: it
// changes d's record, writing one for a re-entered hold if it must, and
// reports whether me must look for jobs left behind (mustLookIn on cur) and
// the mark it left pending ("" for none).
//
// A run that takes the lock makes its claim the holder with RunJobsKept,
// keeping the account if cur's holder kept it, else starting a new one
// (what a holder that did not keep it vouched for is void). It marks its
// namespace when it must look there (its look covers the marks of others
// there, which it replaces) or submits a job. A run that re-enters a hold
// that keeps the account marks its namespace in the same cases, beside the
// others; one that re-enters a hold that does not keep it writes nothing.
// Any other contender that takes the lock drops the account.
func takeRunJobs(cur *Record, d *Decision, me Claim, r RunJobsRequest, now time.Time) (mustLook bool, marked string) {
	if d.Outcome != Acquired {
		return false, ""
	}
	// NOTE: confirming a hand-over (ADR 0074) takes the lock as a
	// take-over does: the hold began with the hand-over.
	took := (d.TookOver || d.Confirmed) && d.Record != nil
	if !r.keeps() {
		if took {
			d.Record.RunJobs = nil
		}
		return true, ""
	}
	mustLook = mustLookIn(cur, r.Namespace)
	mark := mustLook || r.SubmitsJob
	switch {
	case took:
		var rj *RunJobs
		if cur != nil && cur.Holder.RunJobsKept {
			rj = cur.RunJobs.deepCopy()
		}
		if rj == nil {
			rj = &RunJobs{}
		}
		if mark {
			rj.mark(r.Namespace, me.ClaimID, true)
			marked = me.ClaimID
		}
		d.Record.RunJobs = rj.orNil()
		d.Record.Holder.RunJobsKept = true
	case cur != nil && cur.Holder.RunJobsKept && mark:
		// NOTE: a hold re-entered (or already held) keeps its account; the
		// run's own mark goes beside the holder's.
		if d.Record == nil {
			d.Record = cur.deepCopy()
			d.Record.Updated = later(now, cur.Updated)
		}
		rj := d.Record.RunJobs.deepCopy()
		if rj == nil {
			rj = &RunJobs{}
		}
		rj.mark(r.Namespace, me.ClaimID, false)
		d.Record.RunJobs = rj.orNil()
		marked = me.ClaimID
	}
	return mustLook, marked
}

// releaseRunJobs is the rule of the account at the release of rec's holder:
// a holder that kept it leaves it to the next (Record.free and handOver
// pass RunJobsKept on), with the releasing run's mark removed and its
// namespace named swept when o says its job ended and nothing was left
// behind; a holder that did not keep it leaves none.
func releaseRunJobs(rec *Record, o ReleaseOptions) {
	if !rec.Holder.RunJobsKept {
		rec.RunJobs = nil
		return
	}
	if !o.RunJobsDone || o.runJobs.Namespace == "" || rec.RunJobs == nil {
		// NOTE: an account the run took the lock with is never empty (its
		// mark, or the namespace swept); one emptied since says nothing.
		return
	}
	rj := rec.RunJobs.deepCopy()
	rj.done(o.runJobs.Namespace, o.runMark)
	rec.RunJobs = rj.orNil()
}
