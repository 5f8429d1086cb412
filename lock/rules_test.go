package lock

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// The rules of release, renew, confirm, leave, freeze and unfreeze, each a
// pure function of the record, as Decide is for acquire (decide_test.go)
// and asksToCancel for a cancel request (cancel_test.go).

func TestDecideRelease(t *testing.T) {
	t.Parallel()
	now := t0.Add(10 * time.Second)
	web41 := claim("h", "web", "main", "41")
	api7 := claim("w1", "api", "main", "7")
	db3 := claim("w2", "db", "main", "3")
	tokened := held(web41, t0)
	tokened.Token = "100"
	window := mustWindows(t, `windows:
- name: nightly
  schedule: "0 10 * * *"
  duration: 1h
  reason: nightly
`)
	tests := []struct {
		name  string
		rec   *record.Record
		id    record.Identity
		o     ReleaseOptions
		ws    []record.FreezeWindow
		rv    string
		write bool

		wantErr     error
		wantRes     Released
		wantHolder  string // session; "released" for a free lock
		wantWaiters []string
		wantEnded   record.Ending
		wantBy      string
		wantFrozen  bool
	}{
		{
			name: "holder releases, nobody waits: kept free with its history",
			rec:  recordOf(held(web41, t0)), id: web41.Identity, write: true,
			wantRes: Released{Previous: ptr(held(web41, t0))}, wantHolder: "released", wantEnded: record.EndReleased,
		},
		{
			name: "holder releases to the first waiter",
			rec:  recordOf(held(web41, t0), queued(api7, t0), queued(db3, t0)), id: web41.Identity, write: true,
			wantRes: Released{Previous: ptr(held(web41, t0))}, wantHolder: "w1", wantWaiters: []string{"w2"},
			wantEnded: record.EndHandedOver, wantBy: api7.Identity.String(),
		},
		{
			name: "expired waiters are passed over",
			rec:  recordOf(held(web41, t0), queued(api7, t0.Add(-time.Hour)), queued(db3, t0)), id: web41.Identity, write: true,
			wantRes: Released{Previous: ptr(held(web41, t0))}, wantHolder: "w2",
			wantEnded: record.EndHandedOver, wantBy: db3.Identity.String(),
		},
		{
			name: "a waiter that is not the holder leaves the queue",
			rec:  recordOf(held(web41, t0), queued(api7, t0), queued(db3, t0)), id: api7.Identity, write: true,
			wantRes: Released{LeftQueue: true}, wantHolder: "h", wantWaiters: []string{"w2"},
		},
		{
			name: "someone else is refused",
			rec:  recordOf(held(web41, t0)), id: db3.Identity,
			wantErr: &NotHolderError{Target: "staging", Holder: held(web41, t0)}, wantHolder: "h",
		},
		{
			name: "someone else breaks the hold with force",
			rec:  recordOf(held(web41, t0)), id: db3.Identity, o: ReleaseOptions{Force: true, By: "alice"}, write: true,
			wantRes: Released{Previous: ptr(held(web41, t0)), Forced: true}, wantHolder: "released",
			wantEnded: record.EndBroken, wantBy: "alice",
		},
		{
			name: "the right token releases whatever the identity",
			rec:  recordOf(tokened), id: db3.Identity, o: ReleaseOptions{Token: "100"}, write: true,
			wantRes: Released{Previous: &tokened}, wantHolder: "released", wantEnded: record.EndReleased,
		},
		{
			name: "a pending token is the version read",
			rec:  recordOf(pendingToken(held(web41, t0))), id: db3.Identity, o: ReleaseOptions{Token: "55"}, rv: "55", write: true,
			wantRes: Released{Previous: ptr(pendingToken(held(web41, t0)))}, wantHolder: "released", wantEnded: record.EndReleased,
		},
		{
			name: "a wrong token is refused",
			rec:  recordOf(tokened), id: web41.Identity, o: ReleaseOptions{Token: "99"},
			wantErr: &TokenError{Target: "staging", Token: "99", Holder: tokened, HolderToken: "100"}, wantHolder: "h",
		},
		{
			name: "a free lock: nothing to release",
			rec:  freeRecord(), id: web41.Identity,
			wantRes: Released{}, wantHolder: "released",
		},
		{
			name: "another job of the same build is refused",
			rec:  recordOf(withJob(held(web41, t0), "deploy", "1", 1)), id: web41.Identity, o: ReleaseOptions{Job: record.CIJob{Job: "test", JobID: "2", Attempt: 1}},
			wantErr: &NotHolderError{Target: "staging", Holder: withJob(held(web41, t0), "deploy", "1", 1), Caller: record.CIJob{Job: "test", JobID: "2", Attempt: 1}}, wantHolder: "h",
		},
		{
			name: "a re-run of the holder's job releases it",
			rec:  recordOf(withJob(held(web41, t0), "deploy", "1", 1)), id: web41.Identity, o: ReleaseOptions{Job: record.CIJob{Job: "deploy", JobID: "9", Attempt: 2}}, write: true,
			wantRes: Released{Previous: ptr(withJob(held(web41, t0), "deploy", "1", 1))}, wantHolder: "released", wantEnded: record.EndReleased,
		},
		{
			name: "frozen: a waiter that does not ignore the freeze keeps waiting, the lock stays frozen",
			rec:  frozen(recordOf(held(web41, t0), queued(api7, t0)), t0.Add(time.Hour)), id: web41.Identity, write: true,
			wantRes: Released{Previous: ptr(held(web41, t0))}, wantHolder: "released", wantWaiters: []string{"w1"},
			wantEnded: record.EndReleased, wantFrozen: true,
		},
		{
			name: "frozen: a waiter that ignores the freeze takes the lock",
			rec:  frozen(recordOf(held(web41, t0), queued(ignoring(api7), t0)), t0.Add(time.Hour)), id: web41.Identity, write: true,
			wantRes: Released{Previous: ptr(held(web41, t0))}, wantHolder: "w1",
			wantEnded: record.EndHandedOver, wantBy: api7.Identity.String(), wantFrozen: true,
		},
		{
			name: "a freeze that is over is dropped",
			rec:  frozen(recordOf(held(web41, t0), queued(api7, t0)), t0.Add(time.Second)), id: web41.Identity, write: true,
			wantRes: Released{Previous: ptr(held(web41, t0))}, wantHolder: "w1",
			wantEnded: record.EndHandedOver, wantBy: api7.Identity.String(),
		},
		{
			name: "a freeze window freezes the lock as it is released",
			rec:  recordOf(held(web41, t0), queued(api7, t0)), id: web41.Identity, ws: window, write: true,
			wantRes: Released{Previous: ptr(held(web41, t0))}, wantHolder: "released", wantWaiters: []string{"w1"},
			wantEnded: record.EndReleased, wantFrozen: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := tt.rec.DeepCopy()
			res, write, err := decideRelease("staging", rec, tt.rv, tt.id, tt.o, tt.ws, now)
			if tt.wantErr != nil {
				assert.Equal(t, tt.wantErr, err, "error of %s", tt.name)
				assert.False(t, write, "a refused release writes nothing")
				assert.Equal(t, tt.rec.DeepCopy(), rec, "a refused release leaves the record as it was")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.write, write, "write")
			assert.Equal(t, tt.wantRes.Forced, res.Forced, "Forced")
			assert.Equal(t, tt.wantRes.LeftQueue, res.LeftQueue, "LeftQueue")
			assert.Equal(t, tt.wantRes.Previous, res.Previous, "Previous")
			assert.Equal(t, tt.wantHolder, rec.Holder.ClaimID, "holder")
			if tt.wantHolder != "released" && tt.wantHolder != "h" {
				require.NotNil(t, res.HandedTo, "HandedTo")
				assert.Equal(t, tt.wantHolder, res.HandedTo.ClaimID, "HandedTo")
			} else {
				assert.Nil(t, res.HandedTo, "HandedTo")
			}
			assert.Equal(t, tt.wantWaiters, nilIfEmpty(sessions(rec.Waiters)), "waiters")
			assert.Equal(t, tt.wantFrozen, rec.Freeze.ActiveAt(now), "frozen")
			if !write {
				assert.Equal(t, tt.rec.DeepCopy(), rec, "nothing to write: the record is as it was")
				return
			}
			assert.False(t, rec.Updated.Time.Before(now), "Updated moves to now")
			if tt.wantEnded == "" {
				assert.Empty(t, rec.History, "history")
				return
			}
			require.Len(t, rec.History, 1, "history")
			assert.Equal(t, tt.wantEnded, rec.History[0].Ended, "how the hold ended")
			assert.Equal(t, tt.wantBy, rec.History[0].By, "by")
		})
	}
}

func TestDecideRenew(t *testing.T) {
	t.Parallel()
	now := t0.Add(10 * time.Minute)
	web41 := claim("h", "web", "main", "41")
	tests := []struct {
		name        string
		rec         *record.Record
		session     string
		wantLost    string
		wantExpires *metav1.MicroTime
		wantFrozen  bool
	}{
		{name: "the holder renews: its expiry moves ttl past now", rec: recordOf(held(web41, t0)), session: "h", wantExpires: microPtr(now.Add(time.Hour))},
		{name: "a later expiry stays: a renewal never shortens a hold (a longer one re-entered)", rec: recordOf(until(held(web41, t0), now.Add(3*time.Hour))), session: "h", wantExpires: microPtr(now.Add(3 * time.Hour))},
		{name: "an expiry just short of ttl past now moves", rec: recordOf(until(held(web41, t0), now.Add(time.Hour-time.Microsecond))), session: "h", wantExpires: microPtr(now.Add(time.Hour))},
		{name: "a holder in a pod has no expiry to move", rec: recordOf(inPod(held(web41, t0), "build-1", "u1")), session: "h"},
		{name: "a freeze that is over is dropped", rec: frozen(recordOf(held(web41, t0)), t0.Add(time.Minute)), session: "h", wantExpires: microPtr(now.Add(time.Hour))},
		{name: "a freeze that holds stays", rec: frozen(recordOf(held(web41, t0)), t0.Add(time.Hour)), session: "h", wantExpires: microPtr(now.Add(time.Hour)), wantFrozen: true},
		{name: "released: lost", rec: freeRecord(), session: "h", wantLost: "lock lost: it was released"},
		{name: "another holder: lost", rec: recordOf(held(claim("x", "api", "main", "7"), t0)), session: "h", wantLost: "lock lost: now held by acme/api@main#7"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := tt.rec.DeepCopy()
			err := record.DecideRenew(rec, tt.session, "", time.Hour, now)
			if tt.wantLost != "" {
				require.ErrorIs(t, err, record.ErrLost)
				assert.EqualError(t, err, tt.wantLost)
				assert.Equal(t, tt.rec.DeepCopy(), rec, "a lost renewal changes nothing")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantExpires, rec.Holder.Expires, "expiry")
			assert.Equal(t, tt.wantFrozen, rec.Freeze != nil, "freeze kept")
			assert.Equal(t, metav1.NewMicroTime(now), rec.Updated, "Updated")
		})
	}
}

// until is c expiring at exp.
func until(c record.Claim, exp time.Time) record.Claim {
	c.Expires = microPtr(exp)
	return c
}

func TestLeaveQueue(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	web41 := claim("h", "web", "main", "41")
	api7 := claim("w1", "api", "main", "7")
	db3 := claim("w2", "db", "main", "3")
	tests := []struct {
		name        string
		rec         *record.Record
		session     string
		wantChanged bool
		wantWaiters []string
	}{
		{name: "a waiter leaves", rec: recordOf(held(web41, t0), queued(api7, t0), queued(db3, t0)), session: "w1", wantChanged: true, wantWaiters: []string{"w2"}},
		{name: "the last waiter leaves", rec: recordOf(held(web41, t0), queued(db3, t0)), session: "w2", wantChanged: true},
		{name: "not in the queue: nothing changes", rec: recordOf(held(web41, t0), queued(db3, t0)), session: "w1", wantWaiters: []string{"w2"}},
		{name: "the holder is not a waiter", rec: recordOf(held(web41, t0)), session: "h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := tt.rec.DeepCopy()
			assert.Equal(t, tt.wantChanged, record.LeaveQueue(rec, tt.session, now), "changed")
			assert.Equal(t, tt.wantWaiters, nilIfEmpty(sessions(rec.Waiters)), "waiters")
			assert.Equal(t, "h", rec.Holder.ClaimID, "the holder stays")
			if tt.wantChanged {
				assert.Equal(t, metav1.NewMicroTime(now), rec.Updated, "Updated")
			} else {
				assert.Equal(t, tt.rec.DeepCopy(), rec, "unchanged")
			}
		})
	}
}

func TestDecideFreezeRequest(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	web41 := claim("h", "web", "main", "41")
	alice := record.Identity{Owner: "alice", Repo: "ops", Branch: "main", Build: "2"}
	req := record.FreezeRequest{Target: "staging", By: alice, Reason: "audit", Until: now.Add(time.Hour)}
	overridden := frozen(recordOf(held(web41, t0)), t0.Add(time.Hour))
	overridden.Freeze.Overrides = []record.Override{{Identity: web41.Identity, At: metav1.NewMicroTime(t0)}}
	tests := []struct {
		name          string
		rec           *record.Record
		req           record.FreezeRequest
		wantErr       string
		wantHolder    string
		wantOverrides int
	}{
		{name: "no lock: a new free one, frozen", req: req, wantHolder: "released"},
		{name: "a held lock stays held, frozen", rec: recordOf(held(web41, t0)), req: req, wantHolder: "h"},
		{name: "an active freeze is replaced, keeping its overrides", rec: overridden, req: req, wantHolder: "h", wantOverrides: 1},
		{name: "a lapsed freeze's overrides go", rec: frozen(recordOf(held(web41, t0)), t0), req: req, wantHolder: "h"},
		{name: "an end in the past is refused", req: record.FreezeRequest{Target: "staging", By: alice, Reason: "x", Until: now}, wantErr: "freeze end 2026-12-02T10:01:00Z is not in the future"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var rec *record.Record
			if tt.rec != nil {
				rec = tt.rec.DeepCopy()
			}
			out, err := record.DecideFreeze(rec, tt.req, "", now)
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			require.NotNil(t, out.Freeze)
			assert.Equal(t, "audit", out.Freeze.Reason)
			assert.Equal(t, alice, out.Freeze.By)
			assert.Equal(t, metav1.NewMicroTime(tt.req.Until), out.Freeze.Until)
			assert.Len(t, out.Freeze.Overrides, tt.wantOverrides, "overrides")
			assert.Equal(t, tt.wantHolder, out.Holder.ClaimID, "holder")
			assert.Equal(t, "staging", out.Target)
		})
	}
}

func TestDecideUnfreeze(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	web41 := claim("h", "web", "main", "41")
	api7 := claim("w1", "api", "main", "7")
	window := mustWindows(t, `windows:
- name: nightly
  schedule: "0 10 * * *"
  duration: 1h
  reason: nightly
`)
	tests := []struct {
		name       string
		rec        *record.Record
		ws         []record.FreezeWindow
		wantWrite  bool
		wantErr    bool
		wantHolder string
		wantHanded bool
	}{
		{name: "a held lock is thawed and stays held", rec: frozen(recordOf(held(web41, t0)), t0.Add(time.Hour)), wantWrite: true, wantHolder: "h"},
		{name: "an unheld lock goes to its first waiter", rec: frozen(freeRecord(queued(api7, now)), t0.Add(time.Hour)), wantWrite: true, wantHolder: "w1", wantHanded: true},
		{name: "an unheld lock nobody waits for stays free", rec: frozen(freeRecord(), t0.Add(time.Hour)), wantWrite: true, wantHolder: "released"},
		{name: "not frozen: nothing to do", rec: recordOf(held(web41, t0)), wantHolder: "h"},
		{name: "a window is refused", rec: frozen(recordOf(held(web41, t0)), t0.Add(time.Hour)), ws: window, wantErr: true, wantHolder: "h"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := tt.rec.DeepCopy()
			res, write, err := record.DecideUnfreeze("staging", rec, tt.ws, now)
			if tt.wantErr {
				var we *record.WindowError
				require.ErrorAs(t, err, &we)
				assert.Equal(t, "nightly", we.Freeze.By.Branch)
				assert.Equal(t, tt.rec.DeepCopy(), rec, "refused: unchanged")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantWrite, write, "write")
			assert.Equal(t, tt.wantHolder, rec.Holder.ClaimID, "holder")
			assert.Equal(t, tt.wantHanded, res.HandedTo != nil, "handed over")
			if write {
				assert.Nil(t, rec.Freeze, "freeze lifted")
				assert.NotNil(t, res.Previous, "Previous")
			} else {
				assert.Nil(t, res.Previous, "Previous")
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

func pendingToken(c record.Claim) record.Claim {
	c.TokenPending = true
	return c
}

func withJob(c record.Claim, job, id string, attempt uint64) record.Claim {
	c.CIJob = record.CIJob{Job: job, JobID: id, Attempt: attempt}
	return c
}

func mustWindows(t *testing.T, y string) []record.FreezeWindow {
	t.Helper()
	ws, err := record.ParseFreezeWindows([]byte(y))
	require.NoError(t, err)
	return ws
}

func TestDecideConfirm(t *testing.T) {
	t.Parallel()
	now := t0.Add(10 * time.Minute)
	web41 := claim("h", "web", "main", "41")
	// handed is web41 just handed the lock: holding on a waiter's expiry,
	// its token pending.
	handed := func(c record.Claim) record.Claim {
		c = held(c, t0)
		c.Expires = microPtr(now.Add(waiterTTL))
		c.HandedOver, c.TokenPending = true, true
		return c
	}
	noTTL := handed(web41)
	noTTL.TTL = metav1.Duration{}
	account := func(rec *record.Record) *record.Record {
		return kept(rec, &account{Swept: []string{"ci"}})
	}
	confirmed := recordOf(held(web41, t0))
	confirmed.Holder.Token = "tok"
	tests := []struct {
		name        string
		rec         *record.Record
		keeps       bool
		wantWrite   bool
		wantLost    string
		wantExpires *metav1.MicroTime
		wantAccount bool
	}{
		{name: "released: lost", rec: freeRecord(), wantLost: "lock lost: it was released"},
		{name: "another holder: lost", rec: recordOf(held(claim("x", "api", "main", "7"), t0)), wantLost: "lock lost: now held by acme/api@main#7"},
		{name: "confirmed already: nothing to write", rec: confirmed, wantExpires: microPtr(t0.Add(time.Hour))},
		{name: "handed over: the waiter's expiry becomes the holder's TTL", rec: recordOf(handed(web41)), wantWrite: true, wantExpires: microPtr(now.Add(time.Hour))},
		{name: "handed over with no TTL: DefaultTTL", rec: recordOf(noTTL), wantWrite: true, wantExpires: microPtr(now.Add(record.DefaultTTL))},
		{name: "handed over in a pod: no expiry", rec: recordOf(inPod(handed(web41), "build-1", "u1")), wantWrite: true},
		{name: "a holder that does not keep the account drops it", rec: account(recordOf(handed(web41))), wantWrite: true, wantExpires: microPtr(now.Add(time.Hour))},
		{name: "a holder that keeps the account keeps it", rec: account(recordOf(handed(web41))), keeps: true, wantWrite: true, wantExpires: microPtr(now.Add(time.Hour)), wantAccount: true},
		{name: "confirmed already, not keeping the account: nothing changes", rec: account(confirmed.DeepCopy()), wantExpires: microPtr(t0.Add(time.Hour)), wantAccount: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := tt.rec.DeepCopy()
			write, err := record.DecideConfirm(rec, "h", "tok", tt.keeps, now)
			if tt.wantLost != "" {
				require.ErrorIs(t, err, record.ErrLost)
				assert.EqualError(t, err, tt.wantLost)
				assert.False(t, write, "a lost confirmation writes nothing")
				assert.Equal(t, tt.rec.DeepCopy(), rec, "a lost confirmation changes nothing")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantWrite, write, "write")
			if !tt.wantWrite {
				assert.Equal(t, tt.rec.DeepCopy(), rec, "a confirmed hold changes nothing")
			} else {
				assert.Equal(t, metav1.NewMicroTime(now), rec.Updated, "Updated")
			}
			assert.False(t, rec.Holder.HandedOver, "no longer handed over")
			assert.False(t, rec.Holder.TokenPending, "token no longer pending")
			assert.Equal(t, "tok", rec.Holder.Token, "the hand-over's token")
			assert.Equal(t, tt.wantExpires, rec.Holder.Expires, "expiry")
			assert.Equal(t, tt.wantAccount, rec.Ledger != nil, "account of run jobs kept")
			assert.Equal(t, tt.wantAccount, rec.Holder.LedgerKept, "LedgerKept")
		})
	}
}
