package record

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func prio(c Claim, p Priority) Claim {
	c.Priority = p.Stored()
	return c
}

// waitingSince is c queued since since, its place renewed at now.
func waitingSince(c Claim, since, now time.Time) Claim {
	c = queued(c, since)
	c.Expires = microPtr(now.Add(waiterTTL))
	return c
}

func TestDecidePriority(t *testing.T) {
	t.Parallel()
	now := t0.Add(10 * time.Second)
	holder := held(claim("h", "api", "main", "1"), t0)
	tests := []struct {
		name        string
		cur         *Record
		me          Claim
		policy      Policy
		holderAlive bool

		wantOutcome Outcome
		wantWrite   bool
		wantHolder  string
		wantWaiters []string
		wantBy      string
	}{
		{
			name: "high joins ahead of normal waiters, behind the holder",
			cur:  recordOf(holder, queued(claim("n1", "db", "main", "1"), now), queued(claim("n2", "docs", "main", "1"), now)),
			me:   prio(claim("me", "web", "main", "42"), PriorityHigh), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me", "n1", "n2"},
		},
		{
			name: "high joins behind earlier high waiters",
			cur:  recordOf(holder, queued(prio(claim("h1", "db", "main", "1"), PriorityHigh), now), queued(claim("n1", "docs", "main", "1"), now)),
			me:   prio(claim("me", "web", "main", "42"), PriorityHigh), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"h1", "me", "n1"},
		},
		{
			name: "normal joins ahead of low waiters",
			cur:  recordOf(holder, queued(prio(claim("l1", "db", "main", "1"), PriorityLow), now)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me", "l1"},
		},
		{
			name: "low joins behind everyone",
			cur:  recordOf(holder, queued(claim("n1", "db", "main", "1"), now)),
			me:   prio(claim("me", "web", "main", "42"), PriorityLow), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"n1", "me"},
		},
		{
			name: "ageing: a low waiter of one ageing step counts as normal, and a new normal queues behind it",
			cur:  recordOf(holder, waitingSince(prio(claim("l1", "db", "main", "1"), PriorityLow), now.Add(-PriorityAgeing), now)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"l1", "me"},
		},
		{
			name: "ageing: after two steps a low waiter counts as high and even a new high queues behind it",
			cur:  recordOf(holder, waitingSince(prio(claim("l1", "db", "main", "1"), PriorityLow), now.Add(-2*PriorityAgeing), now)),
			me:   prio(claim("me", "web", "main", "42"), PriorityHigh), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"l1", "me"},
		},
		{
			name: "ageing: an aged waiter moves ahead of later waiters of a lower effective priority",
			cur: recordOf(holder,
				waitingSince(claim("n1", "docs", "main", "1"), now.Add(-PriorityAgeing/2), now),
				waitingSince(prio(claim("l1", "db", "main", "1"), PriorityLow), now.Add(-2*PriorityAgeing), now),
				queued(claim("me", "web", "main", "42"), now)),
			me: claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"l1", "n1", "me"},
		},
		{
			name: "a normal waiter appended behind low ones by an older lockctl is moved ahead",
			cur:  recordOf(holder, queued(prio(claim("l1", "db", "main", "1"), PriorityLow), now), queued(claim("me", "web", "main", "42"), now)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me", "l1"},
		},
		{
			name: "a high arrival never displaces a live holder",
			cur:  recordOf(holder),
			me:   prio(claim("me", "web", "main", "42"), PriorityHigh), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"},
		},
		{
			name: "stale holder: a high arrival takes the lock ahead of a normal waiter",
			cur:  recordOf(holder, queued(claim("n1", "db", "main", "1"), now)),
			me:   prio(claim("me", "web", "main", "42"), PriorityHigh), holderAlive: false,
			wantOutcome: Acquired, wantWrite: true, wantHolder: "me", wantWaiters: []string{"n1"},
		},
		{
			name: "stale holder: a normal arrival leaves the lock to a waiting normal",
			cur:  recordOf(holder, queued(claim("n1", "db", "main", "1"), now)),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "n1", wantWaiters: []string{"me"},
		},
		{
			name: "newest wins within a priority: a newer high replaces an older high",
			cur:  recordOf(holder, queued(claim("n1", "db", "main", "1"), now), queued(prio(claim("w", "web", "main", "40"), PriorityHigh), now)),
			me:   prio(claim("me", "web", "main", "42"), PriorityHigh), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me", "n1"},
		},
		{
			name: "across priorities nobody waiting is superseded: a newer normal queues behind an older high hotfix",
			cur:  recordOf(holder, queued(prio(claim("w", "web", "main", "40"), PriorityHigh), now)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"w", "me"},
		},
		{
			name: "across priorities: an older normal arrival does not give up to a newer high waiter",
			cur:  recordOf(holder, queued(prio(claim("w", "web", "main", "43"), PriorityHigh), now)),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"w", "me"},
		},
		{
			name: "a newer build holding supersedes an older one whatever its priority",
			cur:  recordOf(held(claim("h2", "web", "main", "43"), t0)),
			me:   prio(claim("me", "web", "main", "42"), PriorityHigh), holderAlive: true,
			wantOutcome: Superseded, wantHolder: "h2", wantBy: "h2",
		},
		{
			name: "fifo: priority still orders the queue",
			cur:  recordOf(holder, queued(claim("n1", "db", "main", "1"), now)),
			me:   prio(claim("me", "web", "main", "42"), PriorityHigh), policy: PolicyFIFO, holderAlive: true,
			wantOutcome: Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me", "n1"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			policy := tt.policy
			if policy == "" {
				policy = PolicyNewest
			}
			tt.cur.Policy = policy
			d := Decide(tt.cur, tt.me, policy, now, tt.holderAlive, waiterTTL)
			assert.Equal(t, tt.wantOutcome, d.Outcome, "outcome")
			require.Equal(t, tt.wantWrite, d.Record != nil, "write")
			rec := d.Record
			if rec == nil {
				rec = tt.cur
			}
			assert.Equal(t, tt.wantHolder, rec.Holder.ClaimID, "holder")
			if tt.wantWaiters == nil {
				tt.wantWaiters = []string{}
			}
			assert.Equal(t, tt.wantWaiters, sessions(rec.Waiters), "waiters")
			if tt.wantBy != "" {
				require.NotNil(t, d.By, "superseded by")
				assert.Equal(t, tt.wantBy, d.By.ClaimID, "superseded by")
			}
		})
	}
}

func TestDecideReplacementKeepsTheAge(t *testing.T) {
	t.Parallel()
	now := t0.Add(30 * time.Minute)
	old := waitingSince(prio(claim("w", "web", "main", "40"), PriorityLow), now.Add(-PriorityAgeing), now)
	cur := recordOf(held(claim("h", "api", "main", "1"), t0), old, queued(claim("n1", "db", "main", "1"), now))
	d := Decide(cur, prio(claim("me", "web", "main", "42"), PriorityLow), PolicyNewest, now, true, waiterTTL)
	require.NotNil(t, d.Record)
	assert.Equal(t, []string{"me", "n1"}, sessions(d.Record.Waiters), "the newer build keeps the older one's place")
	assert.Equal(t, old.Since, d.Record.Waiters[0].Since, "and the time it has waited, so ageing goes on")
}

func TestEffectivePriority(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		p      Priority
		waited time.Duration
		want   Priority
	}{
		{name: "normal fresh", p: "", want: PriorityNormal},
		{name: "low fresh", p: PriorityLow, want: PriorityLow},
		{name: "low just before one step", p: PriorityLow, waited: PriorityAgeing - time.Second, want: PriorityLow},
		{name: "low after one step", p: PriorityLow, waited: PriorityAgeing, want: PriorityNormal},
		{name: "low after two steps", p: PriorityLow, waited: 2 * PriorityAgeing, want: PriorityHigh},
		{name: "normal after one step", p: PriorityNormal, waited: PriorityAgeing, want: PriorityHigh},
		{name: "high stays high", p: PriorityHigh, waited: 5 * PriorityAgeing, want: PriorityHigh},
		{name: "unknown value counts as normal", p: "urgent", want: PriorityNormal},
		{name: "since in the future (another clock) is no ageing", p: PriorityLow, waited: -time.Hour, want: PriorityLow},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := queued(prio(claim("w", "web", "main", "1"), tt.p), t0)
			c.Priority = tt.p
			assert.Equal(t, tt.want, c.EffectivePriority(t0.Add(tt.waited)), "%s after %s", tt.p, tt.waited)
		})
	}
}

func TestParsePriority(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in      string
		want    Priority
		wantErr string
	}{
		{in: "", want: PriorityNormal},
		{in: "normal", want: PriorityNormal},
		{in: "high", want: PriorityHigh},
		{in: "low", want: PriorityLow},
		{in: "urgent", wantErr: `unknown priority "urgent": use "high", "normal" or "low"`},
	} {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := ParsePriority(tt.in)
			if tt.wantErr != "" {
				assert.EqualError(t, err, tt.wantErr, "ParsePriority(%q)", tt.in)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
