package lock

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/base/schema"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var update = flag.Bool("update", false, "rewrite golden files in testdata/")

func recordGolden(name string) string { return filepath.Join("testdata", "records", name) }

// TestRecordGoldenCurrent pins what this lockctl writes: the golden of the
// current record version.
func TestRecordGoldenCurrent(t *testing.T) {
	t.Parallel()
	since := metav1.NewMicroTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	exp := metav1.NewMicroTime(since.Add(time.Hour))
	wexp := metav1.NewMicroTime(since.Add(2 * time.Minute))
	rec := &record.Record{
		Target: "staging",
		Policy: record.PolicyNewest,
		Holder: record.Claim{
			Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "41", Sequence: ".github/workflows/deploy.yml"},
			CIJob:    record.CIJob{Job: "deploy", JobID: "GitHub Actions 3", Attempt: 2},
			RunURL:   "https://github.com/acme/web/actions/runs/1041/attempts/2",
			User:     "system:serviceaccount:ci:deployer", Credential: "pod-uid=0b7e1a52-3f0e-4d4c-9a55-7f1a0c2b9e11",
			Apps:    []string{"argocd/web", "flux/kustomization/apps/web"},
			ClaimID: "a1", Since: since, Expires: &exp, TTL: metav1.Duration{Duration: time.Hour}, Token: "1234",
			Cancelable: true, LedgerKept: true, Queued: microPtr(since.Add(-5 * time.Minute)),
			CancelRequest: &record.CancelRequest{
				Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "42"}, ClaimID: "c3", At: metav1.NewMicroTime(since.Add(time.Minute)),
			},
		},
		Waiters: []record.Claim{{
			Identity: record.Identity{Owner: "acme", Repo: "api", Branch: "main", Build: "7"},
			User:     "alice@example.com",
			Apps:     []string{"argocd/team-a/api", "flux/helmrelease/apps/api"},
			ClaimID:  "b2", Since: metav1.NewMicroTime(since.Add(time.Minute)), Expires: &wexp, Queued: microPtr(since.Add(time.Minute)),
			Pod: &record.PodRef{Namespace: "ci", Name: "build-7", UID: "u-7"}, Priority: record.PriorityHigh,
		}},
		Updated: metav1.NewMicroTime(since.Add(time.Minute)),
		History: []record.HistoryEntry{
			{Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "39"}, Since: metav1.NewMicroTime(since.Add(-time.Hour)),
				Until: metav1.NewMicroTime(since.Add(-30 * time.Minute)), Ended: record.EndBroken, By: "alice@laptop",
				Queued: microPtr(since.Add(-70 * time.Minute)), SupersededBy: "acme/web@main#40"},

			{Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "40"}, Pod: &record.PodRef{Namespace: "ci", Name: "build-40", UID: "u-40"},
				Since: metav1.NewMicroTime(since.Add(-30 * time.Minute)), Until: since, Ended: record.EndLost, Reason: "pod ci/build-40 is gone"},
		},
		Frozen: []record.FrozenSpan{
			{Since: metav1.NewMicroTime(since.Add(-3 * time.Hour)), Until: metav1.NewMicroTime(since.Add(-2 * time.Hour))},
		},
		BreakGlass: []record.GrantEntry{
			{User: "carol", At: metav1.NewMicroTime(since.Add(-20 * time.Minute)), Until: metav1.NewMicroTime(since.Add(-10 * time.Minute))},
		},
	}
	rec = kept(rec, &account{Pending: []runMark{{Namespace: "deploys", ClaimID: "a1"}}, Swept: []string{"ci"}})
	cm := lockConfigMap("")
	require.NoError(t, record.Encode(cm, rec))
	got := cm.Annotations[record.RecordAnnotation] + "\n"
	path := recordGolden("v" + record.RecordVersion + ".json")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), got, "record as written (go test ./lock -run TestRecordGoldenCurrent -update rewrites it)")
}

// TestRecordGoldenFrozen pins what this lockctl writes for a frozen lock:
// major version 2, which lockctl releases without freezes refuse.
func TestRecordGoldenFrozen(t *testing.T) {
	t.Parallel()
	since := metav1.NewMicroTime(time.Date(2026, 12, 3, 10, 0, 0, 0, time.UTC))
	exp := metav1.NewMicroTime(since.Add(time.Hour))
	rec := &record.Record{
		Target: "staging",
		Policy: record.PolicyNewest,
		Holder: record.Claim{
			Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "hotfix", Build: "41"},
			ClaimID:  "a1", Since: since, Expires: &exp, TTL: metav1.Duration{Duration: time.Hour}, Token: "1234", IgnoreFreeze: true,
		},
		Updated: metav1.NewMicroTime(since.Add(time.Minute)),
		Freeze: &record.Freeze{
			Reason: "release freeze", By: record.Identity{Owner: "alice@laptop", Repo: "ops", Branch: "main", Build: "1"},
			Since: metav1.NewMicroTime(since.Add(-time.Hour)), Until: metav1.NewMicroTime(since.Add(8 * time.Hour)),
			Overrides: []record.Override{{Identity: record.Identity{Owner: "acme", Repo: "web", Branch: "hotfix", Build: "41"}, At: since}},
		},
	}
	cm := lockConfigMap("")
	require.NoError(t, record.Encode(cm, rec))
	got := cm.Annotations[record.RecordAnnotation] + "\n"
	path := recordGolden("v" + frozenVersion + "-frozen.json")
	if *update {
		require.NoError(t, os.WriteFile(path, []byte(got), 0o644))
	}
	want, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, string(want), got, "record as written (go test ./lock -run TestRecordGoldenFrozen -update rewrites it)")

	rec.Freeze = nil
	require.NoError(t, record.Encode(cm, rec))
	assert.Contains(t, cm.Annotations[record.RecordAnnotation], `"version":"`+record.RecordVersion+`"`, "thawed, the record is major version 1 again")
}

// TestRecordVersionsRoundTrip reads the golden of every record version and
// writes it back, as a contender that changes nothing else would.
func TestRecordVersionsRoundTrip(t *testing.T) {
	t.Parallel()
	current := record.RecordVersion
	tests := []struct {
		file        string
		wantVersion string // version written back; "" for an error
		wantErr     string
	}{
		{file: "v1.0.json", wantVersion: current},
		{file: "v1.1.json", wantVersion: current},
		{file: "v1.2.json", wantVersion: current},
		{file: "v1.3.json", wantVersion: current},
		{file: "v1.4.json", wantVersion: current},
		{file: "v2.4-frozen.json", wantVersion: frozenVersion},
		{file: "v1.5.json", wantVersion: current},
		{file: "v2.5-frozen.json", wantVersion: frozenVersion},
		{file: "v1.6.json", wantVersion: current},
		{file: "v2.6-frozen.json", wantVersion: frozenVersion},
		{file: "v1.7.json", wantVersion: current},
		{file: "v2.7-frozen.json", wantVersion: frozenVersion},
		{file: "v1.8.json", wantVersion: current},
		{file: "v2.8-frozen.json", wantVersion: frozenVersion},
		{file: "v1.9.json", wantVersion: current},
		{file: "v2.9-frozen.json", wantVersion: frozenVersion},
		{file: "v" + current + ".json", wantVersion: current},
		{file: "v1.99-newer-minor.json", wantVersion: "1.99"},
		{file: "v" + frozenVersion + "-frozen.json", wantVersion: frozenVersion},
		{file: "v3.0.json", wantErr: "lock locks/lockctl-lock-staging has record version 3.0, which this lockctl cannot read (it reads versions 1 and 2, up to " + current + ")"},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			t.Parallel()
			raw, err := os.ReadFile(recordGolden(tt.file))
			require.NoError(t, err)
			rec, err := record.Decode(lockConfigMap(string(raw)))
			if tt.wantErr != "" {
				var ve *record.VersionError
				require.ErrorAs(t, err, &ve, "%s is refused", tt.file)
				assert.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err, "%s decodes", tt.file)
			again := lockConfigMap("")
			require.NoError(t, record.Encode(again, rec))

			var in, out map[string]any
			require.NoError(t, json.Unmarshal(raw, &in))
			require.NoError(t, json.Unmarshal([]byte(again.Annotations[record.RecordAnnotation]), &out))
			in["version"] = tt.wantVersion
			assert.Equal(t, in, out, "%s written back: every field kept, the version at least %s", tt.file, current)
		})
	}
}

// TestRecordUnknownFieldsSurviveDecisions checks that fields of a newer minor
// version stay in place through the changes a contender makes.
func TestRecordUnknownFieldsSurviveDecisions(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(recordGolden("v1.99-newer-minor.json"))
	require.NoError(t, err)
	cur, err := record.Decode(lockConfigMap(string(raw)))
	require.NoError(t, err)

	me := claim("c3", "docs", "main", "3")
	now := cur.Updated.Add(10 * time.Second)
	d := record.Decide(cur, me, cur.Policy, now, true, time.Minute)
	require.NotNil(t, d.Record, "joining the queue is a write")
	cm := lockConfigMap("")
	require.NoError(t, record.Encode(cm, d.Record))

	var doc struct {
		Notes   json.RawMessage   `json:"notes"`
		Holder  map[string]any    `json:"holder"`
		Waiters []map[string]any  `json:"waiters"`
		Version string            `json:"version"`
		Rest    map[string]string `json:"-"`
	}
	require.NoError(t, json.Unmarshal([]byte(cm.Annotations[record.RecordAnnotation]), &doc))
	assert.JSONEq(t, `[{"build":"40","owner":"acme","released":"2026-12-03T09:59:00.000000Z"}]`, string(doc.Notes), "top-level field kept")
	assert.Equal(t, "fields of a newer minor version are kept", doc.Holder["note"], "holder field kept")
	require.Len(t, doc.Waiters, 2)
	assert.EqualValues(t, 3, doc.Waiters[0]["rank"], "waiter field kept")
	assert.NotContains(t, doc.Waiters[1], "rank", "the new waiter has only its own fields")
	assert.Equal(t, "1.99", doc.Version)

	// The account of run jobs (1.7) keeps a newer minor's fields too, in
	// itself and in each mark, through a take by a run that marks.
	afterExpiry := cur.Updated.Add(5 * time.Minute)
	d = record.Decide(cur, me, cur.Policy, afterExpiry, false, time.Minute)
	require.Equal(t, record.Acquired, d.Outcome, "the expired holder is replaced, the waiter gone")
	_, mark, err := takeLedger(cur, &d, me, keeper("dev", true), afterExpiry)
	require.NoError(t, err)
	require.Equal(t, "c3", mark)
	require.NoError(t, record.Encode(cm, d.Record))
	var rj struct {
		RunJobs map[string]any `json:"runJobs"`
	}
	require.NoError(t, json.Unmarshal([]byte(cm.Annotations[record.RecordAnnotation]), &rj))
	assert.Equal(t, "2026-12-03T10:01:00.000000Z", rj.RunJobs["checked"], "the account's own newer field kept")
	assert.Equal(t, []any{
		map[string]any{"namespace": "ci", "session": "a1", "job": "deploy-7"},
		map[string]any{"namespace": "dev", "session": "c3"},
	}, rj.RunJobs["pending"], "a mark's newer field kept; the run's mark added")
	assert.NotContains(t, rj.RunJobs, "swept", "dev is marked, no longer swept")
}

func TestSchemaVersionParse(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		in      string
		want    schema.Version
		wantErr bool
	}{
		{in: "1.1", want: schema.Version{Major: 1, Minor: 1}},
		{in: "2", want: schema.Version{Major: 2}},
		{in: "10.20", want: schema.Version{Major: 10, Minor: 20}},
		{in: "", wantErr: true},
		{in: "v1", wantErr: true},
		{in: "1.x", wantErr: true},
		{in: "-1.0", wantErr: true},
	} {
		t.Run(tt.in, func(t *testing.T) {
			got, err := schema.Parse(tt.in)
			if tt.wantErr {
				assert.Error(t, err, "Parse(%q)", tt.in)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, got)
		})
	}
}
