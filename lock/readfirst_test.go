package lock

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	k8stesting "k8s.io/client-go/testing"
)

// windowsObject is a freeze-windows ConfigMap of the lock namespace.
func windowsObject(yaml string) *corev1.ConfigMap {
	return &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: record.FreezeWindowsName, Namespace: lockNS},
		Data:       map[string]string{record.FreezeWindowsKey: yaml},
	}
}

// gets returns the names of the objects cs was asked to get, sorted.
func gets(cs interface{ Actions() []k8stesting.Action }) []string {
	var out []string
	for _, a := range cs.Actions() {
		if g, ok := a.(k8stesting.GetAction); ok {
			out = append(out, g.GetName())
		}
	}
	slices.Sort(out)
	return out
}

// TestReadFirstWithWindows: Acquire reads first and loads the freeze
// windows beside its first read takes an existing free lock with one
// update (no create lost to it) and a new one with one create, both after
// reading the lock and the windows; the windows loaded decide.
func TestReadFirstWithWindows(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	always := windowsObject(`windows: [{name: always, schedule: "* * * * *", duration: 1h, reason: maintenance}]`)
	tests := []struct {
		name       string
		objs       []runtime.Object
		noWait     bool
		wantWrites []string
		wantHeld   bool
		wantFrozen bool
	}{
		{name: "existing free lock: one update", objs: []runtime.Object{lockObject(t, freeRecord())}, wantWrites: []string{"update configmaps"}, wantHeld: true},
		{name: "new lock: one create", wantWrites: []string{"create configmaps"}, wantHeld: true},
		{name: "existing free lock, a window of another target: one update", objs: []runtime.Object{lockObject(t, freeRecord()), windowsObject(`windows: [{name: prod, schedule: "* * * * *", duration: 1h, reason: maintenance, targets: [prod]}]`)}, wantWrites: []string{"update configmaps"}, wantHeld: true},
		{name: "in a window: frozen, nothing written", objs: []runtime.Object{lockObject(t, freeRecord()), always}, noWait: true, wantWrites: []string{}, wantFrozen: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, cs := newTestClient(t, now, onlyVerbs(t, "get", "create", "update"), tt.objs...)
			unloaded(c)
			req := request("42")
			req.NoWait = tt.noWait
			h, err := c.Acquire(t.Context(), req)
			got := verbs(cs)
			assert.Equal(t, []string{"get configmaps", "get configmaps"}, got[:min(2, len(got))], "the lock and the windows read first")
			assert.Equal(t, []string{record.FreezeWindowsName, record.Name("staging")}, gets(cs))
			assert.Equal(t, tt.wantWrites, got[2:], "writes")
			require.NotNil(t, c.FreezeWindows(), "the windows are loaded")
			if tt.wantFrozen {
				var held *HeldError
				require.ErrorAs(t, err, &held)
				require.NotNil(t, held.Freeze)
				assert.Equal(t, "always", held.Freeze.By.Branch)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantHeld, h != nil)
		})
	}
}

// TestLoadWindowsOnReadOnce: the windows are read beside the first read of
// a lock only; a broken windows ConfigMap fails that read, naming it, and
// is read again by the next.
func TestLoadWindowsOnReadOnce(t *testing.T) {
	t.Parallel()
	c, cs := newTestClient(t, t0, onlyVerbs(t, "get", "create", "update"), lockObject(t, freeRecord()), windowsObject("windows: [{name: x}]"))
	unloaded(c)
	_, err := c.get(t.Context(), "staging")
	require.Error(t, err)
	assert.Contains(t, err.Error(), record.FreezeWindowsName)
	assert.Contains(t, err.Error(), record.Name("staging"), "and the lock read beside them")
	assert.Nil(t, c.FreezeWindows())

	require.NoError(t, cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("configmaps"), windowsObject("windows: []"), lockNS))
	cs.ClearActions()
	cm, err := c.get(t.Context(), "staging")
	require.NoError(t, err)
	require.NotNil(t, cm)
	assert.Equal(t, []string{record.FreezeWindowsName, record.Name("staging")}, gets(cs))
	assert.NotNil(t, c.FreezeWindows())
	assert.Empty(t, c.FreezeWindows())

	cs.ClearActions()
	_, err = c.get(t.Context(), "staging")
	require.NoError(t, err)
	assert.Equal(t, []string{record.Name("staging")}, gets(cs), "loaded once")
}

// TestListLoadsWindowsOnce: List, like a read of one lock, loads the
// freeze windows beside the list the first time, so a lock in a window is
// shown frozen without the caller loading them; the next List reads the
// locks alone.
func TestListLoadsWindowsOnce(t *testing.T) {
	t.Parallel()
	now := t0.Add(time.Minute)
	always := windowsObject(`windows: [{name: always, schedule: "* * * * *", duration: 1h, reason: maintenance}]`)
	c, cs := newTestClient(t, now, onlyVerbs(t, "get", "list"), lockObject(t, recordOf(held(claim("h", "api", "main", "7"), t0))), always)
	unloaded(c)
	locks, err := c.List(t.Context())
	require.NoError(t, err)
	require.Len(t, locks, 1)
	require.NotNil(t, locks[0].Status.Freeze, "the window freezes the lock")
	assert.Equal(t, "always", locks[0].Status.Freeze.By.Branch)
	assert.Equal(t, []string{record.FreezeWindowsName}, gets(cs), "the windows read beside the list")

	cs.ClearActions()
	_, err = c.List(t.Context())
	require.NoError(t, err)
	assert.Empty(t, gets(cs), "loaded once")
}

// TestInterruptedAfterJoining: a contender queued by its first write whose
// wait ends at once (the caller's context ends as soon as the wait is
// reported) leaves the queue again, and reads nothing in between.
func TestInterruptedAfterJoining(t *testing.T) {
	t.Parallel()
	theirs := held(claim("h", "api", "main", "7"), t0)
	c, cs := newTestClient(t, t0.Add(time.Minute), onlyVerbs(t, "get", "update", "list", "watch"), lockObject(t, recordOf(theirs)))
	casConfigMaps(cs)
	// The fake ignores contexts; a real client's read fails once its
	// context ended.
	c.cms = ctxConfigMaps{kubetest.CoreV1(cs.CoreV1())}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	req := request("42")
	req.Callbacks.OnProgress = func(Progress) { cancel() }
	_, err := c.Acquire(ctx, req)
	require.ErrorIs(t, err, context.Canceled)

	cm, err := cs.CoreV1().ConfigMaps(lockNS).Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
	require.NoError(t, err)
	rec, err := record.Decode(cm)
	require.NoError(t, err)
	assert.Empty(t, rec.Waiters, "the interrupted contender left the queue")
	assert.Equal(t, "api", rec.Holder.Repo)
	var writes []string
	for _, a := range cs.Actions() {
		if a.GetVerb() == "update" {
			writes = append(writes, a.GetVerb())
		}
	}
	assert.Len(t, writes, 2, "joined, then left")
}

// ctxConfigMaps is a ConfigMaps client whose reads fail once their context
// ended, as a real client's do.
type ctxConfigMaps struct{ kube.ConfigMapsGetter }

func (c ctxConfigMaps) ConfigMaps(ns string) kube.ConfigMapInterface {
	return ctxConfigMapReads{c.ConfigMapsGetter.ConfigMaps(ns)}
}

type ctxConfigMapReads struct {
	kube.ConfigMapInterface
}

func (c ctxConfigMapReads) Get(ctx context.Context, name string, o metav1.GetOptions) (*corev1.ConfigMap, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	return c.ConfigMapInterface.Get(ctx, name, o)
}
