package lock

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
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
	id := func(repo, build string) record.Identity {
		return record.Identity{Owner: "acme", Repo: repo, Branch: "main", Build: build}
	}
	tests := []struct {
		name string
		rec  record.Record
		want map[string]string
	}{
		{
			name: "held, token recorded, two waiters of which one has a user",
			rec: record.Record{
				Target: "staging", Policy: record.PolicyFIFO, Updated: since,
				Holder: record.Claim{Identity: id("web", "41"), User: "alice", Credential: "JTI=7", ClaimID: "a", Since: since, Expires: &exp, Token: "17"},
				Waiters: []record.Claim{
					{Identity: id("api", "7"), User: "bob", ClaimID: "b", Since: since, Expires: &exp},
					{Identity: id("db", "2"), ClaimID: "c", Since: since, Expires: &exp},
				},
			},
			want: map[string]string{
				record.SummaryUpdatedAnnotation: "2026-12-06T10:00:00.000000Z", record.SummaryHolderAnnotation: "acme/web@main#41",
				record.SummaryHolderUserAnnotation: "alice", record.SummarySinceAnnotation: "2026-12-06T10:00:00.000000Z",
				record.SummaryTokenAnnotation: "17", record.SummaryNextUserAnnotation: "bob", record.SummaryWaiterUsersAnnotation: "bob",
				record.SummaryExpiresAnnotation: "2026-12-06T11:00:00.000000Z", record.SummaryHolderCredentialAnnotation: "JTI=7",
			},
		},
		{
			name: "the holder's applications, one a line; one this lockctl does not read left out",
			rec: record.Record{
				Target: "staging", Policy: record.PolicyFIFO, Updated: since,
				Holder: record.Claim{Identity: id("web", "41"), ClaimID: "a", Since: since, Expires: &exp, Token: "17",
					Apps: []string{"argocd/web", "argocd/team-a/api", "flux/kustomization/apps/web", "flux/ocirepository/apps/web", "flux/helmrelease/apps/api"}},
				Waiters: []record.Claim{{Identity: id("api", "7"), ClaimID: "b", Since: since, Expires: &exp, Apps: []string{"argocd/api"}}},
			},
			want: map[string]string{
				record.SummaryUpdatedAnnotation: "2026-12-06T10:00:00.000000Z", record.SummaryHolderAnnotation: "acme/web@main#41",
				record.SummarySinceAnnotation: "2026-12-06T10:00:00.000000Z", record.SummaryTokenAnnotation: "17",
				record.SummaryExpiresAnnotation:    "2026-12-06T11:00:00.000000Z",
				record.SummaryHolderAppsAnnotation: "argocd:web\nargocd:team-a_api\nflux-kustomization:apps/web\nflux-helmrelease:apps/api",
			},
		},
		{
			name: "token pending",
			rec: record.Record{
				Target: "staging", Policy: record.PolicyFIFO, Updated: since,
				Holder: record.Claim{Identity: id("web", "41"), User: "alice", ClaimID: "a", Since: since, Expires: &exp, TokenPending: true},
			},
			want: map[string]string{
				record.SummaryUpdatedAnnotation: "2026-12-06T10:00:00.000000Z", record.SummaryHolderAnnotation: "acme/web@main#41",
				record.SummaryHolderUserAnnotation: "alice", record.SummarySinceAnnotation: "2026-12-06T10:00:00.000000Z",
				record.SummaryTokenPendingAnnotation: "true", record.SummaryExpiresAnnotation: "2026-12-06T11:00:00.000000Z",
			},
		},
		{
			name: "free and frozen",
			rec: record.Record{
				Target: "staging", Policy: record.PolicyFIFO, Updated: since,
				Holder: record.Claim{Identity: record.Identity{Owner: "lockctl", Repo: "free", Branch: "free", Build: "0"}, ClaimID: "released", Since: since, Expires: &since, Released: true},
				Freeze: &record.Freeze{Reason: "release party", By: id("ops", "1"), Since: since, Until: exp},
			},
			want: map[string]string{
				record.SummaryUpdatedAnnotation: "2026-12-06T10:00:00.000000Z", record.SummaryFrozenAnnotation: "true",
				record.SummaryFreezeAnnotation:      `frozen until 2026-12-06T11:00:00Z by acme/ops@main#1: "release party"`,
				record.SummaryFreezeUntilAnnotation: "2026-12-06T11:00:00.000000Z",
			},
		},
		{
			name: "free and frozen by a window",
			rec: record.Record{
				Target: "staging", Policy: record.PolicyFIFO, Updated: since,
				Holder: record.Claim{Identity: record.Identity{Owner: "lockctl", Repo: "free", Branch: "free", Build: "0"}, ClaimID: "released", Since: since, Expires: &since, Released: true},
				Freeze: &record.Freeze{Reason: "weekend", By: record.Identity{Owner: "configmap", Repo: record.FreezeWindowsName, Branch: "weekends", Build: "0"}, Since: since, Until: exp},
			},
			want: map[string]string{
				record.SummaryUpdatedAnnotation: "2026-12-06T10:00:00.000000Z", record.SummaryFrozenAnnotation: "true",
				record.SummaryFreezeAnnotation:       `frozen until 2026-12-06T11:00:00Z by configmap/lockctl-freeze-windows@weekends#0: "weekend"`,
				record.SummaryFreezeUntilAnnotation:  "2026-12-06T11:00:00.000000Z",
				record.SummaryFreezeWindowAnnotation: "weekends",
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cm := lockConfigMap("")
			cm.Annotations[record.SummaryTokenAnnotation] = "stale"
			require.NoError(t, record.Encode(cm, &tt.rec))
			got := map[string]string{}
			for k, v := range cm.Annotations {
				if strings.HasPrefix(k, record.SummaryPrefix) {
					got[k] = v
				}
			}
			assert.Equal(t, tt.want, got)
			assert.Contains(t, cm.Annotations[record.RecordAnnotation], `"updated":"`+got[record.SummaryUpdatedAnnotation]+`"`, "the summary's updated is found in the record")
		})
	}
}

// TestLookupUserOnlyWhenEnforced: a contender asks who it is only on a
// lock marked enforced, records that user with its claim, and the writes
// of the record keep the mark, which Summarize with no mode removes.
func TestLookupUserOnlyWhenEnforced(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c, cs := newTestClient(t, now, nil)
	asked := 0
	req := request("1")
	req.Callbacks.LookupUser = func(context.Context) record.User { asked++; return record.User{Name: "alice", Credential: "JTI=1"} }

	held, _, err := c.TryAcquire(t.Context(), req)
	require.NoError(t, err)
	require.NotNil(t, held)
	assert.Zero(t, asked, "a lock that is not enforced is taken without asking")
	_, err = c.ReleaseHeld(t.Context(), held, ReleaseOptions{})
	require.NoError(t, err)

	wrote, err := c.Summarize(t.Context(), req.Target, "deny")
	require.NoError(t, err)
	assert.True(t, wrote)
	req.Build = "2"
	held, _, err = c.TryAcquire(t.Context(), req)
	require.NoError(t, err)
	require.NotNil(t, held)
	assert.Equal(t, 1, asked)
	cm, err := cs.CoreV1().ConfigMaps(lockNS).Get(t.Context(), record.Name(req.Target), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "alice", cm.Annotations[record.SummaryHolderUserAnnotation])
	assert.Equal(t, "JTI=1", cm.Annotations[record.SummaryHolderCredentialAnnotation])
	assert.NotEmpty(t, cm.Annotations[record.SummaryExpiresAnnotation], "a hold without a pod lapses")
	assert.Equal(t, "deny", cm.Annotations[record.EnforcedAnnotation], "the acquisition kept the mark")

	wrote, err = c.Summarize(t.Context(), req.Target, "")
	require.NoError(t, err)
	assert.True(t, wrote)
	cm, err = cs.CoreV1().ConfigMaps(lockNS).Get(t.Context(), record.Name(req.Target), metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, cm.Annotations, record.EnforcedAnnotation)
	wrote, err = c.Summarize(t.Context(), "never-locked", "")
	require.NoError(t, err)
	assert.False(t, wrote, "unmarking creates no lock")
}
