package lock

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// runClaim marks c as a lockctl run, which stops when asked.
func runClaim(c record.Claim) record.Claim {
	c.Cancelable = true
	return c
}

// cancelling gives c cancel-in-progress.
func cancelling(c record.Claim) record.Claim {
	c.CancelInProgress = true
	return c
}

func askedBy(c record.Claim, by record.Claim) record.Claim {
	c.CancelRequest = &record.CancelRequest{Identity: by.Identity, ClaimID: by.ClaimID, At: metav1.NewMicroTime(t0)}
	return c
}

func TestDecideCancelInProgress(t *testing.T) {
	t.Parallel()
	now := t0.Add(10 * time.Second)
	web41 := claim("h", "web", "main", "41")
	web42 := claim("me", "web", "main", "42")
	tests := []struct {
		name        string
		cur         *record.Record
		me          record.Claim
		policy      record.Policy
		holderAlive bool

		wantAsk     bool   // the holder is asked to stop, by me
		wantAskedBy string // session on the holder's request after the decision; "" none
		wantOutcome record.Outcome
		wantWaiters []string
	}{
		{
			name: "a newer build asks an older run of its branch",
			cur:  recordOf(runClaim(held(web41, t0))), me: cancelling(web42), policy: record.PolicyNewest, holderAlive: true,
			wantAsk: true, wantAskedBy: "me", wantOutcome: record.Waiting, wantWaiters: []string{"me"},
		},
		{
			name: "whatever the lock's policy",
			cur:  recordOf(runClaim(held(web41, t0))), me: cancelling(web42), policy: record.PolicyFIFO, holderAlive: true,
			wantAsk: true, wantAskedBy: "me", wantOutcome: record.Waiting, wantWaiters: []string{"me"},
		},
		{
			name: "without the flag it only waits",
			cur:  recordOf(runClaim(held(web41, t0))), me: web42, policy: record.PolicyNewest, holderAlive: true,
			wantOutcome: record.Waiting, wantWaiters: []string{"me"},
		},
		{
			name: "an acquire holder (not a run) is never asked",
			cur:  recordOf(held(web41, t0)), me: cancelling(web42), policy: record.PolicyNewest, holderAlive: true,
			wantOutcome: record.Waiting, wantWaiters: []string{"me"},
		},
		{
			name: "another branch is not asked",
			cur:  recordOf(runClaim(held(claim("h", "web", "dev", "41"), t0))), me: cancelling(web42), policy: record.PolicyNewest, holderAlive: true,
			wantOutcome: record.Waiting, wantWaiters: []string{"me"},
		},
		{
			name: "an older build does not ask; under newest it gives up",
			cur:  recordOf(runClaim(held(claim("h", "web", "main", "43"), t0))), me: cancelling(web42), policy: record.PolicyNewest, holderAlive: true,
			wantOutcome: record.Superseded,
		},
		{
			name: "the same build does not ask (re-entrance is another process of it)",
			cur:  recordOf(runClaim(held(claim("h", "web", "main", "42"), t0))), me: cancelling(web42), policy: record.PolicyFIFO, holderAlive: true,
			wantOutcome: record.Acquired, wantWaiters: []string{},
		},
		{
			name: "a local holder is never asked",
			cur:  recordOf(runClaim(local(held(web41, t0)))), me: cancelling(web42), policy: record.PolicyNewest, holderAlive: true,
			wantOutcome: record.Waiting, wantWaiters: []string{"me"},
		},
		{
			name: "a local contender never asks",
			cur:  recordOf(runClaim(held(web41, t0))), me: cancelling(local(web42)), policy: record.PolicyNewest, holderAlive: true,
			wantOutcome: record.Waiting, wantWaiters: []string{"me"},
		},
		{
			name: "an even newer build replaces an older request",
			cur: recordOf(askedBy(runClaim(held(web41, t0)), claim("o", "web", "main", "40")),
				queued(claim("o", "web", "main", "40"), t0)),
			me: cancelling(web42), policy: record.PolicyFIFO, holderAlive: true,
			wantAsk: true, wantAskedBy: "me", wantOutcome: record.Waiting, wantWaiters: []string{"o", "me"},
		},
		{
			name: "a request by a newer build stays",
			cur: recordOf(askedBy(runClaim(held(web41, t0)), claim("n", "web", "main", "50")),
				queued(claim("n", "web", "main", "50"), t0)),
			me: cancelling(web42), policy: record.PolicyFIFO, holderAlive: true,
			wantAskedBy: "n", wantOutcome: record.Waiting, wantWaiters: []string{"n", "me"},
		},
		{
			name: "asking once is enough: the asker's renewals change nothing",
			cur:  recordOf(askedBy(runClaim(held(web41, t0)), web42), queued(web42, t0)),
			me:   cancelling(web42), policy: record.PolicyNewest, holderAlive: true,
			wantAskedBy: "me", wantOutcome: record.Waiting, wantWaiters: []string{"me"},
		},
		{
			name: "the asker takes the lock of the asked holder that died, ahead of the queue",
			cur: recordOf(askedBy(runClaim(held(web41, t0)), web42),
				queued(claim("a", "api", "main", "7"), t0), queued(web42, t0.Add(time.Second))),
			me: cancelling(web42), policy: record.PolicyNewest, holderAlive: false,
			wantOutcome: record.Acquired, wantWaiters: []string{"a"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cur := tt.cur
			cur.Policy = tt.policy
			d := record.Decide(cur, tt.me, tt.policy, now, tt.holderAlive, waiterTTL)
			assert.Equal(t, tt.wantOutcome, d.Outcome, "outcome")
			if tt.wantAsk {
				require.NotNil(t, d.CancelRequested, "the holder is asked")
				assert.Equal(t, "h", d.CancelRequested.ClaimID)
				require.NotNil(t, d.Record, "asking is a write")
			} else {
				assert.Nil(t, d.CancelRequested, "the holder is not asked")
			}
			rec := d.Record
			if rec == nil {
				rec = cur
			}
			if tt.wantOutcome == record.Acquired && !d.Reentered {
				assert.Equal(t, tt.me.ClaimID, rec.Holder.ClaimID, "holder")
				assert.Nil(t, rec.Holder.CancelRequest, "a new holder carries no request")
			} else if tt.wantAskedBy == "" {
				assert.Nil(t, rec.Holder.CancelRequest, "no request on the holder")
			} else {
				require.NotNil(t, rec.Holder.CancelRequest, "request on the holder")
				assert.Equal(t, tt.wantAskedBy, rec.Holder.CancelRequest.ClaimID)
			}
			if tt.wantOutcome != record.Superseded {
				assert.Equal(t, tt.wantWaiters, sessions(rec.Waiters), "waiters")
			}
		})
	}
}

// TestReleaseHandsToTheCancelAsker: the run asked to stop hands the lock to
// the build that asked, ahead of the queue, unless that one is gone or may
// not take the lock (frozen).
func TestReleaseHandsToTheCancelAsker(t *testing.T) {
	t.Parallel()
	now := t0.Add(10 * time.Second)
	web41 := runClaim(held(claim("h", "web", "main", "41"), t0))
	api7 := queued(claim("a", "api", "main", "7"), t0)
	web42 := queued(claim("me", "web", "main", "42"), t0.Add(time.Second))

	rec := recordOf(askedBy(web41, web42), api7, web42)
	assert.Equal(t, "me", rec.FirstEligible(now).ClaimID, "the asker first")

	rec = recordOf(askedBy(web41, web42), api7)
	assert.Equal(t, "a", rec.FirstEligible(now).ClaimID, "the asker gone: the queue's first")

	rec = frozen(recordOf(askedBy(web41, web42), api7, ignoring(web42)), now.Add(time.Hour))
	assert.Equal(t, "me", rec.FirstEligible(now).ClaimID, "an asker that ignores the freeze")
	rec = frozen(recordOf(askedBy(web41, web42), ignoring(api7), web42), now.Add(time.Hour))
	assert.Equal(t, "a", rec.FirstEligible(now).ClaimID, "frozen, the asker may not take it")
}

// TestCancelRequestRoundTrip: the request and the mark survive encoding,
// and a holder re-deciding keeps the request it was given.
func TestCancelRequestRoundTrip(t *testing.T) {
	t.Parallel()
	rec := recordOf(askedBy(runClaim(held(claim("h", "web", "main", "41"), t0)), claim("me", "web", "main", "42")))
	cm := lockConfigMap("")
	require.NoError(t, record.Encode(cm, rec))
	back, err := record.Decode(cm)
	require.NoError(t, err)
	assert.True(t, back.Holder.Cancelable)
	require.NotNil(t, back.Holder.CancelRequest)
	assert.Equal(t, "acme/web@main#42", back.Holder.CancelRequest.Identity.String())

	me := runClaim(claim("h", "web", "main", "41"))
	back.Holder.HandedOver = true
	d := record.Decide(back, me, record.PolicyNewest, t0.Add(time.Second), true, waiterTTL)
	require.NotNil(t, d.Record)
	assert.NotNil(t, d.Record.Holder.CancelRequest, "confirming a hand-over keeps the request")
}
