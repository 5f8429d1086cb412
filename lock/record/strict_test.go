package record

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/base/schema"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// assertStrictAgrees checks that when the strict decode takes raw, the full
// one (json.Unmarshal into Record, keeping unknown fields) reads the same
// record from it and peeks the same version, and checkTimes, which Decode
// runs on the full decode's records only, finds nothing wrong in it.
func assertStrictAgrees(t *testing.T, raw string) bool {
	t.Helper()
	strict, ok := decodeStrict(raw)
	if !ok {
		return false
	}
	var full Record
	require.NoError(t, json.Unmarshal([]byte(raw), &full), "the strict decode took %q", raw)
	if !reflect.DeepEqual(strict, &full) {
		t.Fatalf("the strict decode of %q differs from the full one:\nstrict %+v\nfull   %+v", raw, strict, &full)
	}
	v, err := schema.Peek([]byte(raw))
	require.NoError(t, err)
	require.Equal(t, v, strict.Version)
	field, reason := checkTimes(raw)
	require.Empty(t, field, "the strict decode took %q, whose %s checkTimes refuses: %s", raw, field, reason)
	return true
}

// TestStrictDecodeAgrees: the strict decode takes every record without
// fields this lockctl does not know and reads it as the full decode does;
// it leaves the rest to the full decode (which keeps unknown fields).
func TestStrictDecodeAgrees(t *testing.T) {
	files, err := filepath.Glob("../testdata/records/*.json")
	require.NoError(t, err)
	require.NotEmpty(t, files)
	for _, f := range files {
		raw, err := os.ReadFile(f)
		require.NoError(t, err)
		took := assertStrictAgrees(t, string(raw))
		t.Logf("%s: strict %v", filepath.Base(f), took)
	}
	busy := string(contendedRecord(t).Annotations[RecordAnnotation])
	assert.True(t, assertStrictAgrees(t, busy), "a busy lock's record, as this lockctl writes it")

	for name, raw := range map[string]string{
		"a newer minor's field":       `{"version":"1.99","target":"t","policy":"fifo","holder":{"owner":"o","repo":"r","branch":"b","build":"1","session":"s","since":"2026-12-02T16:00:00.000000Z","expires":"2026-12-02T17:00:00.000000Z","new":1},"updated":"2026-12-02T16:00:00.000000Z"}`,
		"a field unknown in a freeze": `{"version":"2.7","target":"t","policy":"fifo","holder":{},"freeze":{"reason":"r","by":{"owner":"o","repo":"r","branch":"b","build":"1"},"since":"2026-12-02T16:00:00.000000Z","until":"2026-12-02T17:00:00.000000Z","new":1},"updated":"2026-12-02T16:00:00.000000Z"}`,
		"a time without microseconds": `{"target":"t","policy":"fifo","holder":{"owner":"o","repo":"r","branch":"b","build":"1","session":"s","since":"2026-12-02T16:00:00Z","expires":"2026-12-02T17:00:00Z"},"updated":"2026-12-02T16:00:00Z"}`,
		"something after the record":  `{"target":"t"} {}`,
		"not an object":               `[]`,
	} {
		assert.False(t, assertStrictAgrees(t, raw), name)
	}
}

// TestStrictTypesKnowEveryField: the strict decode's copies of the record's
// types name the same JSON fields as those types, so a field added to one
// is added to the other (else every record with it would go the slow way).
func TestStrictTypesKnowEveryField(t *testing.T) {
	t.Parallel()
	assert.Equal(t, recordFields.Get(), schema.Fields(strictRecord{}))
}

// TestDecodeKeepsUnknownFieldsPastTheStrictPath: a record the strict decode
// refuses still reads, unknown fields kept for the write back.
func TestDecodeKeepsUnknownFieldsPastTheStrictPath(t *testing.T) {
	raw := `{"version":"1.99","target":"t","policy":"fifo","holder":{"owner":"o","repo":"r","branch":"b","build":"1","session":"s","since":"2026-12-02T16:00:00.000000Z","expires":"2026-12-02T17:00:00.000000Z","new":1},"updated":"2026-12-02T16:00:00.000000Z","later":"x"}`
	rec, err := Decode(lockConfigMap(raw))
	require.NoError(t, err)
	assert.Equal(t, json.RawMessage(`1`), rec.Holder.unknown["new"])
	assert.Equal(t, json.RawMessage(`"x"`), rec.unknown["later"])
}

// contendedRecord is the lock of a busy round: a holder, 19 waiters and
// MaxHistory past holds.
func contendedRecord(tb testing.TB) *corev1.ConfigMap {
	now := time.Date(2026, 12, 5, 10, 0, 0, 0, time.UTC)
	ts := metav1.NewMicroTime(now)
	rec := &Record{Target: "round", Policy: PolicyFIFO, Updated: ts}
	rec.Holder = holding(claim("s-holder", "repo-00", "main", "1"), ts, now)
	for i := 1; i < 20; i++ {
		rec.Waiters = append(rec.Waiters, waiting(claim(fmt.Sprintf("s-%02d", i), fmt.Sprintf("repo-%02d", i), "main", "1"), ts, now, time.Minute))
	}
	for i := range MaxHistory {
		rec.History = append(rec.History, HistoryEntry{Identity: Identity{Owner: "bench", Repo: fmt.Sprintf("repo-%02d", i), Branch: "main", Build: "1"}, Since: ts, Until: ts, Ended: EndReleased})
	}
	return lockConfigMapOf(tb, rec)
}

func lockConfigMapOf(tb testing.TB, rec *Record) *corev1.ConfigMap {
	cm := lockConfigMap("")
	require.NoError(tb, Encode(cm, rec))
	return cm
}

// BenchmarkDecode reads a busy lock's record (contendedRecord), as every
// waiting process does on every change of the lock.
func BenchmarkDecode(b *testing.B) {
	cm := contendedRecord(b)
	b.ReportAllocs()
	b.SetBytes(int64(len(cm.Annotations[RecordAnnotation])))
	for b.Loop() {
		if _, err := Decode(cm); err != nil {
			b.Fatal(err)
		}
	}
}
