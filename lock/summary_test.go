package lock

import (
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestEncodeWritesSummary: every encode of the record writes its summary
// beside it, replacing the last one as a whole, and the summary's updated
// is spelt as in the record, which is how the policy ties the two.
func TestEncodeWritesSummary(t *testing.T) {
	t.Parallel()
	since := metav1.NewMicroTime(time.Date(2026, 12, 6, 10, 0, 0, 0, time.UTC))
	exp := metav1.NewMicroTime(since.Add(time.Hour))
	id := func(repo, build string) Identity {
		return Identity{Owner: "acme", Repo: repo, Branch: "main", Build: build}
	}
	tests := []struct {
		name string
		rec  Record
		want map[string]string
	}{
		{
			name: "held, token recorded, two waiters of which one has a user",
			rec: Record{
				Target: "staging", Policy: PolicyFIFO, Updated: since,
				Holder: Claim{Identity: id("web", "41"), User: "alice", ClaimID: "a", Since: since, Expires: &exp, Token: "17"},
				Waiters: []Claim{
					{Identity: id("api", "7"), User: "bob", ClaimID: "b", Since: since, Expires: &exp},
					{Identity: id("db", "2"), ClaimID: "c", Since: since, Expires: &exp},
				},
			},
			want: map[string]string{
				SummaryUpdatedAnnotation: "2026-12-06T10:00:00.000000Z", SummaryHolderAnnotation: "acme/web@main#41",
				SummaryHolderUserAnnotation: "alice", SummarySinceAnnotation: "2026-12-06T10:00:00.000000Z",
				SummaryTokenAnnotation: "17", SummaryNextUserAnnotation: "bob", SummaryWaiterUsersAnnotation: "bob",
			},
		},
		{
			name: "token pending",
			rec: Record{
				Target: "staging", Policy: PolicyFIFO, Updated: since,
				Holder: Claim{Identity: id("web", "41"), User: "alice", ClaimID: "a", Since: since, Expires: &exp, TokenPending: true},
			},
			want: map[string]string{
				SummaryUpdatedAnnotation: "2026-12-06T10:00:00.000000Z", SummaryHolderAnnotation: "acme/web@main#41",
				SummaryHolderUserAnnotation: "alice", SummarySinceAnnotation: "2026-12-06T10:00:00.000000Z",
				SummaryTokenPendingAnnotation: "true",
			},
		},
		{
			name: "free and frozen",
			rec: Record{
				Target: "staging", Policy: PolicyFIFO, Updated: since,
				Holder: Claim{Identity: Identity{Owner: "lockctl", Repo: "free", Branch: "free", Build: "0"}, ClaimID: "released", Since: since, Expires: &since, Released: true},
				Freeze: &Freeze{Reason: "release party", By: id("ops", "1"), Since: since, Until: exp},
			},
			want: map[string]string{
				SummaryUpdatedAnnotation: "2026-12-06T10:00:00.000000Z", SummaryFrozenAnnotation: "true",
				SummaryFreezeAnnotation: `frozen until 2026-12-06T11:00:00Z by acme/ops@main#1: "release party"`,
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cm := lockConfigMap("")
			cm.Annotations[SummaryTokenAnnotation] = "stale"
			require.NoError(t, encode(cm, &tt.rec))
			got := map[string]string{}
			for k, v := range cm.Annotations {
				if strings.HasPrefix(k, SummaryPrefix) {
					got[k] = v
				}
			}
			assert.Equal(t, tt.want, got)
			assert.Contains(t, cm.Annotations[RecordAnnotation], `"updated":"`+got[SummaryUpdatedAnnotation]+`"`, "the summary's updated is found in the record")
		})
	}
}
