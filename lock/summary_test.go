package lock

import (
	"context"
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
				Holder: Claim{Identity: id("web", "41"), User: "alice", Credential: "JTI=7", ClaimID: "a", Since: since, Expires: &exp, Token: "17"},
				Waiters: []Claim{
					{Identity: id("api", "7"), User: "bob", ClaimID: "b", Since: since, Expires: &exp},
					{Identity: id("db", "2"), ClaimID: "c", Since: since, Expires: &exp},
				},
			},
			want: map[string]string{
				SummaryUpdatedAnnotation: "2026-12-06T10:00:00.000000Z", SummaryHolderAnnotation: "acme/web@main#41",
				SummaryHolderUserAnnotation: "alice", SummarySinceAnnotation: "2026-12-06T10:00:00.000000Z",
				SummaryTokenAnnotation: "17", SummaryNextUserAnnotation: "bob", SummaryWaiterUsersAnnotation: "bob",
				SummaryExpiresAnnotation: "2026-12-06T11:00:00.000000Z", SummaryHolderCredentialAnnotation: "JTI=7",
			},
		},
		{
			name: "the holder's applications, one a line; one this lockctl does not read left out",
			rec: Record{
				Target: "staging", Policy: PolicyFIFO, Updated: since,
				Holder: Claim{Identity: id("web", "41"), ClaimID: "a", Since: since, Expires: &exp, Token: "17",
					Apps: []string{"argocd/web", "argocd/team-a/api", "flux/kustomization/apps/web", "flux/ocirepository/apps/web", "flux/helmrelease/apps/api"}},
				Waiters: []Claim{{Identity: id("api", "7"), ClaimID: "b", Since: since, Expires: &exp, Apps: []string{"argocd/api"}}},
			},
			want: map[string]string{
				SummaryUpdatedAnnotation: "2026-12-06T10:00:00.000000Z", SummaryHolderAnnotation: "acme/web@main#41",
				SummarySinceAnnotation: "2026-12-06T10:00:00.000000Z", SummaryTokenAnnotation: "17",
				SummaryExpiresAnnotation:    "2026-12-06T11:00:00.000000Z",
				SummaryHolderAppsAnnotation: "argocd:web\nargocd:team-a_api\nflux-kustomization:apps/web\nflux-helmrelease:apps/api",
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
				SummaryTokenPendingAnnotation: "true", SummaryExpiresAnnotation: "2026-12-06T11:00:00.000000Z",
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
				SummaryFreezeAnnotation:      `frozen until 2026-12-06T11:00:00Z by acme/ops@main#1: "release party"`,
				SummaryFreezeUntilAnnotation: "2026-12-06T11:00:00.000000Z",
			},
		},
		{
			name: "free and frozen by a window",
			rec: Record{
				Target: "staging", Policy: PolicyFIFO, Updated: since,
				Holder: Claim{Identity: Identity{Owner: "lockctl", Repo: "free", Branch: "free", Build: "0"}, ClaimID: "released", Since: since, Expires: &since, Released: true},
				Freeze: &Freeze{Reason: "weekend", By: Identity{Owner: "configmap", Repo: FreezeWindowsName, Branch: "weekends", Build: "0"}, Since: since, Until: exp},
			},
			want: map[string]string{
				SummaryUpdatedAnnotation: "2026-12-06T10:00:00.000000Z", SummaryFrozenAnnotation: "true",
				SummaryFreezeAnnotation:       `frozen until 2026-12-06T11:00:00Z by configmap/lockctl-freeze-windows@weekends#0: "weekend"`,
				SummaryFreezeUntilAnnotation:  "2026-12-06T11:00:00.000000Z",
				SummaryFreezeWindowAnnotation: "weekends",
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

// TestLookupUserOnlyWhenEnforced: a contender asks who it is only on a
// lock marked enforced, records that user with its claim, and the writes
// of the record keep the mark, which Summarize with no mode removes.
func TestLookupUserOnlyWhenEnforced(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)
	c, cs := newTestClient(t, now, nil)
	asked := 0
	req := request("1")
	req.Callbacks.LookupUser = func(context.Context) User { asked++; return User{Name: "alice", Credential: "JTI=1"} }

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
	cm, err := cs.CoreV1().ConfigMaps(lockNS).Get(t.Context(), Name(req.Target), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, "alice", cm.Annotations[SummaryHolderUserAnnotation])
	assert.Equal(t, "JTI=1", cm.Annotations[SummaryHolderCredentialAnnotation])
	assert.NotEmpty(t, cm.Annotations[SummaryExpiresAnnotation], "a hold without a pod lapses")
	assert.Equal(t, "deny", cm.Annotations[EnforcedAnnotation], "the acquisition kept the mark")

	wrote, err = c.Summarize(t.Context(), req.Target, "")
	require.NoError(t, err)
	assert.True(t, wrote)
	cm, err = cs.CoreV1().ConfigMaps(lockNS).Get(t.Context(), Name(req.Target), metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotContains(t, cm.Annotations, EnforcedAnnotation)
	wrote, err = c.Summarize(t.Context(), "never-locked", "")
	require.NoError(t, err)
	assert.False(t, wrote, "unmarking creates no lock")
}
