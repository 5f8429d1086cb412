package lock

import (
	"slices"
	"testing"
	"time"

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
		ObjectMeta: metav1.ObjectMeta{Name: FreezeWindowsName, Namespace: lockNS},
		Data:       map[string]string{FreezeWindowsKey: yaml},
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

// TestReadFirstWithWindows: a client that reads first and loads the freeze
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
			c.ReadFirst, c.LoadWindowsOnRead = true, true
			req := request("42")
			req.NoWait = tt.noWait
			h, err := c.Acquire(t.Context(), req)
			got := verbs(cs)
			assert.Equal(t, []string{"get configmaps", "get configmaps"}, got[:min(2, len(got))], "the lock and the windows read first")
			assert.Equal(t, []string{FreezeWindowsName, Name("staging")}, gets(cs))
			assert.Equal(t, tt.wantWrites, got[2:], "writes")
			require.NotNil(t, c.FreezeWindows, "the windows are loaded")
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
	c.LoadWindowsOnRead = true
	_, err := c.get(t.Context(), "staging")
	require.Error(t, err)
	assert.Contains(t, err.Error(), FreezeWindowsName)
	assert.Nil(t, c.FreezeWindows)

	require.NoError(t, cs.Tracker().Update(corev1.SchemeGroupVersion.WithResource("configmaps"), windowsObject("windows: []"), lockNS))
	cs.ClearActions()
	cm, err := c.get(t.Context(), "staging")
	require.NoError(t, err)
	require.NotNil(t, cm)
	assert.Equal(t, []string{FreezeWindowsName, Name("staging")}, gets(cs))
	assert.NotNil(t, c.FreezeWindows)
	assert.Empty(t, c.FreezeWindows)

	cs.ClearActions()
	_, err = c.get(t.Context(), "staging")
	require.NoError(t, err)
	assert.Equal(t, []string{Name("staging")}, gets(cs), "loaded once")
}
