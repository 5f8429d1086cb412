package record

import (
	"errors"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// FuzzDecode feeds Decode arbitrary record annotations. Decode must never
// panic, must report every bad record as an *InvalidError (or a
// *VersionError for another major version), and a record it
// accepts must survive being written back and read again (what the next
// contender does with it). Its strict path must read every record it takes
// as the full decode does (assertStrictAgrees).
//
// The seed corpus is in testdata/fuzz/FuzzDecode; run it longer with
//
//	go test ./lock -run '^$' -fuzz '^FuzzDecode$' -fuzztime 30s
func FuzzDecode(f *testing.F) {
	now := metav1.NewMicroTime(time.Date(2026, 12, 2, 16, 0, 0, 0, time.UTC))
	exp := metav1.NewMicroTime(now.Add(time.Hour))
	valid := &Record{
		Target: "staging",
		Policy: PolicyNewest,
		Holder: Claim{
			Identity: Identity{Owner: "acme", Repo: "web", Branch: "main", Build: "41"},
			ClaimID:  "a1", Since: now, Expires: &exp,
		},
		Waiters: []Claim{{
			Identity: Identity{Owner: "acme", Repo: "api", Branch: "main", Build: "7"},
			ClaimID:  "b2", Since: now, Expires: &exp,
			Pod: &PodRef{Namespace: "ci", Name: "build-7", UID: "u-1"},
		}},
		Updated: now,
	}
	cm := lockConfigMap("")
	if err := Encode(cm, valid); err != nil {
		f.Fatal(err)
	}
	f.Add(cm.Annotations[RecordAnnotation])
	for _, seed := range []string{
		``,
		`{}`,
		`null`,
		`[]`,
		`{"target":"t","policy":"fifo","holder":{"owner":"o","repo":"r","branch":"b","build":"1","session":"s","since":"2026-12-02T16:00:00Z","expires":"2026-12-02T17:00:00Z"},"updated":"2026-12-02T16:00:00Z"}`,
		`{"target":"t","policy":"newest","holder":{"owner":"o","repo":"r","branch":"b","build":"-1","session":"s","since":"2026-12-02T16:00:00Z","expires":"x"},"updated":1}`,
		`{"target":"t","holder":{"owner":"o","repo":"r","branch":"b","build":"1","session":"s","since":"2026-12-02T16:00:00Z","pod":{"namespace":"","name":""}},"waiters":[{}],"updated":"2026-12-02T16:00:00Z"}`,
		`{"target":"t","unknown":true}`,
		`{"updated":"0001-01-01T00:00:00.0000001Z"}`,
		`{"version":"2.0","target":"t"}`,
		`{"version":"1.7","target":"t","policy":"fifo","holder":{"owner":"o","repo":"r","branch":"b","build":"1","session":"s","since":"2026-12-02T16:00:00Z","expires":"2026-12-02T17:00:00Z","new":{"a":1}},"updated":"2026-12-02T16:00:00Z","history":[]}`,
		`{"version":"1.8","target":"t","policy":"fifo","holder":{"owner":"o","repo":"r","branch":"b","build":"1","user":"system:serviceaccount:ci:deployer","session":"s","since":"2026-12-02T16:00:00.000000Z"},"waiters":[{"owner":"o","repo":"r","branch":"b","build":"2","user":7,"session":"w","since":"2026-12-02T16:00:00.000000Z"}],"updated":"2026-12-02T16:00:00.000000Z"}`,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		assertStrictAgrees(t, raw)
		rec, err := Decode(lockConfigMap(raw))
		if err != nil {
			var (
				invalid *InvalidError
				version *VersionError
			)
			if errors.As(err, &version) {
				return
			}
			if !errors.As(err, &invalid) {
				t.Fatalf("Decode(%q) = %T %v, want *InvalidError or *VersionError", raw, err, err)
			}
			if invalid.Field == "" || invalid.Reason == "" {
				t.Fatalf("Decode(%q): error names no field or reason: %v", raw, err)
			}
			return
		}
		again := lockConfigMap("")
		if err := Encode(again, rec); err != nil {
			t.Fatalf("encode the record decoded from %q: %v", raw, err)
		}
		if _, err := Decode(again); err != nil {
			t.Fatalf("Decode accepted %q but not its own re-encoding %q: %v", raw, again.Annotations[RecordAnnotation], err)
		}
	})
}
