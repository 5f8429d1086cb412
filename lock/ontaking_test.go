package lock

import (
	"context"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
)

// TestOnTaking: Request.Callbacks.OnTaking is called before the write that takes a
// free lock, after the read that found it free, and never for a contender
// that only joins the queue.
func TestOnTaking(t *testing.T) {
	t.Parallel()
	t.Run("no lock: after the read, before the create", func(t *testing.T) {
		t.Parallel()
		c, _ := newTestClient(t, t0, nil)
		called := 0
		req := request("42")
		req.Callbacks.OnTaking = func() { called++ }
		_, err := c.Acquire(t.Context(), req)
		require.NoError(t, err)
		assert.Equal(t, 1, called)
	})
	t.Run("free lock kept for its history: after the read, before the taking write", func(t *testing.T) {
		t.Parallel()
		var calls []string
		free := recordOf(held(claim("h", "api", "main", "7"), t0))
		free.Free(free.Updated)
		c, _ := newTestClient(t, t0, func(cs *fake.Clientset) {
			cs.PrependReactor("*", "configmaps", func(a k8stesting.Action) (bool, runtime.Object, error) {
				calls = append(calls, a.GetVerb())
				return false, nil, nil
			})
		}, lockObject(t, free))
		req := request("42")
		req.Callbacks.OnTaking = func() { calls = append(calls, "OnTaking") }
		_, err := c.Acquire(t.Context(), req)
		require.NoError(t, err)
		assert.Equal(t, []string{"get", "OnTaking", "update"}, calls, "the read, then the taking write")
	})
	t.Run("held lock: not called while queued", func(t *testing.T) {
		t.Parallel()
		c, _ := newTestClient(t, t0, nil, lockObject(t, recordOf(held(claim("h", "api", "main", "7"), t0))))
		ctx, cancel := context.WithCancel(t.Context())
		defer cancel()
		called := 0
		req := request("42")
		req.Callbacks.OnTaking = func() { called++ }
		req.Callbacks.OnProgress = func(Progress) { cancel() }
		_, err := c.Acquire(ctx, req)
		assert.ErrorIs(t, err, context.Canceled)
		assert.Zero(t, called, "a waiter takes nothing")
	})
}
