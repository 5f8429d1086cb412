package lock

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

var t0 = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

const waiterTTL = time.Minute

// claim builds a claim of acme/<repo>@<branch>#<build> with session s.
func claim(s, repo, branch, build string) record.Claim {
	return record.Claim{
		Identity: record.Identity{Owner: "acme", Repo: repo, Branch: branch, Build: build},
		ClaimID:  s,
		TTL:      metav1.Duration{Duration: time.Hour},
		Target:   "staging",
	}
}

func held(c record.Claim, since time.Time) record.Claim {
	c.Since = metav1.NewMicroTime(since)
	c.Expires = microPtr(since.Add(time.Hour))
	return c
}

func queued(c record.Claim, since time.Time) record.Claim {
	c.Since = metav1.NewMicroTime(since)
	c.Expires = microPtr(since.Add(waiterTTL))
	return c
}

func inPod(c record.Claim, name, uid string) record.Claim {
	c.Pod = &record.PodRef{Namespace: "ci", Name: name, UID: types.UID(uid)}
	c.Expires = nil
	return c
}

func recordOf(holder record.Claim, waiters ...record.Claim) *record.Record {
	return &record.Record{Target: "staging", Policy: record.PolicyNewest, Holder: holder, Waiters: waiters, Updated: metav1.NewMicroTime(t0)}
}

// local marks c as a developer's claim, ordered by arrival only.
func local(c record.Claim) record.Claim {
	c.Unordered = true
	return c
}

func sessions(cs []record.Claim) []string {
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
		cur         *record.Record
		me          record.Claim
		policy      record.Policy
		holderAlive bool

		wantOutcome record.Outcome
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
			wantOutcome: record.Acquired, wantWrite: true, wantCreate: true, wantHolder: "me",
		},
		{
			name: "held by another repo: join the queue",
			cur:  recordOf(held(claim("h", "api", "main", "7"), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "held by an older build of my branch: wait, never preempt",
			cur:  recordOf(held(web41, t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "held by a newer build of my branch: superseded",
			cur:  recordOf(held(claim("h", "web", "main", "43"), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Superseded, wantHolder: "h", wantBy: "h",
		},
		{
			name: "unordered: held by a higher local build of my branch: wait, first come first served",
			cur:  recordOf(held(local(claim("h", "web", "main", "43")), t0)),
			me:   local(claim("me", "web", "main", "42")), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "unordered: a lower local build arriving keeps its place behind a higher one",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0), queued(local(claim("w", "web", "main", "43")), t0)),
			me:   local(claim("me", "web", "main", "42")), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"w", "me"},
		},
		{
			name: "unordered: a higher local build queues behind a lower one instead of replacing it",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0), queued(local(claim("w", "web", "main", "40")), t0)),
			me:   local(claim("me", "web", "main", "42")), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"w", "me"},
		},
		{
			name: "unordered: an ordered build never supersedes an unordered waiter of the same branch",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0), queued(local(claim("w", "web", "main", "40")), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"w", "me"},
		},
		{
			name: "held by my build, no pod on either side: already held, nothing written",
			cur:  recordOf(held(claim("h", "web", "main", "42"), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Acquired, wantHolder: "h", wantReentered: true,
		},
		{
			name: "held by my build in my pod: already held",
			cur:  recordOf(inPod(held(claim("h", "web", "main", "42"), t0), "build-42", "uid-1")),
			me:   inPod(claim("me", "web", "main", "42"), "build-42", "uid-1"), holderAlive: true,
			wantOutcome: record.Acquired, wantHolder: "h", wantReentered: true,
		},
		{
			name: "held by my build in another pod (a rerun): wait",
			cur:  recordOf(inPod(held(claim("h", "web", "main", "42"), t0), "build-42", "uid-1")),
			me:   inPod(claim("me", "web", "main", "42"), "build-42-retry", "uid-2"), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "held by my build in a pod of the same name that was re-created: wait",
			cur:  recordOf(inPod(held(claim("h", "web", "main", "42"), t0), "build-42", "uid-1")),
			me:   inPod(claim("me", "web", "main", "42"), "build-42", "uid-2"), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "held by my build from a pod, I have none: wait",
			cur:  recordOf(inPod(held(claim("h", "web", "main", "42"), t0), "build-42", "uid-1")),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "newer build of my branch waits: older arrival gives up",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0), queued(claim("w", "web", "main", "43"), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Superseded, wantHolder: "h", wantWaiters: []string{"w"}, wantBy: "w",
		},
		{
			name: "same build of my branch already waits: the later arrival gives up",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0), queued(claim("w", "web", "main", "42"), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Superseded, wantHolder: "h", wantWaiters: []string{"w"}, wantBy: "w",
		},
		{
			name: "older build of my branch waits: I take its place, it gives up",
			cur: recordOf(held(claim("h", "api", "main", "1"), t0),
				queued(claim("w", "web", "main", "40"), t0), queued(claim("x", "api", "dev", "3"), t0)),
			me: claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me", "x"},
		},
		{
			name: "an older waiter sees it was replaced: superseded, nothing to write",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0), queued(claim("me2", "web", "main", "42"), t0)),
			me:   claim("w", "web", "main", "40"), holderAlive: true,
			wantOutcome: record.Superseded, wantHolder: "h", wantWaiters: []string{"me2"}, wantBy: "me2",
		},
		{
			name: "other branch of my repo does not interact",
			cur:  recordOf(held(claim("h", "web", "dev", "99"), t0), queued(claim("w", "web", "dev", "100"), t0)),
			me:   claim("me", "web", "main", "1"), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"w", "me"},
		},
		{
			name: "other owner with the same repo and branch does not interact",
			cur: func() *record.Record {
				h := held(claim("h", "web", "main", "99"), t0)
				h.Owner = "other"
				return recordOf(h)
			}(),
			me: claim("me", "web", "main", "1"), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "fifo: a newer build waiting supersedes nobody",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0), queued(claim("w", "web", "main", "43"), t0)),
			me:   claim("me", "web", "main", "42"), policy: record.PolicyFIFO, holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"w", "me"},
		},
		{
			name: "fifo: an older build waiting keeps its place",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0), queued(claim("w", "web", "main", "40"), t0)),
			me:   claim("me", "web", "main", "42"), policy: record.PolicyFIFO, holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"w", "me"},
		},
		{
			name: "already queued with a fresh place: nothing to write",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0), queued(claim("me", "web", "main", "42"), now)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Waiting, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "already queued with an ageing place: renew it",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0), queued(claim("me", "web", "main", "42"), now.Add(-45*time.Second))),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "expired waiters ahead are dropped",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0), queued(claim("dead", "db", "main", "1"), t0.Add(-2*time.Minute))),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "stale holder, nobody waits: I take the lock",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: record.Acquired, wantWrite: true, wantHolder: "me",
		},
		{
			name: "stale holder, I am first in the queue: I take the lock",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0), queued(claim("me", "web", "main", "42"), now), queued(claim("w", "db", "main", "1"), now)),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: record.Acquired, wantWrite: true, wantHolder: "me", wantWaiters: []string{"w"},
		},
		{
			name: "stale holder, another waits first: it gets the lock, I stay queued",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0), queued(claim("w", "db", "main", "1"), now), queued(claim("me", "web", "main", "42"), now)),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "w", wantWaiters: []string{"me"},
		},
		{
			name: "stale holder, I am not queued and a waiter exists: it gets the lock",
			cur:  recordOf(held(claim("h", "api", "main", "1"), t0), queued(claim("w", "db", "main", "1"), now)),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "w", wantWaiters: []string{"me"},
		},
		{
			name: "handed over to me: confirm with a write",
			cur: func() *record.Record {
				h := queued(claim("me", "web", "main", "42"), now)
				h.HandedOver = true
				return recordOf(h)
			}(),
			me: claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Acquired, wantWrite: true, wantHolder: "me",
		},
		{
			name: "already holding, confirmed: nothing to write",
			cur:  recordOf(held(claim("me", "web", "main", "42"), t0)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Acquired, wantHolder: "me",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			policy := tt.policy
			if policy == "" {
				policy = record.PolicyNewest
			}
			if tt.cur != nil {
				tt.cur.Policy = policy
			}
			d := record.Decide(tt.cur, tt.me, policy, now, tt.holderAlive, waiterTTL)
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
	cur := recordOf(held(claim("h", "api", "main", "1"), t0))
	cur.Updated = metav1.NewMicroTime(ahead)

	d := record.Decide(cur, claim("me", "web", "main", "42"), record.PolicyNewest, t0, true, waiterTTL)
	require.NotNil(t, d.Record)
	assert.Equal(t, ahead, d.Record.Updated.Time, "updated keeps the later time")
	assert.Equal(t, ahead, d.Record.Waiters[0].Since.Time, "new claims are stamped no earlier than the record")
}

func TestDecideHolderClaim(t *testing.T) {
	t.Parallel()
	me := claim("me", "web", "main", "42")
	d := record.Decide(nil, me, record.PolicyNewest, t0, true, waiterTTL)
	require.NotNil(t, d.Record.Holder.Expires, "a holder without pod expires")
	assert.Equal(t, t0.Add(time.Hour), d.Record.Holder.Expires.Time, "expiry is the TTL")

	me.Pod = &record.PodRef{Namespace: "ci", Name: "build-42", UID: "u1"}
	d = record.Decide(nil, me, record.PolicyNewest, t0, true, waiterTTL)
	assert.Nil(t, d.Record.Holder.Expires, "a holder in a pod lives as long as the pod")
}

func TestDecideNextCheck(t *testing.T) {
	t.Parallel()
	cur := recordOf(held(claim("h", "api", "main", "1"), t0))
	d := record.Decide(cur, claim("me", "web", "main", "42"), record.PolicyNewest, t0, true, waiterTTL)
	// My place expires at t0+1m and is renewed at two thirds of it.
	assert.Equal(t, t0.Add(40*time.Second), d.NextCheck, "renewal before the holder's expiry")

	cur.Holder.Expires = microPtr(t0.Add(5 * time.Second))
	d = record.Decide(cur, claim("me", "web", "main", "42"), record.PolicyNewest, t0, true, waiterTTL)
	assert.Equal(t, t0.Add(5*time.Second), d.NextCheck, "the holder's expiry comes first")
}

// TestFencingTokenRecorded: a take-over leaves the token pending (the
// version it writes is the token); the next write by anyone records it; a
// re-entrant acquire finds it.
func TestFencingTokenRecorded(t *testing.T) {
	t.Parallel()
	d := record.Decide(nil, claim("h", "web", "main", "42"), record.PolicyNewest, t0, true, waiterTTL)
	require.True(t, d.TookOver)
	assert.True(t, d.Record.Holder.TokenPending, "pending after the take-over")
	assert.Empty(t, d.Record.Holder.Token)

	// Same session again with a change (an expired waiter dropped): the
	// hold keeps its token.
	cur := d.Record.DeepCopy()
	cur.Holder.TokenPending, cur.Holder.Token = false, "100"
	cur.Waiters = []record.Claim{queued(claim("w", "api", "main", "1"), t0.Add(-time.Hour))}
	again := record.Decide(cur, claim("h", "web", "main", "42"), record.PolicyNewest, t0.Add(time.Second), true, waiterTTL)
	require.NotNil(t, again.Record)
	assert.False(t, again.TookOver, "the same hold")
	assert.Equal(t, "100", again.Record.Holder.Token)

	// Handed over: the hand-over write is the take-over, its version the
	// token; confirming keeps it, and the hold's start.
	rec := recordOf(held(claim("h", "web", "main", "42"), t0))
	rec.HandOver(queued(claim("w", "api", "main", "1"), t0), metav1.NewMicroTime(t0), t0)
	assert.True(t, rec.Holder.TokenPending, "the hand-over's version is the new holder's token")
	assert.True(t, rec.Holder.HandedOver)
	conf := record.Decide(rec, claim("w", "api", "main", "1"), record.PolicyNewest, t0.Add(time.Second), true, waiterTTL)
	assert.False(t, conf.TookOver, "confirming is not a new take-over")
	assert.True(t, conf.Confirmed)
	assert.True(t, conf.Record.Holder.TokenPending, "still pending: the write records the version it was decided on")
	assert.False(t, conf.Record.Holder.HandedOver)
	assert.Equal(t, t0, conf.Record.Holder.Since.Time, "the hold began with the hand-over")

	// Handed over by a lockctl that left no token pending: confirming is
	// the take-over, as it was for it.
	old := recordOf(held(claim("h", "web", "main", "42"), t0))
	old.HandOver(queued(claim("w", "api", "main", "1"), t0), metav1.NewMicroTime(t0), t0)
	old.Holder.TokenPending = false
	conf = record.Decide(old, claim("w", "api", "main", "1"), record.PolicyNewest, t0.Add(time.Second), true, waiterTTL)
	assert.True(t, conf.TookOver, "no token to keep: a new one")
	assert.True(t, conf.Record.Holder.TokenPending)
}

func microPtr(t time.Time) *metav1.MicroTime {
	m := metav1.NewMicroTime(t)
	return &m
}

// lockConfigMap returns a lock ConfigMap whose record annotation is raw.
func lockConfigMap(raw string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{
			Namespace:   "locks",
			Name:        record.Name("staging"),
			Labels:      map[string]string{record.ManagedByLabel: record.ManagedByValue, record.KindLabel: record.KindValue},
			Annotations: map[string]string{record.RecordAnnotation: raw},
		},
	}
}

// The record's own limits, which lock's tests drive from outside it
// (record keeps them unexported).
const (
	// frozenVersion is the version of a record that carries a freeze.
	frozenVersion = "2.10"
	// maxRecordBytes bounds the record annotation's size.
	maxRecordBytes = 250 << 10
)
