package lock

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func frozen(rec *record.Record, until time.Time) *record.Record {
	rec.Freeze = &record.Freeze{
		Reason: "release", By: record.Identity{Owner: "alice", Repo: "ops", Branch: "main", Build: "1"},
		Since: metav1.NewMicroTime(t0), Until: metav1.NewMicroTime(until),
	}
	return rec
}

// freeRecord is a lock nobody holds (the free placeholder), with waiters.
func freeRecord(waiters ...record.Claim) *record.Record {
	rec := recordOf(record.Claim{})
	rec.Free(metav1.NewMicroTime(t0))
	rec.Waiters = waiters
	return rec
}

func ignoring(c record.Claim) record.Claim {
	c.IgnoreFreeze = true
	return c
}

func TestDecideFreeze(t *testing.T) {
	t.Parallel()
	now := t0.Add(10 * time.Second)
	until := now.Add(time.Hour)
	holder := held(claim("h", "api", "main", "1"), t0)
	tests := []struct {
		name        string
		cur         *record.Record
		me          record.Claim
		holderAlive bool

		wantOutcome   record.Outcome
		wantWrite     bool
		wantHolder    string
		wantWaiters   []string
		wantFrozen    bool
		wantOverrides []string
		wantNextCheck time.Time
	}{
		{
			name: "frozen with a live holder: the holder keeps it",
			cur:  frozen(recordOf(holder), until),
			me:   claim("h", "api", "main", "1"), holderAlive: true,
			wantOutcome: record.Acquired, wantHolder: "h", wantFrozen: true,
		},
		{
			name: "frozen with a live holder: I queue",
			cur:  frozen(recordOf(holder), until),
			me:   claim("me", "web", "main", "42"), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"}, wantFrozen: true,
		},
		{
			name: "frozen and free: I wait until the freeze ends",
			cur:  frozen(freeRecord(), now.Add(20*time.Second)),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "released", wantWaiters: []string{"me"}, wantFrozen: true,
			wantNextCheck: now.Add(20 * time.Second),
		},
		{
			name: "frozen, dead holder: it leaves, nobody takes over",
			cur:  frozen(recordOf(holder, queued(claim("w", "db", "main", "1"), now)), until),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "released", wantWaiters: []string{"w", "me"}, wantFrozen: true,
		},
		{
			name: "frozen and free: --ignore-freeze takes it and is recorded",
			cur:  frozen(freeRecord(queued(claim("w", "db", "main", "1"), now)), until),
			me:   ignoring(claim("me", "web", "main", "42")), holderAlive: false,
			wantOutcome: record.Acquired, wantWrite: true, wantHolder: "me", wantWaiters: []string{"w"}, wantFrozen: true,
			wantOverrides: []string{"acme/web@main#42"},
		},
		{
			name: "frozen, dead holder: a waiter that ignores the freeze gets it, ahead of others",
			cur:  frozen(recordOf(holder, queued(claim("w", "db", "main", "1"), now), queued(ignoring(claim("x", "docs", "main", "1")), now)), until),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "x", wantWaiters: []string{"w", "me"}, wantFrozen: true,
			wantOverrides: []string{"acme/docs@main#1"},
		},
		{
			name: "frozen with a live holder: --ignore-freeze still never displaces it",
			cur:  frozen(recordOf(holder), until),
			me:   ignoring(claim("me", "web", "main", "42")), holderAlive: true,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "h", wantWaiters: []string{"me"}, wantFrozen: true,
		},
		{
			name: "freeze over, free: I take it and the freeze is dropped",
			cur:  frozen(freeRecord(), now.Add(-time.Second)),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: record.Acquired, wantWrite: true, wantHolder: "me",
		},
		{
			name: "freeze over, free: the first waiter gets it",
			cur:  frozen(freeRecord(queued(claim("w", "db", "main", "1"), now)), now.Add(-time.Second)),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "w", wantWaiters: []string{"me"},
		},
		{
			name: "frozen: newest wins still applies among waiters",
			cur:  frozen(freeRecord(queued(claim("w", "web", "main", "40"), now)), until),
			me:   claim("me", "web", "main", "42"), holderAlive: false,
			wantOutcome: record.Waiting, wantWrite: true, wantHolder: "released", wantWaiters: []string{"me"}, wantFrozen: true,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := record.Decide(tt.cur, tt.me, record.PolicyNewest, now, tt.holderAlive, waiterTTL)
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
			assert.Equal(t, tt.wantFrozen, rec.Freeze != nil, "freeze kept in the record")
			if d.Outcome == record.Waiting {
				assert.Equal(t, tt.wantFrozen, d.Freeze != nil, "decision names the freeze")
			}
			var overrides []string
			if rec.Freeze != nil {
				for _, o := range rec.Freeze.Overrides {
					overrides = append(overrides, o.Identity.String())
				}
			}
			assert.Equal(t, tt.wantOverrides, overrides, "overrides recorded")
			if tt.wantOverrides != nil {
				assert.Contains(t, rec.Holder.IgnoredFreeze, "frozen until", "the holder carries the freeze it ignored")
			} else {
				assert.Empty(t, rec.Holder.IgnoredFreeze, "no freeze ignored")
			}
			if !tt.wantNextCheck.IsZero() {
				assert.Equal(t, tt.wantNextCheck, d.NextCheck, "decide again when the freeze ends")
			}
		})
	}
}

func TestDecideFreezeRecordVersion(t *testing.T) {
	t.Parallel()
	now := t0.Add(10 * time.Second)
	cur := frozen(recordOf(held(claim("h", "api", "main", "1"), t0)), now.Add(-time.Second))
	cur.Version = frozenVersion
	d := record.Decide(cur, claim("me", "web", "main", "42"), record.PolicyNewest, now, true, waiterTTL)
	require.NotNil(t, d.Record)
	cm := lockConfigMap("")
	require.NoError(t, record.Encode(cm, d.Record))
	rec, err := record.Decode(cm)
	require.NoError(t, err)
	assert.Equal(t, record.RecordVersion, rec.Version, "an ended freeze is dropped and the record is major version 1 again")
	assert.Nil(t, rec.Freeze)
}

// TestFreezeVersionCarriesMinor: freezing a record of a newer minor keeps
// that minor under major 2, and thawing it gives the same minor under
// major 1, so the newer fields it carries keep their version.
func TestFreezeVersionCarriesMinor(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		read    string
		frozen  bool
		wantVer string
	}{
		{name: "current, frozen", read: record.RecordVersion, frozen: true, wantVer: frozenVersion},
		{name: "current, thawed", read: frozenVersion, wantVer: record.RecordVersion},
		{name: "newer minor, frozen", read: "1.99", frozen: true, wantVer: "2.99"},
		{name: "newer minor, thawed", read: "2.99", wantVer: "1.99"},
		{name: "older, frozen", read: "1.1", frozen: true, wantVer: frozenVersion},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := recordOf(held(claim("h", "api", "main", "1"), t0))
			rec.Version = tt.read
			if tt.frozen {
				frozen(rec, t0.Add(time.Hour))
			}
			cm := lockConfigMap("")
			require.NoError(t, record.Encode(cm, rec))
			got, err := record.Decode(cm)
			require.NoError(t, err, "read back %s", tt.read)
			assert.Equal(t, tt.wantVer, got.Version, "version written for %s", tt.read)
		})
	}
}

// TestDecodeVersion2NeedsAFreeze: a major-2 record is a frozen lock; one
// without a freeze is refused as invalid rather than read as version 1.
func TestDecodeVersion2NeedsAFreeze(t *testing.T) {
	t.Parallel()
	cm := lockConfigMap(`{"version":"2.4","target":"staging","policy":"newest","holder":{"owner":"acme","repo":"web","branch":"main","build":"1","session":"a","since":"2026-12-03T10:00:00.000000Z","expires":"2026-12-03T11:00:00.000000Z","ttl":"1h0m0s"},"updated":"2026-12-03T10:00:00.000000Z"}`)
	_, err := record.Decode(cm)
	require.Error(t, err)
	assert.Contains(t, err.Error(), "freeze")
}

// TestFreezeIgnoredIsRecorded: a holder that took a frozen lock carries the
// freeze, keeps it when it confirms a hand-over, and its history entry
// keeps it after the freeze is gone.
func TestFreezeIgnoredIsRecorded(t *testing.T) {
	t.Parallel()
	now := t0.Add(10 * time.Second)
	cur := frozen(freeRecord(queued(claim("w", "db", "main", "1"), now)), now.Add(time.Hour))
	me := ignoring(claim("me", "web", "main", "42"))
	d := record.Decide(cur, me, record.PolicyNewest, now, false, waiterTTL)
	require.Equal(t, record.Acquired, d.Outcome)
	require.NotNil(t, d.Record)
	assert.Contains(t, d.Record.Holder.IgnoredFreeze, `"release"`, "the holder carries the freeze it ignored")

	// Renewed by the same session after the freeze ended: still recorded.
	later := now.Add(2 * time.Hour)
	d2 := record.Decide(d.Record, me, record.PolicyNewest, later, true, waiterTTL)
	rec := d2.Record
	if rec == nil {
		rec = d.Record
	}
	assert.Nil(t, rec.Freeze, "the freeze is over")
	assert.NotEmpty(t, rec.Holder.IgnoredFreeze, "the hold still says it ignored a freeze")
	rec.Ended(rec.Holder, metav1.NewMicroTime(later), record.EndReleased, "", "")
	require.NotEmpty(t, rec.History)
	assert.Equal(t, rec.Holder.IgnoredFreeze, rec.History[len(rec.History)-1].IgnoredFreeze, "history keeps it")
}
