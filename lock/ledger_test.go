package lock

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/runjobs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// The account of run jobs, as lock's tests see it: the Ledger lockctl run
// gives (runjobs.Keeper), and what it keeps in a record.
type (
	account = runjobs.Account
	runMark = runjobs.Mark
)

// keeper is the Ledger of a run with job namespace ns.
func keeper(ns string, submits bool) *runjobs.Keeper {
	return &runjobs.Keeper{Namespace: ns, SubmitsJob: submits}
}

// ledgerOf is k as a Ledger; nil for no keeper.
func ledgerOf(k *runjobs.Keeper) Ledger {
	if k == nil {
		return nil
	}
	return k
}

// kept is rec with its holder keeping the account of run jobs rj.
func kept(rec *record.Record, rj *account) *record.Record {
	rec.Holder.LedgerKept = true
	raw, err := rj.Encode()
	if err != nil {
		panic(err)
	}
	rec.Ledger = raw
	return rec
}

// accountOf is the account of run jobs rec keeps; nil for none.
func accountOf(t *testing.T, rec *record.Record) *account {
	t.Helper()
	rj, err := runjobs.Decode(rec.Ledger)
	require.NoError(t, err)
	return rj
}

func freedBy(holder record.Claim) *record.Record {
	rec := recordOf(holder)
	rec.Free(rec.Updated)
	return rec
}

func pending(ns, claim string) runMark { return runMark{Namespace: ns, ClaimID: claim} }

// TestMustLook is the rule of "must I look for jobs left behind?": only a
// record whose holder kept the account, naming the namespace swept and
// with no mark pending there, spares the look.
func TestMustLook(t *testing.T) {
	t.Parallel()
	h := held(claim("h", "api", "main", "7"), t0)
	tests := []struct {
		name string
		rec  *record.Record
		ns   string
		want bool
	}{
		{name: "no lock", rec: nil, ns: "ci", want: true},
		{name: "a record without an account (1.6 or before)", rec: recordOf(h), ns: "ci", want: true},
		{name: "swept, holder kept the account", rec: kept(recordOf(h), &account{Swept: []string{"ci"}}), ns: "ci", want: false},
		{name: "swept, free lock released by a holder that kept it", rec: kept(freedBy(h), &account{Swept: []string{"ci"}}), ns: "ci", want: false},
		{name: "swept, but the holder did not keep the account (acquire, the loop, an older lockctl)",
			rec: func() *record.Record {
				r := kept(recordOf(h), &account{Swept: []string{"ci"}})
				r.Holder.LedgerKept = false
				return r
			}(), ns: "ci", want: true},
		{name: "another namespace swept", rec: kept(recordOf(h), &account{Swept: []string{"dev"}}), ns: "ci", want: true},
		{name: "a run's mark pending", rec: kept(recordOf(h), &account{Pending: []runMark{pending("ci", "r1")}}), ns: "ci", want: true},
		{name: "swept and a mark pending (a re-entered hold's job)", rec: kept(recordOf(h), &account{Swept: []string{"ci"}, Pending: []runMark{pending("ci", "r2")}}), ns: "ci", want: true},
		{name: "a mark pending elsewhere", rec: kept(recordOf(h), &account{Swept: []string{"ci"}, Pending: []runMark{pending("dev", "r1")}}), ns: "ci", want: false},
		{name: "holder kept an empty account", rec: kept(recordOf(h), nil), ns: "ci", want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got := true
			if tt.rec != nil {
				got = runjobs.MustLook(accountOf(t, tt.rec), tt.rec.Holder.LedgerKept, tt.ns)
			}
			assert.Equal(t, tt.want, got, "MustLook(%s, %q)", tt.name, tt.ns)
		})
	}
}

// TestTakeRunJobs: what a take (or a re-entrance) does to the account, by
// contender and by the record taken.
func TestTakeRunJobs(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	h := held(claim("h", "api", "main", "7"), t0)
	run := keeper("ci", false)
	runJob := keeper("ci", true)
	tests := []struct {
		name      string
		cur       *record.Record
		me        record.Claim
		req       *runjobs.Keeper
		wantLook  bool
		wantMark  bool
		wantWrite bool // a write is decided
		wantKept  bool // the holder after the write keeps the account
		wantJobs  *account
	}{
		{name: "run -f, new lock", cur: nil, me: claim("me", "web", "main", "1"), req: runJob,
			wantLook: true, wantMark: true, wantWrite: true, wantKept: true, wantJobs: &account{Pending: []runMark{pending("ci", "me")}}},
		{name: "run --, new lock: marked until it has looked", cur: nil, me: claim("me", "web", "main", "1"), req: run,
			wantLook: true, wantMark: true, wantWrite: true, wantKept: true, wantJobs: &account{Pending: []runMark{pending("ci", "me")}}},
		{name: "run --, free lock vouched: no look, no mark", cur: kept(freedBy(h), &account{Swept: []string{"ci", "dev"}}), me: claim("me", "web", "main", "1"), req: run,
			wantLook: false, wantWrite: true, wantKept: true, wantJobs: &account{Swept: []string{"ci", "dev"}}},
		{name: "run -f, free lock vouched: no look, marked", cur: kept(freedBy(h), &account{Swept: []string{"ci", "dev"}}), me: claim("me", "web", "main", "1"), req: runJob,
			wantLook: false, wantMark: true, wantWrite: true, wantKept: true, wantJobs: &account{Swept: []string{"dev"}, Pending: []runMark{pending("ci", "me")}}},
		{name: "run --, a dead run's mark: look, and the mark is replaced by ours", cur: kept(freedBy(h), &account{Pending: []runMark{pending("ci", "dead"), pending("dev", "other")}}),
			me: claim("me", "web", "main", "1"), req: run,
			wantLook: true, wantMark: true, wantWrite: true, wantKept: true, wantJobs: &account{Pending: []runMark{pending("dev", "other"), pending("ci", "me")}}},
		{name: "run --, after a hold that did not keep the account: look, the void account dropped",
			cur: func() *record.Record {
				r := kept(freedBy(h), &account{Swept: []string{"ci", "dev"}})
				r.Holder.LedgerKept = false
				return r
			}(),
			me: claim("me", "web", "main", "1"), req: run,
			wantLook: true, wantMark: true, wantWrite: true, wantKept: true, wantJobs: &account{Pending: []runMark{pending("ci", "me")}}},
		{name: "acquire takes a vouched lock: the account goes", cur: kept(freedBy(h), &account{Swept: []string{"ci"}}), me: claim("me", "web", "main", "1"),
			wantLook: true, wantWrite: true, wantKept: false, wantJobs: nil},
		{name: "run -f re-enters a hold that keeps the account: its mark beside the holder's", cur: kept(recordOf(held(claim("h", "web", "main", "1"), t0)), &account{Swept: []string{"ci"}, Pending: []runMark{pending("dev", "h")}}),
			me: claim("me", "web", "main", "1"), req: runJob,
			wantLook: false, wantMark: true, wantWrite: true, wantKept: true, wantJobs: &account{Pending: []runMark{pending("dev", "h"), pending("ci", "me")}}},
		{name: "run -- re-enters a vouched hold: nothing written", cur: kept(recordOf(held(claim("h", "web", "main", "1"), t0)), &account{Swept: []string{"ci"}}),
			me: claim("me", "web", "main", "1"), req: run, wantLook: false, wantWrite: false},
		{name: "run -f re-enters a hold that does not keep the account: looks, writes nothing", cur: recordOf(held(claim("h", "web", "main", "1"), t0)),
			me: claim("me", "web", "main", "1"), req: runJob, wantLook: true, wantWrite: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var before []byte
			if tt.cur != nil {
				before, _ = json.Marshal(tt.cur)
			}
			d := record.Decide(tt.cur, tt.me, record.PolicyNewest, now, true, waiterTTL)
			require.Equal(t, record.Acquired, d.Outcome, "the contender holds the lock")
			look, mark, err := takeLedger(tt.cur, &d, tt.me, ledgerOf(tt.req), now)
			require.NoError(t, err)
			assert.Equal(t, tt.wantLook, look, "must look")
			if tt.wantMark {
				assert.Equal(t, tt.me.ClaimID, mark, "the mark left pending")
			} else {
				assert.Empty(t, mark, "no mark left pending")
			}
			if tt.cur != nil {
				after, _ := json.Marshal(tt.cur)
				assert.JSONEq(t, string(before), string(after), "the record read is not changed")
			}
			if !tt.wantWrite {
				assert.Nil(t, d.Record, "no write")
				return
			}
			require.NotNil(t, d.Record, "a write")
			assert.Equal(t, tt.wantKept, d.Record.Holder.LedgerKept, "the holder keeps the account")
			assert.Equal(t, tt.wantJobs, accountOf(t, d.Record), "the account written")
		})
	}
}

// TestReleaseRunJobs: a release passes the account on from a holder that
// kept it, and takes the releasing run's mark away only when its job
// ended and nothing was left.
func TestReleaseRunJobs(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	me := held(claim("me", "web", "main", "1"), t0)
	id := me.Identity
	done := ReleaseOptions{ledger: &runjobs.Keeper{Namespace: "ci", Done: true}, ledgerMark: "me"}
	tests := []struct {
		name     string
		rec      *record.Record
		o        ReleaseOptions
		wantKept bool
		wantJobs *account
	}{
		{name: "job ended, nothing left: the mark goes, the namespace is swept", rec: kept(recordOf(me), &account{Pending: []runMark{pending("ci", "me")}}), o: done,
			wantKept: true, wantJobs: &account{Swept: []string{"ci"}}},
		{name: "job not known to have ended: the mark stays", rec: kept(recordOf(me), &account{Pending: []runMark{pending("ci", "me")}}), o: ReleaseOptions{ledger: keeper("ci", false), ledgerMark: "me"},
			wantKept: true, wantJobs: &account{Pending: []runMark{pending("ci", "me")}}},
		{name: "a re-entered run's mark stays: not swept", rec: kept(recordOf(me), &account{Pending: []runMark{pending("ci", "me"), pending("ci", "other")}}), o: done,
			wantKept: true, wantJobs: &account{Pending: []runMark{pending("ci", "other")}}},
		{name: "vouched command run: still swept", rec: kept(recordOf(me), &account{Swept: []string{"ci"}}), o: ReleaseOptions{ledger: done.ledger},
			wantKept: true, wantJobs: &account{Swept: []string{"ci"}}},
		{name: "released by lockctl release: kept as it is", rec: kept(recordOf(me), &account{Pending: []runMark{pending("ci", "me")}}), o: ReleaseOptions{},
			wantKept: true, wantJobs: &account{Pending: []runMark{pending("ci", "me")}}},
		{name: "a holder that did not keep the account leaves none", rec: func() *record.Record {
			r := kept(recordOf(me), &account{Swept: []string{"ci"}})
			r.Holder.LedgerKept = false
			return r
		}(), o: done, wantKept: false, wantJobs: nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			for _, waiter := range []bool{false, true} {
				rec := tt.rec.DeepCopy()
				if waiter {
					w := queued(claim("w", "api", "main", "2"), now)
					w.Cancelable = true // a lockctl run
					rec.Waiters = []record.Claim{w}
				}
				res, write, err := decideRelease("staging", rec, "10", id, tt.o, nil, now)
				require.NoError(t, err)
				require.True(t, write)
				if waiter {
					require.NotNil(t, res.HandedTo, "handed over")
				} else {
					require.True(t, rec.IsFree(), "freed")
				}
				assert.Equal(t, tt.wantKept, rec.Holder.LedgerKept, "the next holder keeps the account (waiter %v)", waiter)
				assert.Equal(t, tt.wantJobs, accountOf(t, rec), "the account (waiter %v)", waiter)
			}
		})
	}
}

// TestHandOverPassesRunJobsToARun: a hand-over passes the account on only
// to a waiting run, whose confirming write keeps it; lockctl acquire would
// drop it on confirming, and holds nothing with it before.
func TestHandOverPassesRunJobsToARun(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	me := held(claim("me", "web", "main", "1"), t0)
	for _, cancelable := range []bool{true, false} {
		rec := kept(recordOf(me), &account{Swept: []string{"ci"}})
		w := queued(claim("w", "api", "main", "2"), now)
		w.Cancelable = cancelable
		rec.Waiters = []record.Claim{w}
		res, _, err := decideRelease("staging", rec, "10", me.Identity, ReleaseOptions{}, nil, now)
		require.NoError(t, err)
		require.NotNil(t, res.HandedTo)
		assert.Equal(t, cancelable, rec.Holder.LedgerKept, "handed to a waiter, cancelable %v", cancelable)
	}
}

// TestRunJobsThroughAcquireAndRelease: a run's take marks, its OnTaking is
// called only when it must look, and ReleaseHeld removes the mark; the
// next run on the free lock is vouched for and does not look. Requests are
// counted on the fake clientset.
func TestRunJobsThroughAcquireAndRelease(t *testing.T) {
	t.Parallel()
	var verbs []string
	c, cs := newTestClient(t, t0, func(cs *fake.Clientset) {
		cs.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
			verbs = append(verbs, a.GetVerb())
			return false, nil, nil
		})
	})
	looked := 0
	req := request("1")
	req.TTL = time.Minute
	k := keeper("ci", true)
	req.Ledger = k
	req.Callbacks.OnTaking = func() { looked++ }

	h, err := c.Acquire(t.Context(), req)
	require.NoError(t, err)
	assert.False(t, h.Vouched, "a new lock vouches for nothing")
	assert.Equal(t, 1, looked, "OnTaking: the look starts beside the create")
	rec := currentRecord(t, cs)
	assert.True(t, rec.Holder.LedgerKept)
	assert.Equal(t, &account{Pending: []runMark{pending("ci", "me")}}, accountOf(t, rec), "the take marks the job namespace")

	k.Done = true
	_, err = c.ReleaseHeld(t.Context(), h, ReleaseOptions{})
	require.NoError(t, err)
	rec = currentRecord(t, cs)
	assert.True(t, rec.IsFree())
	assert.True(t, rec.Holder.LedgerKept, "the free lock keeps the account")
	assert.Equal(t, &account{Swept: []string{"ci"}}, accountOf(t, rec), "the release removes the mark")

	verbs = nil
	req.ClaimID, k.SubmitsJob, k.Done = "next", false, false
	h, err = c.Acquire(t.Context(), req)
	require.NoError(t, err)
	assert.True(t, h.Vouched, "the record vouches: nothing left behind in ci")
	assert.Equal(t, 1, looked, "OnTaking is not called: no look")
	k.Done = true
	_, err = c.ReleaseHeld(t.Context(), h, ReleaseOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"get", "update", "update"}, verbs, "a vouched run: the read, the take, the release")
	assert.Equal(t, &account{Swept: []string{"ci"}}, accountOf(t, currentRecord(t, cs)))
}

func currentRecord(t *testing.T, cs *fake.Clientset) *record.Record {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(lockNS).Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	rec, err := record.Decode(cm)
	require.NoError(t, err)
	return rec
}

// TestRunJobsNotShown: the account is the runs' bookkeeping; lockctl status
// does not show the holder's runJobsKept.
func TestRunJobsNotShown(t *testing.T) {
	t.Parallel()
	rec := kept(recordOf(held(claim("h", "api", "main", "7"), t0)), &account{Swept: []string{"ci"}})
	c, _ := newTestClient(t, t0, nil, lockObject(t, rec))
	l, err := c.Get(t.Context(), "staging")
	require.NoError(t, err)
	require.NotNil(t, l.Status.Holder)
	out, err := json.Marshal(l)
	require.NoError(t, err)
	assert.NotContains(t, string(out), "runJobs", "the view of the lock")
}
