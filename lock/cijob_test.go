package lock

import (
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// ofJob puts claim c in CI job name, run id, attempt n.
func ofJob(c record.Claim, name, id string, n uint64) record.Claim {
	c.CIJob = record.CIJob{Job: name, JobID: id, Attempt: n}
	return c
}

// inSequence counts c's build in sequence seq.
func inSequence(c record.Claim, seq string) record.Claim {
	c.Sequence = seq
	return c
}

// TestDecideCIJobs pins who holds a lock once: one CI job of a build, not
// the build; a retried step of the job re-enters, a later run of the job
// takes over, another job of the build waits; newest-wins compares builds
// of one sequence only.
func TestDecideCIJobs(t *testing.T) {
	t.Parallel()
	now := t0.Add(10 * time.Second)
	deploy := inSequence(claim("h", "web", "main", "88"), ".github/workflows/deploy.yml")
	holder := held(ofJob(deploy, "deploy", "GitHub Actions 3", 1), t0)
	tests := []struct {
		name        string
		cur         *record.Record
		me          record.Claim
		holderAlive bool

		wantOutcome   record.Outcome
		wantHolder    string
		wantWaiters   []string
		wantReentered bool
		wantTookOver  bool
		wantRanAgain  bool
	}{
		{
			name:        "a matrix sibling (same build and job name, another runner) waits",
			cur:         recordOf(holder),
			me:          withSession(ofJob(deploy, "deploy", "GitHub Actions 4", 1), "m"),
			holderAlive: true,
			wantOutcome: record.Waiting, wantHolder: "h", wantWaiters: []string{"m"},
		},
		{
			name:        "another job of the build (GitLab's parallel job) waits",
			cur:         recordOf(held(ofJob(claim("h", "web", "main", "9"), "deploy 1/2", "1001", 1001), t0)),
			me:          ofJob(claim("p", "web", "main", "9"), "deploy 2/2", "1002", 1002),
			holderAlive: true,
			wantOutcome: record.Waiting, wantHolder: "h", wantWaiters: []string{"p"},
		},
		{
			name:        "a retried step of the job re-enters",
			cur:         recordOf(holder),
			me:          withSession(ofJob(deploy, "deploy", "GitHub Actions 3", 1), "s2"),
			holderAlive: true,
			wantOutcome: record.Acquired, wantHolder: "h", wantReentered: true,
		},
		{
			name:        "a re-run of the job (next attempt, another runner) takes over, with a new token",
			cur:         recordOf(holder, queued(claim("w", "api", "main", "3"), t0)),
			me:          withSession(ofJob(deploy, "deploy", "GitHub Actions 9", 2), "r"),
			holderAlive: true,
			wantOutcome: record.Acquired, wantHolder: "r", wantWaiters: []string{"w"}, wantTookOver: true, wantRanAgain: true,
		},
		{
			name:        "GitLab's retry (the same job name, a higher job ID) takes over",
			cur:         recordOf(held(ofJob(claim("h", "web", "main", "9"), "deploy", "1001", 1001), t0)),
			me:          ofJob(claim("r", "web", "main", "9"), "deploy", "1007", 1007),
			holderAlive: true,
			wantOutcome: record.Acquired, wantHolder: "r", wantTookOver: true, wantRanAgain: true,
		},
		{
			name:        "an earlier run of the job does not take over a later one: it waits",
			cur:         recordOf(held(ofJob(deploy, "deploy", "GitHub Actions 9", 2), t0)),
			me:          withSession(ofJob(deploy, "deploy", "GitHub Actions 3", 1), "old"),
			holderAlive: true,
			wantOutcome: record.Waiting, wantHolder: "h", wantWaiters: []string{"old"},
		},
		{
			name:        "a job without attempts (Buildkite's retry) never takes over: it waits",
			cur:         recordOf(held(ofJob(claim("h", "web", "main", "5"), "step-1", "job-a", 0), t0)),
			me:          ofJob(claim("r", "web", "main", "5"), "step-1", "job-b", 0),
			holderAlive: true,
			wantOutcome: record.Waiting, wantHolder: "h", wantWaiters: []string{"r"},
		},
		{
			name:        "the same run number of another workflow is another build: it waits",
			cur:         recordOf(holder),
			me:          withSession(ofJob(inSequence(deploy, ".github/workflows/hotfix.yml"), "deploy", "GitHub Actions 3", 1), "x"),
			holderAlive: true,
			wantOutcome: record.Waiting, wantHolder: "h", wantWaiters: []string{"x"},
		},
		{
			name:        "a holder without a job (written by a lockctl before 1.6) is not re-entered by a job of its build",
			cur:         recordOf(held(deploy, t0)),
			me:          withSession(ofJob(deploy, "deploy", "GitHub Actions 3", 1), "n"),
			holderAlive: true,
			wantOutcome: record.Waiting, wantHolder: "h", wantWaiters: []string{"n"},
		},
		{
			name:        "builds without jobs on either side re-enter, as before",
			cur:         recordOf(held(claim("h", "web", "main", "31"), t0)),
			me:          claim("s2", "web", "main", "31"),
			holderAlive: true,
			wantOutcome: record.Acquired, wantHolder: "h", wantReentered: true,
		},
		{
			name: "hotfix.yml run 3 behind deploy.yml run 500: waits, not superseded",
			cur: recordOf(held(ofJob(inSequence(claim("h", "web", "main", "500"), ".github/workflows/deploy.yml"),
				"deploy", "GitHub Actions 1", 1), t0)),
			me:          ofJob(inSequence(claim("hf", "web", "main", "3"), ".github/workflows/hotfix.yml"), "hotfix", "GitHub Actions 2", 1),
			holderAlive: true,
			wantOutcome: record.Waiting, wantHolder: "h", wantWaiters: []string{"hf"},
		},
		{
			name: "deploy.yml run 499 behind run 500 of the same workflow: superseded",
			cur: recordOf(held(ofJob(inSequence(claim("h", "web", "main", "500"), ".github/workflows/deploy.yml"),
				"deploy", "GitHub Actions 1", 1), t0)),
			me:          ofJob(inSequence(claim("o", "web", "main", "499"), ".github/workflows/deploy.yml"), "deploy", "GitHub Actions 2", 1),
			holderAlive: true,
			wantOutcome: record.Superseded, wantHolder: "h",
		},
		{
			name: "a third matrix job behind a waiting sibling queues too: jobs of a build are not duplicates",
			cur: recordOf(holder,
				queued(withSession(ofJob(deploy, "deploy", "GitHub Actions 4", 1), "m1"), t0)),
			me:          withSession(ofJob(deploy, "deploy", "GitHub Actions 5", 1), "m2"),
			holderAlive: true,
			wantOutcome: record.Waiting, wantHolder: "h", wantWaiters: []string{"m1", "m2"},
		},
		{
			name:        "the same build again without jobs, behind its own waiting claim, gives up as before",
			cur:         recordOf(held(claim("h", "api", "main", "1"), t0), queued(claim("w", "web", "main", "31"), t0)),
			me:          claim("w2", "web", "main", "31"),
			holderAlive: true,
			wantOutcome: record.Superseded, wantHolder: "h", wantWaiters: []string{"w"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := record.Decide(tt.cur, tt.me, record.PolicyNewest, now, tt.holderAlive, waiterTTL)
			assert.Equal(t, tt.wantOutcome, d.Outcome, "outcome")
			assert.Equal(t, tt.wantReentered, d.Reentered, "re-entered")
			assert.Equal(t, tt.wantTookOver, d.TookOver, "took over (a new token)")
			assert.Equal(t, tt.wantRanAgain, d.RanAgain, "ran again")
			rec := tt.cur
			if d.Record != nil {
				rec = d.Record
			}
			assert.Equal(t, tt.wantHolder, rec.Holder.ClaimID, "holder")
			assert.Equal(t, tt.wantWaiters, nilIfEmpty(sessions(rec.Waiters)), "waiters")
			if tt.wantRanAgain {
				require.NotNil(t, d.StaleHolder, "the earlier run's hold is recorded as ended")
				assert.Equal(t, tt.cur.Holder.ClaimID, d.StaleHolder.ClaimID)
				assert.Equal(t, tt.me.CIJob, rec.Holder.CIJob, "the new run's job holds")
			}
		})
	}
}

// TestDecideRanAgainWhileFrozen: a later run of the holder's job does not
// take a frozen lock; it waits for the freeze like anyone.
func TestDecideRanAgainWhileFrozen(t *testing.T) {
	t.Parallel()
	now := t0.Add(10 * time.Second)
	rec := recordOf(held(ofJob(claim("h", "web", "main", "9"), "deploy", "1001", 1001), t0))
	rec.Freeze = &record.Freeze{Reason: "release", Since: rec.Updated, Until: *microPtr(t0.Add(time.Hour))}
	d := record.Decide(rec, ofJob(claim("r", "web", "main", "9"), "deploy", "1007", 1007), record.PolicyNewest, now, true, waiterTTL)
	assert.Equal(t, record.Waiting, d.Outcome)
	assert.False(t, d.RanAgain)
}

// TestOwnJob pins whose hold a release without a token may end.
func TestOwnJob(t *testing.T) {
	t.Parallel()
	a1 := record.CIJob{Job: "deploy", JobID: "runner-1", Attempt: 1}
	tests := []struct {
		name         string
		held, caller record.CIJob
		want         bool
	}{
		{name: "the same job", held: a1, caller: a1, want: true},
		{name: "a matrix sibling", held: a1, caller: record.CIJob{Job: "deploy", JobID: "runner-2", Attempt: 1}},
		{name: "another job of the build", held: a1, caller: record.CIJob{Job: "cleanup", JobID: "runner-1", Attempt: 1}},
		{name: "a later run of the job", held: a1, caller: record.CIJob{Job: "deploy", JobID: "runner-7", Attempt: 2}, want: true},
		{name: "an earlier run of the job", held: record.CIJob{Job: "deploy", JobID: "runner-7", Attempt: 2}, caller: a1},
		{name: "a holder without a job (before 1.6)", caller: a1, want: true},
		{name: "a caller without a job (flags, a terminal)", held: a1, want: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, record.OwnJob(tt.held, tt.caller))
		})
	}
}

// TestIdentityNames pins how Release matches a holder by identity:
// sequences count when both sides know one.
func TestIdentityNames(t *testing.T) {
	t.Parallel()
	deploy := record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "88", Sequence: ".github/workflows/deploy.yml"}
	hotfix := deploy
	hotfix.Sequence = ".github/workflows/hotfix.yml"
	none := deploy
	none.Sequence = ""
	assert.True(t, deploy.Names(deploy))
	assert.False(t, hotfix.Names(deploy), "run 88 of another workflow is another build")
	assert.True(t, none.Names(deploy), "a caller naming the build with flags alone")
	assert.True(t, deploy.Names(none), "a holder written before sequences existed")
}

func withSession(c record.Claim, s string) record.Claim {
	c.ClaimID = s
	return c
}

func nilIfEmpty(s []string) []string {
	if len(s) == 0 {
		return nil
	}
	return s
}
