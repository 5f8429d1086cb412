package lock

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/runjobs"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestDecideLeave is the rule of the end of a run that re-entered a hold:
// the hold stays as it is; only the run's own mark of run jobs goes, when
// its job ended and nothing was left behind, and the account is kept.
func TestDecideLeave(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	web41 := claim("h", "web", "main", "41")
	api7 := claim("w1", "api", "main", "7")
	done := ReleaseOptions{ledger: &runjobs.Keeper{Namespace: "ci", SubmitsJob: true, Done: true}, ledgerMark: "me"}
	tests := []struct {
		name        string
		rec         *record.Record
		o           ReleaseOptions
		wantChanged bool
		wantRunJobs *account
	}{
		{name: "no account kept, no mark: nothing to write", rec: recordOf(held(web41, t0), queued(api7, t0)), o: done},
		{name: "the run's mark goes; the holder's stays, so ci is not swept",
			rec: kept(recordOf(held(web41, t0), queued(api7, t0)), &account{Pending: []runMark{pending("ci", "h"), pending("ci", "me")}}), o: done,
			wantChanged: true, wantRunJobs: &account{Pending: []runMark{pending("ci", "h")}}},
		{name: "the run's mark was the last in ci: ci is swept",
			rec: kept(recordOf(held(web41, t0)), &account{Pending: []runMark{pending("ci", "me")}, Swept: []string{"qa"}}), o: done,
			wantChanged: true, wantRunJobs: &account{Swept: []string{"qa", "ci"}}},
		{name: "its job did not end: the mark stays",
			rec: kept(recordOf(held(web41, t0)), &account{Pending: []runMark{pending("ci", "me")}}),
			o:   ReleaseOptions{ledger: keeper("ci", true), ledgerMark: "me"}},
		{name: "no mark of its own (vouched, nothing submitted): nothing to write",
			rec: kept(recordOf(held(web41, t0)), &account{Swept: []string{"ci"}}), o: ReleaseOptions{ledger: &runjobs.Keeper{Namespace: "ci", Done: true}}},
		{name: "a mark by another claim is not the run's",
			rec: kept(recordOf(held(web41, t0)), &account{Pending: []runMark{pending("ci", "other")}}), o: done},
		{name: "the holder no longer keeps the account: nothing to write",
			rec: recordOf(held(web41, t0)), o: done},
		{name: "the hold ended meanwhile; the free lock keeps the account: the mark goes",
			rec: kept(freedBy(held(web41, t0)), &account{Pending: []runMark{pending("ci", "me")}}), o: done,
			wantChanged: true, wantRunJobs: &account{Swept: []string{"ci"}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := tt.rec.DeepCopy()
			changed := decideLeave(rec, tt.o, now)
			assert.Equal(t, tt.wantChanged, changed, "changed")
			if !changed {
				assert.Equal(t, tt.rec.DeepCopy(), rec, "nothing to write: the record is as it was")
				return
			}
			assert.Equal(t, tt.wantRunJobs, accountOf(t, rec), "the account")
			assert.Equal(t, tt.rec.Holder, rec.Holder, "holder, token and expiry as they were")
			assert.Equal(t, tt.rec.DeepCopy().Waiters, rec.Waiters, "the queue as it was")
			assert.Equal(t, tt.rec.DeepCopy().History, rec.History, "no hold ended")
			assert.False(t, rec.Updated.Time.Before(now), "Updated moves to now")
		})
	}
}

// TestReleaseHeldLeavesReentered: ReleaseHeld of holds that re-entered
// another's (a run with a job, an acquire) leaves the hold as it was: the
// run removes its own mark in one compare-and-swap on the version it last
// wrote, without a read; the acquire writes nothing. The pipeline's
// release then releases the lock.
func TestReleaseHeldLeavesReentered(t *testing.T) {
	t.Parallel()
	var verbs []string
	c, cs := newTestClient(t, t0, func(cs *fake.Clientset) {
		casConfigMaps(cs)
		cs.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
			verbs = append(verbs, a.GetVerb())
			return false, nil, nil
		})
	})
	req := request("812")
	req.ClaimID, req.TTL = "first", time.Hour
	req.Ledger = keeper("ci", false)
	first, err := c.Acquire(t.Context(), req)
	require.NoError(t, err)
	first.StopWatching()
	before := currentRecord(t, cs)
	require.Equal(t, []runMark{pending("ci", "first")}, accountOf(t, before).Pending, "the first run looks: a new lock")

	// A run of the same build with a job re-enters: its mark goes beside.
	run := request("812")
	run.ClaimID, run.TTL = "second", 30*time.Second
	runJobs := keeper("ci", true)
	run.Ledger = runJobs
	second, err := c.Acquire(t.Context(), run)
	require.NoError(t, err)
	require.True(t, second.Reentered)
	assert.Equal(t, first.Token, second.Token, "the hold's token")
	assert.Len(t, accountOf(t, currentRecord(t, cs)).Pending, 2, "marked beside the holder's")

	verbs = nil
	runJobs.Done = true
	res, err := c.ReleaseHeld(t.Context(), second, ReleaseOptions{})
	require.NoError(t, err)
	assert.Equal(t, []string{"update"}, verbs, "one write, on the version the re-entry wrote")
	assert.True(t, res.Left, "left")
	require.NotNil(t, res.Kept)
	assert.Equal(t, "first", res.Kept.ClaimID, "still held by the first")
	assert.Nil(t, res.Previous, "nothing released")
	rec := currentRecord(t, cs)
	assert.Equal(t, before.Holder.ClaimID, rec.Holder.ClaimID, "holder as it was")
	assert.Equal(t, first.Token, rec.Holder.Token, "token as it was")
	assert.Equal(t, before.Holder.Expires, rec.Holder.Expires, "expiry as it was")
	assert.Equal(t, []runMark{pending("ci", "first")}, accountOf(t, rec).Pending, "only the run's own mark went")

	// An acquire of the same build re-enters and is left: nothing written.
	again := request("812")
	again.ClaimID = "third"
	third, err := c.Acquire(t.Context(), again)
	require.NoError(t, err)
	require.True(t, third.Reentered)
	verbs = nil
	res, err = c.ReleaseHeld(t.Context(), third, ReleaseOptions{})
	require.NoError(t, err)
	assert.Empty(t, verbs, "nothing to write, nothing read: its last version shows the hold")
	assert.True(t, res.Left)
	require.NotNil(t, res.Kept)

	// NOTE: Release, not ReleaseHeld: first's version is stale, and the
	// fake clientset's watch would not bring the newer ones.
	res, err = c.Release(t.Context(), "staging", first.Holder.Identity, ReleaseOptions{})
	require.NoError(t, err)
	assert.False(t, res.Left, "the holder releases")
	require.NotNil(t, res.Previous)
	assert.True(t, currentRecord(t, cs).IsFree(), "released")
}
