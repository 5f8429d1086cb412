package lock_test

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/lock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/lock/record"
)

var freezer = record.Identity{Owner: "alice@laptop", Repo: "ops", Branch: "main", Build: "1"}

// TestIntegrationFreeze: a freeze keeps the holder, makes a newcomer wait
// (and time out showing the freeze) even after the holder releases, lets an
// emergency --ignore-freeze through (recorded), and once lifted hands the
// lock to the first waiter.
func TestIntegrationFreeze(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	l := newClient(t, env.Kube, ns)
	holder := lock.Request{Target: "prod", Identity: clitest.Identity("web", 1)}
	mustAcquire(t, l, holder)

	f, err := l.Freeze(t.Context(), record.FreezeRequest{Target: "prod", By: freezer, Reason: "release party", Until: time.Now().Add(time.Hour)})
	require.NoError(t, err)
	require.NotNil(t, f.Status.Freeze)
	assert.Equal(t, "web", f.Status.Holder.Repo, "the holder is not interrupted")
	assert.Equal(t, "2", recordVersionMajor(t, env, ns, "prod"), "a frozen record is major version 2")

	// A newcomer times out, naming the freeze.
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	_, err = l.Acquire(ctx, lock.Request{Target: "prod", Identity: clitest.Identity("api", 1)})
	cancel()
	var timeout *lock.TimeoutError
	require.ErrorAs(t, err, &timeout)
	require.NotNil(t, timeout.Freeze, "the timeout names the freeze")
	assert.Equal(t, "release party", timeout.Freeze.Reason)

	// The holder releases: the lock stays frozen, nobody takes it.
	waiter, queued := acquireAsync(t.Context(), l, lock.Request{Target: "prod", Identity: clitest.Identity("api", 2)})
	p := awaitQueued(t, queued, "waiter")
	require.NotNil(t, p.Freeze, "the waiting display has the freeze")
	_, err = l.Release(t.Context(), "prod", holder.Identity, lock.ReleaseOptions{})
	require.NoError(t, err)
	got, err := l.Get(t.Context(), "prod")
	require.NoError(t, err)
	require.NotNil(t, got, "a frozen lock stays when released")
	assert.Nil(t, got.Status.Holder, "nobody holds it")
	require.NotNil(t, got.Status.Freeze)

	// An emergency takes it, recorded; the waiter still waits.
	h := mustAcquire(t, l, lock.Request{Target: "prod", Identity: clitest.Identity("hotfix", 9), IgnoreFreeze: true})
	require.NotNil(t, h.IgnoredFreeze, "the holder knows it ignored a freeze")
	got, err = l.Get(t.Context(), "prod")
	require.NoError(t, err)
	require.Len(t, got.Status.Freeze.Overrides, 1)
	assert.Equal(t, "hotfix", got.Status.Freeze.Overrides[0].Repo, "who ignored the freeze is recorded")
	_, err = l.Release(t.Context(), "prod", clitest.Identity("hotfix", 9), lock.ReleaseOptions{})
	require.NoError(t, err)

	// Unfreeze: the waiter gets it, and the record is version 1 again.
	res, err := l.Unfreeze(t.Context(), "prod")
	require.NoError(t, err)
	require.NotNil(t, res.Previous)
	r := await(t, waiter, "waiter after unfreeze")
	require.NoError(t, r.err)
	assert.Equal(t, "1", recordVersionMajor(t, env, ns, "prod"), "thawed, the record is major version 1 again")
	_, err = l.Release(t.Context(), "prod", clitest.Identity("api", 2), lock.ReleaseOptions{})
	require.NoError(t, err)

	res, err = l.Unfreeze(t.Context(), "prod")
	require.NoError(t, err, "unfreezing what is not frozen succeeds")
	assert.Nil(t, res.Previous)
}

// TestIntegrationFreezeEndsByItself: a waiter on a frozen free lock takes
// it when the freeze ends, without anyone lifting it.
func TestIntegrationFreezeEndsByItself(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	l := newClient(t, env.Kube, env.Namespace(t))
	_, err := l.Freeze(t.Context(), record.FreezeRequest{Target: "qa", By: freezer, Reason: "short", Until: time.Now().Add(3 * time.Second)})
	require.NoError(t, err)
	h := mustAcquire(t, l, lock.Request{Target: "qa", Identity: clitest.Identity("web", 1)})
	assert.Greater(t, h.Waited, time.Duration(0), "waited for the freeze to end")
	got, err := l.Get(t.Context(), "qa")
	require.NoError(t, err)
	assert.Nil(t, got.Status.Freeze, "the ended freeze is gone from the record")
}

func recordVersionMajor(t *testing.T, env *testenv.Env, ns, target string) string {
	t.Helper()
	cm, err := env.Client.CoreV1().ConfigMaps(ns).Get(t.Context(), record.Name(target), metav1.GetOptions{})
	require.NoError(t, err)
	var doc struct {
		Version string `json:"version"`
	}
	require.NoError(t, json.Unmarshal([]byte(cm.Annotations[record.RecordAnnotation]), &doc))
	major, _, _ := strings.Cut(doc.Version, ".")
	return major
}

// TestIntegrationFreezeWindow: a window from the lock namespace's
// ConfigMap freezes a lock nobody has taken yet; the waiter times out
// naming it, the record is written frozen (major 2), unfreeze cannot lift
// it, other targets are not in it; once the window is removed from the
// configuration, its freeze goes and the lock is taken.
func TestIntegrationFreezeWindow(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	cms := env.Client.CoreV1().ConfigMaps(ns)
	_, err := cms.Create(t.Context(), &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: record.FreezeWindowsName},
		Data: map[string]string{record.FreezeWindowsKey: `
windows:
- name: always
  schedule: "* * * * *"
  duration: 1h
  reason: maintenance
  targets: [prod]
`},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	l := newClient(t, env.Kube, ns)
	require.NoError(t, l.LoadFreezeWindows(t.Context()))

	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Second)
	_, err = l.Acquire(ctx, lock.Request{Target: "prod", Identity: clitest.Identity("web", 1)})
	cancel()
	var timeout *lock.TimeoutError
	require.ErrorAs(t, err, &timeout)
	require.NotNil(t, timeout.Freeze, "the timeout names the window")
	assert.Equal(t, "always", timeout.Freeze.By.Branch)
	assert.Equal(t, "2", recordVersionMajor(t, env, ns, "prod"), "the window's freeze is written: older lockctl refuse the lock")

	_, err = l.Unfreeze(t.Context(), "prod")
	var window *record.WindowError
	require.ErrorAs(t, err, &window, "unfreeze cannot lift a window")

	mustAcquire(t, l, lock.Request{Target: "qa", Identity: clitest.Identity("web", 1)})

	require.NoError(t, cms.Delete(t.Context(), record.FreezeWindowsName, metav1.DeleteOptions{}))
	l2 := newClient(t, env.Kube, ns)
	require.NoError(t, l2.LoadFreezeWindows(t.Context()))
	h := mustAcquire(t, l2, lock.Request{Target: "prod", Identity: clitest.Identity("web", 2)})
	assert.Nil(t, h.IgnoredFreeze)
	assert.Equal(t, "1", recordVersionMajor(t, env, ns, "prod"), "the window's freeze is gone with the window")
}
