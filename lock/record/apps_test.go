package record

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
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
			assert.Equal(t, tt.marks, got.marks(), "%q in the summary", tt.in)
		})
	}
}
