package lock

import (
	"context"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestParseApp: each form --app takes, its record spelling (String) and
// its summary line (Marks); every other form is refused naming itself and
// the forms that are.
func TestParseApp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in, marks string
		want      App
		wantErr   string
	}{
		{in: "argocd/web", want: App{Kind: AppArgoCD, Name: "web"}, marks: "argocd:web"},
		{in: "argocd/team-a/web", want: App{Kind: AppArgoCD, Namespace: "team-a", Name: "web"}, marks: "argocd:team-a_web"},
		{in: "argocd/web.v2", want: App{Kind: AppArgoCD, Name: "web.v2"}, marks: "argocd:web.v2"},
		{in: "flux/kustomization/apps/web", want: App{Kind: AppFluxKustomization, Namespace: "apps", Name: "web"}, marks: "flux-kustomization:apps/web"},
		{in: "flux/helmrelease/apps/web", want: App{Kind: AppFluxHelmRelease, Namespace: "apps", Name: "web"}, marks: "flux-helmrelease:apps/web"},
		{in: "web", wantErr: `application "web" names no known tool: use argocd/NAME, argocd/NAMESPACE/NAME, flux/kustomization/NAMESPACE/NAME or flux/helmrelease/NAMESPACE/NAME`},
		{in: "", wantErr: `application "" names no known tool`},
		{in: "argocd/", wantErr: `application "argocd/" has an invalid name ""`},
		{in: "argocd/a/b/c", wantErr: `application "argocd/a/b/c" has the wrong number of parts`},
		{in: "argocd/Web", wantErr: `application "argocd/Web" has an invalid name "Web" (a lowercase RFC 1123 subdomain`},
		{in: "argocd/team_a/web", wantErr: `application "argocd/team_a/web" has an invalid namespace "team_a"`},
		{in: "flux/kustomization/web", wantErr: `application "flux/kustomization/web" has the wrong number of parts`},
		{in: "flux/ocirepository/apps/web", wantErr: `application "flux/ocirepository/apps/web" names Flux kind "ocirepository"`},
		{in: "flux/Kustomization/apps/web", wantErr: `names Flux kind "Kustomization"`},
		{in: "flux/helmrelease//web", wantErr: `application "flux/helmrelease//web" has an invalid namespace ""`},
		{in: "flux/helmrelease/apps/" + strings.Repeat("a", 254), wantErr: `has an invalid name`},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			t.Parallel()
			got, err := parseApp(tt.in)
			if tt.wantErr != "" {
				require.Error(t, err, "%q is refused", tt.in)
				assert.Contains(t, err.Error(), tt.wantErr, "%q", tt.in)
				return
			}
			require.NoError(t, err, "%q", tt.in)
			assert.Equal(t, tt.want, got, "%q", tt.in)
			assert.Equal(t, tt.in, got.String(), "%q spelt back", tt.in)
			assert.Equal(t, tt.marks, got.Marks(), "%q in the summary", tt.in)
		})
	}
}

// TestParseApps: repeats are dropped, order kept, more than maxApps
// refused.
func TestParseApps(t *testing.T) {
	t.Parallel()
	got, err := ParseApps([]string{"argocd/b", "argocd/a", "argocd/b"})
	require.NoError(t, err)
	assert.Equal(t, []App{{Kind: AppArgoCD, Name: "b"}, {Kind: AppArgoCD, Name: "a"}}, got)

	many := make([]string, maxApps+1)
	for i := range many {
		many[i] = "argocd/app-" + strings.Repeat("x", i+1)
	}
	_, err = ParseApps(many)
	require.EqualError(t, err, "17 applications named, more than the 16 a hold may name")
	_, err = ParseApps(many[:maxApps])
	require.NoError(t, err)
}

// TestClaimRecordsApps: a contender's applications are stored with its
// claim as it takes the lock, and written in the summary; a re-entry
// names them anew; more than maxApps are refused before anything is
// written.
func TestClaimRecordsApps(t *testing.T) {
	t.Parallel()
	c, cs := newTestClient(t, t0, nil)
	ctx := context.Background()
	read := func() (*Record, map[string]string) {
		t.Helper()
		cm, err := cs.CoreV1().ConfigMaps(lockNS).Get(ctx, Name("staging"), metav1.GetOptions{})
		require.NoError(t, err)
		rec, err := Decode(cm)
		require.NoError(t, err)
		return rec, cm.Annotations
	}
	req := request("1")
	req.Apps = []App{{Kind: AppArgoCD, Name: "web"}, {Kind: AppFluxKustomization, Namespace: "apps", Name: "web"}}
	held, _, err := c.TryAcquire(ctx, req)
	require.NoError(t, err)
	require.NotNil(t, held)
	rec, ann := read()
	assert.Equal(t, []string{"argocd/web", "flux/kustomization/apps/web"}, rec.Holder.Apps)
	assert.Equal(t, "argocd:web\nflux-kustomization:apps/web", ann[SummaryHolderAppsAnnotation])

	req.Apps = nil
	held, _, err = c.TryAcquire(ctx, req)
	require.NoError(t, err)
	require.NotNil(t, held, "re-entered")
	rec, _ = read()
	assert.Equal(t, []string{"argocd/web", "flux/kustomization/apps/web"}, rec.Holder.Apps, "a re-entry naming none keeps them")

	other := request("1")
	other.ClaimID = "a later step"
	other.Apps = []App{{Kind: AppFluxHelmRelease, Namespace: "apps", Name: "web"}}
	held, _, err = c.TryAcquire(ctx, other)
	require.NoError(t, err)
	require.NotNil(t, held, "re-entered by another process of the build")
	rec, ann = read()
	assert.Equal(t, []string{"flux/helmrelease/apps/web"}, rec.Holder.Apps, "a re-entry naming applications names them anew")
	assert.Equal(t, "flux-helmrelease:apps/web", ann[SummaryHolderAppsAnnotation])
	assert.Equal(t, "me", rec.Holder.ClaimID, "the hold is the same")

	before := len(cs.Actions())
	req.Apps = make([]App, maxApps+1)
	_, _, err = c.TryAcquire(ctx, req)
	require.EqualError(t, err, "17 applications named, more than the 16 a hold may name")
	assert.Len(t, cs.Actions(), before, "nothing read or written")
}
