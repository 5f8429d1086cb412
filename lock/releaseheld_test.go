package lock

import (
	"context"
	"errors"
	"slices"
	"strconv"
	"testing"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// casConfigMaps makes the fake API server keep resourceVersions of
// ConfigMaps as the real one does: every create and update gives a new one,
// and an update of a version that is not the latest is a conflict.
func casConfigMaps(cs *fake.Clientset) {
	rv := 100
	cs.PrependReactor("create", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		cm := a.(k8stesting.CreateAction).GetObject().(*corev1.ConfigMap)
		rv++
		cm.ResourceVersion, cm.UID = strconv.Itoa(rv), "uid-1"
		return false, nil, nil
	})
	cs.PrependReactor("update", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
		cm := a.(k8stesting.UpdateAction).GetObject().(*corev1.ConfigMap)
		cur, err := cs.Tracker().Get(a.GetResource(), cm.Namespace, cm.Name)
		if err != nil {
			return true, nil, err
		}
		if cur.(*corev1.ConfigMap).ResourceVersion != cm.ResourceVersion {
			return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, cm.Name, errors.New("the object has been modified"))
		}
		rv++
		cm.ResourceVersion = strconv.Itoa(rv)
		return false, nil, nil
	})
}

// TestReleaseHeld: a hold is released with one write on the version of the
// lock it last wrote when nothing changed since; when the lock changed (a
// waiter joined), that write is a conflict and the lock is read and decided
// on again, so the waiter gets it.
func TestReleaseHeld(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		joins      bool // a waiter joins the queue after the acquire
		wantCalls  []string
		wantHanded bool
	}{
		{name: "unchanged: one update, no read", wantCalls: []string{"update configmaps"}},
		{name: "a waiter joined: the stale write conflicts, the newest version is read and handed over", joins: true,
			wantCalls: []string{"update configmaps", "get configmaps", "update configmaps"}, wantHanded: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c, cs := newTestClient(t, t0, casConfigMaps)
			h, err := c.Acquire(t.Context(), request("42"))
			require.NoError(t, err)
			if tt.joins {
				w := request("43")
				w.Identity.Repo, w.ClaimID = "api", "w"
				_, p, err := c.TryAcquire(t.Context(), w)
				require.NoError(t, err)
				require.NotNil(t, p, "the other contender waits")
			}
			cs.ClearActions()
			rel, err := c.ReleaseHeld(t.Context(), h, ReleaseOptions{})
			require.NoError(t, err)
			assert.Equal(t, tt.wantCalls, verbs(cs))
			require.NotNil(t, rel.Previous)
			assert.Equal(t, h.Holder.Identity, rel.Previous.Identity)
			cm, err := cs.CoreV1().ConfigMaps(lockNS).Get(t.Context(), record.Name("staging"), metav1.GetOptions{})
			require.NoError(t, err)
			rec, err := record.Decode(cm)
			require.NoError(t, err)
			if tt.wantHanded {
				require.NotNil(t, rel.HandedTo)
				assert.Equal(t, "w", rec.Holder.ClaimID, "the waiter holds the lock")
				return
			}
			assert.Nil(t, rel.HandedTo)
			assert.True(t, rec.IsFree(), "the lock is free")
		})
	}
}

// TestReleaseHeldNotMine: a hold whose lock was taken by someone else since
// is not released on the version it remembers: the lock is read, and the
// caller is told it is not the holder.
func TestReleaseHeldNotMine(t *testing.T) {
	t.Parallel()
	c, cs := newTestClient(t, t0, casConfigMaps)
	h, err := c.Acquire(t.Context(), request("42"))
	require.NoError(t, err)
	// The lock is broken and taken by another build.
	other := record.Identity{Owner: "acme", Repo: "api", Branch: "main", Build: "7"}
	_, err = c.Release(t.Context(), "staging", other, ReleaseOptions{Force: true, By: "admin"})
	require.NoError(t, err)
	o := request("7")
	o.Identity, o.ClaimID = other, "other"
	_, err = c.Acquire(t.Context(), o)
	require.NoError(t, err)

	cs.ClearActions()
	_, err = c.ReleaseHeld(t.Context(), h, ReleaseOptions{})
	var notHolder *NotHolderError
	require.ErrorAs(t, err, &notHolder)
	assert.Equal(t, []string{"update configmaps", "get configmaps"}, verbs(cs), "the remembered version conflicts; the fresh read decides")
}

// gatedEvents is an EventRecorder whose Acquired Events wait for gate.
type gatedEvents struct {
	eventLog
	gate chan struct{}
}

func (g *gatedEvents) Event(ctx context.Context, cm *corev1.ConfigMap, warning bool, action, reason, note string) {
	if reason == reasonAcquired {
		<-g.gate
	}
	g.eventLog.Event(ctx, cm, warning, action, reason, note)
}

// TestEventsInBackground: Acquire returns before the Event of the
// acquisition is written; ReleaseHeld writes the release without waiting
// for it, but records the release's Event and returns only once it is, so
// the lock's Events keep their order and are written before the caller
// exits.
func TestEventsInBackground(t *testing.T) {
	t.Parallel()
	c, cs := newTestClient(t, t0, casConfigMaps)
	rec := &gatedEvents{gate: make(chan struct{})}
	c.events = rec
	h, err := c.Acquire(t.Context(), request("42"))
	require.NoError(t, err, "acquired while its Event waits")

	released := make(chan error, 1)
	go func() {
		_, err := c.ReleaseHeld(t.Context(), h, ReleaseOptions{})
		released <- err
	}()
	require.Eventually(t, func() bool { return slices.Contains(verbs(cs), "update configmaps") }, 10*time.Second, time.Millisecond,
		"the release is written while the Event of the acquisition waits")
	select {
	case err := <-released:
		t.Fatalf("ReleaseHeld returned (%v) before the Event of the acquisition was written", err)
	case <-time.After(50 * time.Millisecond):
	}
	rec.mu.Lock()
	assert.Empty(t, rec.events, "no Event of the release before the acquisition's")
	rec.mu.Unlock()
	close(rec.gate)
	require.NoError(t, <-released)
	rec.mu.Lock()
	defer rec.mu.Unlock()
	require.Len(t, rec.events, 2)
	assert.Contains(t, rec.events[0], "Acquired")
	assert.Contains(t, rec.events[1], "Released")
}
