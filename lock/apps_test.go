package lock

import (
	"context"
	"strings"
	"testing"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestParseApps: repeats are dropped, order kept, more than maxApps
// refused.
func TestParseApps(t *testing.T) {
	t.Parallel()
	got, err := record.ParseApps([]string{"argocd/b", "argocd/a", "argocd/b"})
	require.NoError(t, err)
	assert.Equal(t, []record.App{{Kind: record.AppArgoCD, Name: "b"}, {Kind: record.AppArgoCD, Name: "a"}}, got)

	many := make([]string, record.MaxApps+1)
	for i := range many {
		many[i] = "argocd/app-" + strings.Repeat("x", i+1)
	}
	_, err = record.ParseApps(many)
	require.EqualError(t, err, "17 applications named, more than the 16 a hold may name")
	_, err = record.ParseApps(many[:record.MaxApps])
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
	read := func() (*record.Record, map[string]string) {
		t.Helper()
		cm, err := cs.CoreV1().ConfigMaps(lockNS).Get(ctx, record.Name("staging"), metav1.GetOptions{})
		require.NoError(t, err)
		rec, err := record.Decode(cm)
		require.NoError(t, err)
		return rec, cm.Annotations
	}
	req := request("1")
	req.Apps = []record.App{{Kind: record.AppArgoCD, Name: "web"}, {Kind: record.AppFluxKustomization, Namespace: "apps", Name: "web"}}
	held, _, err := c.TryAcquire(ctx, req)
	require.NoError(t, err)
	require.NotNil(t, held)
	rec, ann := read()
	assert.Equal(t, []string{"argocd/web", "flux/kustomization/apps/web"}, rec.Holder.Apps)
	assert.Equal(t, "argocd:web\nflux-kustomization:apps/web", ann[record.SummaryHolderAppsAnnotation])

	req.Apps = nil
	held, _, err = c.TryAcquire(ctx, req)
	require.NoError(t, err)
	require.NotNil(t, held, "re-entered")
	rec, _ = read()
	assert.Equal(t, []string{"argocd/web", "flux/kustomization/apps/web"}, rec.Holder.Apps, "a re-entry naming none keeps them")

	other := request("1")
	other.ClaimID = "a later step"
	other.Apps = []record.App{{Kind: record.AppFluxHelmRelease, Namespace: "apps", Name: "web"}}
	held, _, err = c.TryAcquire(ctx, other)
	require.NoError(t, err)
	require.NotNil(t, held, "re-entered by another process of the build")
	rec, ann = read()
	assert.Equal(t, []string{"flux/helmrelease/apps/web"}, rec.Holder.Apps, "a re-entry naming applications names them anew")
	assert.Equal(t, "flux-helmrelease:apps/web", ann[record.SummaryHolderAppsAnnotation])
	assert.Equal(t, "me", rec.Holder.ClaimID, "the hold is the same")

	before := len(cs.Actions())
	req.Apps = make([]record.App, record.MaxApps+1)
	_, _, err = c.TryAcquire(ctx, req)
	require.EqualError(t, err, "17 applications named, more than the 16 a hold may name")
	assert.Len(t, cs.Actions(), before, "nothing read or written")
}
