package deploytools

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// TestTrack: each object is marked as Argo CD marks it with each tracking
// method, and one without a namespace lands in the destination's.
func TestTrack(t *testing.T) {
	t.Parallel()
	manifests := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: app\n---\n" +
		"apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\n  namespace: other\n  labels: {tier: front}\n"
	tests := []struct {
		tracking              ArgoCDTracking
		wantIDs, wantInstance []string
	}{
		{tracking: "", wantIDs: []string{"web:/ConfigMap:shop/app", "web:apps/Deployment:other/web"}, wantInstance: []string{"", ""}},
		{tracking: TrackLabel, wantIDs: []string{"", ""}, wantInstance: []string{"web", "web"}},
		{tracking: TrackAnnotationAndLabel, wantIDs: []string{"web:/ConfigMap:shop/app", "web:apps/Deployment:other/web"}, wantInstance: []string{"web", "web"}},
	}
	for _, tt := range tests {
		t.Run(string(tt.tracking), func(t *testing.T) {
			t.Parallel()
			out, err := Track(manifests, "web", "shop", tt.tracking)
			require.NoError(t, err)
			lines := strings.Split(strings.TrimSpace(out), "\n")
			require.Len(t, lines, 2)
			for i, line := range lines {
				var obj struct {
					Metadata struct {
						Namespace   string
						Labels      map[string]string
						Annotations map[string]string
					}
				}
				require.NoError(t, json.Unmarshal([]byte(line), &obj))
				assert.Equal(t, tt.wantIDs[i], obj.Metadata.Annotations[ArgoCDTrackingAnnotation], "object %d", i)
				assert.Equal(t, tt.wantInstance[i], obj.Metadata.Labels[ArgoCDInstanceLabel], "object %d", i)
			}
			assert.Contains(t, lines[0], `"namespace":"shop"`, "the destination namespace")
			assert.Contains(t, lines[1], `"tier":"front"`, "labels kept")
		})
	}
}

// TestKubeconfigAs: every user of the copy impersonates the user and
// groups given, with its credentials kept; the original is untouched.
func TestKubeconfigAs(t *testing.T) {
	t.Parallel()
	orig := clientcmdapi.NewConfig()
	orig.AuthInfos["admin"] = &clientcmdapi.AuthInfo{Token: "secret"}
	orig.Clusters["c"] = &clientcmdapi.Cluster{Server: "https://127.0.0.1:6443"}
	orig.Contexts["c"] = &clientcmdapi.Context{Cluster: "c", AuthInfo: "admin"}
	orig.CurrentContext = "c"
	path := filepath.Join(t.TempDir(), "kubeconfig")
	require.NoError(t, clientcmd.WriteToFile(*orig, path))
	before, err := os.ReadFile(path)
	require.NoError(t, err)

	as := KubeconfigAs(t, path, FluxKustomizeController, "g1")
	got, err := clientcmd.LoadFromFile(as)
	require.NoError(t, err)
	assert.Equal(t, FluxKustomizeController, got.AuthInfos["admin"].Impersonate)
	assert.Equal(t, []string{"g1"}, got.AuthInfos["admin"].ImpersonateGroups)
	assert.Equal(t, "secret", got.AuthInfos["admin"].Token)
	raw, err := os.ReadFile(as)
	require.NoError(t, err)
	assert.Contains(t, string(raw), "as: "+FluxKustomizeController, "users[].user.as")
	after, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, before, after, "the original is left as it was")
}

// TestPending: only pending-* revisions are pending.
func TestPending(t *testing.T) {
	t.Parallel()
	revs := []Revision{{Revision: 1, Status: "superseded"}, {Revision: 2, Status: "failed"}, {Revision: 3, Status: "pending-upgrade"}, {Revision: 4, Status: "deployed"}}
	assert.Equal(t, []string{"superseded", "failed", "pending-upgrade", "deployed"}, Statuses(revs))
	assert.Equal(t, []Revision{{Revision: 3, Status: "pending-upgrade"}}, Pending(revs))
}
