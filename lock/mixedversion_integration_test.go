package lock_test

import (
	"encoding/json"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
)

// newerWriter plays a lockctl of a newer minor record version: it rewrites
// the record with fields today's lockctl does not know (a top-level
// "notes", a holder's "note"), with a compare-and-swap on resourceVersion
// as every writer must.
func newerWriter(t *testing.T, c kubernetes.Interface, ns, target string) {
	t.Helper()
	cms := c.CoreV1().ConfigMaps(ns)
	cm, err := cms.Get(t.Context(), lock.Name(target), metav1.GetOptions{})
	require.NoError(t, err, "newer writer reads the lock")
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(cm.Annotations[lock.RecordAnnotation]), &rec))
	rec["version"] = "1.9"
	rec["notes"] = []any{map[string]any{"owner": "acme", "build": "0", "released": "2026-12-03T09:59:00.000000Z"}}
	holder, ok := rec["holder"].(map[string]any)
	require.True(t, ok, "record has a holder: %v", rec)
	holder["note"] = "written by a newer lockctl"
	raw, err := json.Marshal(rec)
	require.NoError(t, err)
	cm.Annotations[lock.RecordAnnotation] = string(raw)
	_, err = cms.Update(t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(t, err, "newer writer's compare-and-swap")
}

// recordOf reads the lock's record as plain JSON.
func recordOf(t *testing.T, c kubernetes.Interface, ns, target string) map[string]any {
	t.Helper()
	cm, err := c.CoreV1().ConfigMaps(ns).Get(t.Context(), lock.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	var rec map[string]any
	require.NoError(t, json.Unmarshal([]byte(cm.Annotations[lock.RecordAnnotation]), &rec))
	return rec
}

// TestIntegrationMixedVersionsShareALock: a writer of a newer minor record
// version adds fields, and today's lockctl keeps working with the lock
// through a queue and a hand-over, keeping those fields and the version.
func TestIntegrationMixedVersionsShareALock(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := newClient(t, env.Kube, ns)

	mustAcquire(t, l, lock.Request{Target: "staging", Identity: clitest.Identity("web", 1)})
	newerWriter(t, env.Client, ns, "staging")

	st, err := l.Get(t.Context(), "staging")
	require.NoError(t, err, "today's lockctl reads the newer record")
	assert.Equal(t, "acme/web@main#1", st.Status.Holder.Identity.String())

	done, queued := acquireAsync(t.Context(), l, lock.Request{Target: "staging", Identity: clitest.Identity("api", 2)})
	p := awaitQueued(t, queued, "api#2")
	assert.Equal(t, 1, p.Position, "queued behind the holder")
	rec := recordOf(t, env.Client, ns, "staging")
	assert.Equal(t, "1.9", rec["version"], "joining the queue keeps the newer version")
	assert.Contains(t, rec, "notes", "joining the queue keeps the newer top-level field")
	assert.Equal(t, "written by a newer lockctl", rec["holder"].(map[string]any)["note"], "and the holder's field")

	_, err = l.Release(t.Context(), "staging", clitest.Identity("web", 1), lock.ReleaseOptions{})
	require.NoError(t, err, "today's holder releases the newer record")
	r := await(t, done, "api#2")
	require.NoError(t, r.err, "the waiter takes the lock handed over")

	rec = recordOf(t, env.Client, ns, "staging")
	assert.Equal(t, "1.9", rec["version"], "the hand-over keeps the newer version")
	assert.Contains(t, rec, "notes", "the hand-over keeps the newer top-level field")
	holder := rec["holder"].(map[string]any)
	assert.Equal(t, "api", holder["repo"], "the new holder")
	assert.NotContains(t, holder, "note", "the old holder's fields leave with it")

	// The newer writer touches it again; today's holder still releases it.
	newerWriter(t, env.Client, ns, "staging")
	res, err := l.Release(t.Context(), "staging", clitest.Identity("api", 2), lock.ReleaseOptions{})
	require.NoError(t, err)
	require.NotNil(t, res.Previous, "released by its holder")
}
