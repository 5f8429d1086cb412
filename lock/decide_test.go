package lock

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

const waiterTTL = time.Minute

// claim builds a claim of acme/<repo>@<branch>#<build> with session s.
func claim(s, repo, branch, build string) Claim {
	return Claim{
		Identity: Identity{Owner: "acme", Repo: repo, Branch: branch, Build: build},
		ClaimID:  s,
		TTL:      metav1.Duration{Duration: time.Hour},
		target:   "staging",
	}
}

func held(c Claim, since time.Time) Claim {
	c.Since = metav1.NewMicroTime(since)
	c.Expires = microPtr(since.Add(time.Hour))
	return c
}

func queued(c Claim, since time.Time) Claim {
	c.Since = metav1.NewMicroTime(since)
	c.Expires = microPtr(since.Add(waiterTTL))
	return c
}

func inPod(c Claim, name, uid string) Claim {
	c.Pod = &PodRef{Namespace: "ci", Name: name, UID: types.UID(uid)}
	c.Expires = nil
	return c
}

func record(holder Claim, waiters ...Claim) *Record {
	return &Record{Target: "staging", Policy: PolicyNewest, Holder: holder, Waiters: waiters, Updated: metav1.NewMicroTime(t0)}
}

// local marks c as a developer's claim, ordered by arrival only.
func local(c Claim) Claim {
	c.Unordered = true
	return c
}

func sessions(cs []Claim) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ClaimID
	}
	return out
}

func TestDecide(t *testing.T) {
	t.Parallel()
	now := t0.Add(10 * time.Second)
	web41 := claim("h", "web", "main", "41")
	tests := []struct {
		name        string
		cur         *Record
		me          Claim
		policy      Policy
		holderAlive bool

		wantOutcome Outcome
		wantWrite   bool
		wantCreate  bool
		wantHolder  string
		wantWaiters []string
		wantBy      string
		// wantReentered: my build already held it under another session.
		wantReentered bool
	}{
		{
			name: "free lock is created with me as holder",
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Acquired, wantWrite: true, wantCreate: true, wantHolder: "me",
		},
		{
			name: "held by another repo: join the queue",
			cur:  record(held(claim("h", "api", "main", "7"), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "held by an older build of my branch: wait, never preempt",
			cur:  record(held(web41, t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "held by a newer build of my branch: superseded",
			cur:  record(held(claim("h", "web", "main", "43"), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Superseded, wantHolder: "h", wantBy: "h",
		},
		{
			name: "unordered: held by a higher local build of my branch: wait, first come first served",
			cur:  record(held(local(claim("h", "web", "main", "43")), t0)),
			me:   local(claim("me", "web", "main", "42")), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "unordered: a lower local build arriving keeps its place behind a higher one",
			cur:  record(held(claim("h", "api", "main", "1"), t0), queued(local(claim("w", "web", "main", "43")), t0)),
			me:   local(claim("me", "web", "main", "42")), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"w", "me"},
		},
		{
			name: "unordered: a higher local build queues behind a lower one instead of replacing it",
			cur:  record(held(claim("h", "api", "main", "1"), t0), queued(local(claim("w", "web", "main", "40")), t0)),
			me:   local(claim("me", "web", "main", "42")), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"w", "me"},
		},
		{
			name: "unordered: an ordered build never supersedes an unordered waiter of the same branch",
			cur:  record(held(claim("h", "api", "main", "1"), t0), queued(local(claim("w", "web", "main", "40")), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"w", "me"},
		},
		{
			name: "held by my build, no pod on either side: already held, nothing written",
			cur:  record(held(claim("h", "web", "main", "42"), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Acquired, wantHolder: "h", wantReentered: true,
		},
		{
			name: "held by my build in my pod: already held",
			cur:  record(inPod(held(claim("h", "web", "main", "42"), t0), "build-42", "uid-1")),
			me:   inPod(claim("me", "web", "main", "42"), "build-42", "uid-1"), holderAlive: true,
			wantOutcome: Acquired, wantHolder: "h", wantReentered: true,
		},
		{
			name: "held by my build in another pod (a rerun): wait",
			cur:  record(inPod(held(claim("h", "web", "main", "42"), t0), "build-42", "uid-1")),
			me:   inPod(claim("me", "web", "main", "42"), "build-42-retry", "uid-2"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "held by my build in a pod of the same name that was re-created: wait",
			cur:  record(inPod(held(claim("h", "web", "main", "42"), t0), "build-42", "uid-1")),
			me:   inPod(claim("me", "web", "main", "42"), "build-42", "uid-2"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "held by my build from a pod, I have none: wait",
			cur:  record(inPod(held(claim("h", "web", "main", "42"), t0), "build-42", "uid-1")),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "newer build of my branch waits: older arrival gives up",
			cur:  record(held(claim("h", "api", "main", "1"), t0), queued(claim("w", "web", "main", "43"), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Superseded, wantHolder: "h", wantWaiters: []string{"w"}, wantBy: "w",
		},
		{
			name: "same build of my branch already waits: the later arrival gives up",
			cur:  record(held(claim("h", "api", "main", "1"), t0), queued(claim("w", "web", "main", "42"), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Superseded, wantHolder: "h", wantWaiters: []string{"w"}, wantBy: "w",
		},
		{
			name: "older build of my branch waits: I take its place, it gives up",
			cur: record(held(claim("h", "api", "main", "1"), t0),
				queued(claim("w", "web", "main", "40"), t0), queued(claim("x", "api", "dev", "3"), t0)),
			me: claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me", "x"},
		},
		{
			name: "an older waiter sees it was replaced: superseded, nothing to write",
			cur:  record(held(claim("h", "api", "main", "1"), t0), queued(claim("me2", "web", "main", "42"), t0)),
			me:   claim("w", "web", "main", "40"), holderAlive: true,
			wantOutcome: Superseded, wantHolder: "h", wantWaiters: []string{"me2"}, wantBy: "me2",
		},
		{
			name: "other branch of my repo does not interact",
			cur:  record(held(claim("h", "web", "dev", "99"), t0), queued(claim("w", "web", "dev", "100"), t0)),
			me:   claim("me", "web", "main", "1"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"w", "me"},
		},
		{
			name: "other owner with the same repo and branch does not interact",
			cur: func() *Record {
				h := held(claim("h", "web", "main", "99"), t0)
				h.Owner = "other"
				return record(h)
			}(),
			me: claim("me", "web", "main", "1"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "fifo: a newer build waiting supersedes nobody",
			cur:  record(held(claim("h", "api", "main", "1"), t0), queued(claim("w", "web", "main", "43"), t0)),
			me:   claim("me", "web", "main", "42"), policy: PolicyFIFO, holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"w", "me"},
		},
		{
			name: "fifo: an older build waiting keeps its place",
			cur:  record(held(claim("h", "api", "main", "1"), t0), queued(claim("w", "web", "main", "40"), t0)),
			me:   claim("me", "web", "main", "42"), policy: PolicyFIFO, holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"w", "me"},
		},
		{
			name: "already queued with a fresh place: nothing to write",
			cur:  record(held(claim("h", "api", "main", "1"), t0), queued(claim("me", "web", "main", "42"), now)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Waiting, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "already queued with an ageing place: renew it",
			cur:  record(held(claim("h", "api", "main", "1"), t0), queued(claim("me", "web", "main", "42"), now.Add(-45*time.Second))),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "expired waiters ahead are dropped",
			cur:  record(held(claim("h", "api", "main", "1"), t0), queued(claim("dead", "db", "main", "1"), t0.Add(-2*time.Minute))),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "stale holder, nobody waits: I take the lock",
			cur:  record(held(claim("h", "api", "main", "1"), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: Acquired, wantWrite: true, wantHolder: "me",
		},
		{
			name: "stale holder, I am first in the queue: I take the lock",
			cur:  record(held(claim("h", "api", "main", "1"), t0), queued(claim("me", "web", "main", "42"), now), queued(claim("w", "db", "main", "1"), now)),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: Acquired, wantWrite: true, wantHolder: "me", wantWaiters: []string{"w"},
		},
		{
			name: "stale holder, another waits first: it gets the lock, I stay queued",
			cur:  record(held(claim("h", "api", "main", "1"), t0), queued(claim("w", "db", "main", "1"), now), queued(claim("me", "web", "main", "42"), now)),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "w", wantWaiters: []string{"me"},
		},
		{
			name: "stale holder, I am not queued and a waiter exists: it gets the lock",
			cur:  record(held(claim("h", "api", "main", "1"), t0), queued(claim("w", "db", "main", "1"), now)),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "w", wantWaiters: []string{"me"},
		},
		{
			name: "handed over to me: confirm with a write",
			cur: func() *Record {
				h := queued(claim("me", "web", "main", "42"), now)
				h.HandedOver = true
				return record(h)
			}(),
			me: claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Acquired, wantWrite: true, wantHolder: "me",
		},
		{
			name: "already holding, confirmed: nothing to write",
			cur:  record(held(claim("me", "web", "main", "42"), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Acquired, wantHolder: "me",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			policy := tt.policy
			if policy == "" {
				policy = PolicyNewest
			}
			if tt.cur != nil {
				tt.cur.Policy = policy
			}
			d := Decide(tt.cur, tt.me, policy, now, tt.holderAlive, waiterTTL)
			assert.Equal(t, tt.wantOutcome, d.Outcome, "outcome")
			assert.Equal(t, tt.wantCreate, d.Create, "create")
			require.Equal(t, tt.wantWrite, d.Record != nil, "write")
			rec := d.Record
			if rec == nil {
				rec = tt.cur
			}
			assert.Equal(t, tt.wantHolder, rec.Holder.ClaimID, "holder")
			assert.Equal(t, tt.wantReentered, d.Reentered, "re-entered")
			if tt.wantWaiters == nil {
				tt.wantWaiters = []string{}
			}
			assert.Equal(t, tt.wantWaiters, sessions(rec.Waiters), "waiters")
			if tt.wantBy != "" {
				require.NotNil(t, d.By, "superseded by")
				assert.Equal(t, tt.wantBy, d.By.ClaimID, "superseded by")
			}
			if tt.cur != nil {
				assert.False(t, rec.Updated.Before(&tt.cur.Updated), "updated never goes back")
			}
		})
	}
}

func TestDecideTimestampsNeverGoBack(t *testing.T) {
	t.Parallel()
	// The record was written by a process whose clock runs ahead of ours.
	ahead := t0.Add(time.Hour)
	cur := record(held(claim("h", "api", "main", "1"), t0))
	cur.Updated = metav1.NewMicroTime(ahead)

	d := Decide(cur, claim("me", "web", "main", "42"), PolicyNewest, t0, true, waiterTTL)
	require.NotNil(t, d.Record)
	assert.Equal(t, ahead, d.Record.Updated.Time, "updated keeps the later time")
	assert.Equal(t, ahead, d.Record.Waiters[0].Since.Time, "new claims are stamped no earlier than the record")
}

func TestDecideHolderClaim(t *testing.T) {
	t.Parallel()
	me := claim("me", "web", "main", "42")
	d := Decide(nil, me, PolicyNewest, t0, true, waiterTTL)
	require.NotNil(t, d.Record.Holder.Expires, "a holder without pod expires")
	assert.Equal(t, t0.Add(time.Hour), d.Record.Holder.Expires.Time, "expiry is the TTL")

	me.Pod = &PodRef{Namespace: "ci", Name: "build-42", UID: "u1"}
	d = Decide(nil, me, PolicyNewest, t0, true, waiterTTL)
	assert.Nil(t, d.Record.Holder.Expires, "a holder in a pod lives as long as the pod")
}

func TestDecideNextCheck(t *testing.T) {
	t.Parallel()
	cur := record(held(claim("h", "api", "main", "1"), t0))
	d := Decide(cur, claim("me", "web", "main", "42"), PolicyNewest, t0, true, waiterTTL)
	// My place expires at t0+1m and is renewed at two thirds of it.
	assert.Equal(t, t0.Add(40*time.Second), d.NextCheck, "renewal before the holder's expiry")

	cur.Holder.Expires = microPtr(t0.Add(5 * time.Second))
	d = Decide(cur, claim("me", "web", "main", "42"), PolicyNewest, t0, true, waiterTTL)
	assert.Equal(t, t0.Add(5*time.Second), d.NextCheck, "the holder's expiry comes first")
}

// TestFencingTokenRecorded: a take-over leaves the token pending (the
// version it writes is the token); the next write by anyone records it; a
// re-entrant acquire finds it.
func TestFencingTokenRecorded(t *testing.T) {
	t.Parallel()
	d := Decide(nil, claim("h", "web", "main", "42"), PolicyNewest, t0, true, waiterTTL)
	require.True(t, d.TookOver)
	assert.True(t, d.Record.Holder.TokenPending, "pending after the take-over")
	assert.Empty(t, d.Record.Holder.Token)

	// Same session again with a change (an expired waiter dropped): the
	// hold keeps its token.
	cur := d.Record.deepCopy()
	cur.Holder.TokenPending, cur.Holder.Token = false, "100"
	cur.Waiters = []Claim{queued(claim("w", "api", "main", "1"), t0.Add(-time.Hour))}
	again := Decide(cur, claim("h", "web", "main", "42"), PolicyNewest, t0.Add(time.Second), true, waiterTTL)
	require.NotNil(t, again.Record)
	assert.False(t, again.TookOver, "the same hold")
	assert.Equal(t, "100", again.Record.Holder.Token)

	// Handed over: the hand-over write is the take-over, its version the
	// token; confirming keeps it, and the hold's start.
	rec := record(held(claim("h", "web", "main", "42"), t0))
	rec.handOver(queued(claim("w", "api", "main", "1"), t0), metav1.NewMicroTime(t0), t0)
	assert.True(t, rec.Holder.TokenPending, "the hand-over's version is the new holder's token")
	assert.True(t, rec.Holder.HandedOver)
	conf := Decide(rec, claim("w", "api", "main", "1"), PolicyNewest, t0.Add(time.Second), true, waiterTTL)
	assert.False(t, conf.TookOver, "confirming is not a new take-over")
	assert.True(t, conf.Confirmed)
	assert.True(t, conf.Record.Holder.TokenPending, "still pending: the write records the version it was decided on")
	assert.False(t, conf.Record.Holder.HandedOver)
	assert.Equal(t, t0, conf.Record.Holder.Since.Time, "the hold began with the hand-over")

	// Handed over by a lockctl that left no token pending: confirming is
	// the take-over, as it was for it.
	old := record(held(claim("h", "web", "main", "42"), t0))
	old.handOver(queued(claim("w", "api", "main", "1"), t0), metav1.NewMicroTime(t0), t0)
	old.Holder.TokenPending = false
	conf = Decide(old, claim("w", "api", "main", "1"), PolicyNewest, t0.Add(time.Second), true, waiterTTL)
	assert.True(t, conf.TookOver, "no token to keep: a new one")
	assert.True(t, conf.Record.Holder.TokenPending)
}
