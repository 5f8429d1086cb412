package cli

import (
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/lockctl/lockctl/events"
	"github.com/lockctl/lockctl/internal/base/kubeclient"
	"github.com/lockctl/lockctl/internal/base/metrics"
)

// TestLoopEventRecorder: the reconcile loop's Events go through the
// factory's separate events client when there is one, else through the
// fallback, filtered as --job-events says and counted in the registry.
func TestLoopEventRecorder(t *testing.T) {
	t.Parallel()
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "lockctl-job-x", Namespace: "ci"}}
	t.Run("separate client", func(t *testing.T) {
		t.Parallel()
		tf := newTestFactory(t)
		separate, fallback := fake.NewClientset(), fake.NewClientset()
		tf.f.EventsClientset = func() (kubeclient.Interface, error) { return separate, nil }
		rec, err := tf.f.LoopEventRecorder(fallback, events.JobEventsWarnings, metrics.NewRegistry())
		require.NoError(t, err)
		assert.Equal(t, events.JobEventsWarnings, rec.Jobs, "--job-events")
		assert.NotNil(t, rec.Metrics, "counted")
		rec.Event(t.Context(), cm, false, "Test", "Test", "note")
		assert.Len(t, separate.Actions(), 1, "written through the events client")
		assert.Empty(t, fallback.Actions(), "not through the fallback")
	})
	t.Run("fallback", func(t *testing.T) {
		t.Parallel()
		tf := newTestFactory(t)
		fallback := fake.NewClientset()
		rec, err := tf.f.LoopEventRecorder(fallback, events.JobEventsAll, metrics.NewRegistry())
		require.NoError(t, err)
		rec.Event(t.Context(), cm, false, "Test", "Test", "note")
		assert.Len(t, fallback.Actions(), 1, "written through the fallback")
	})
	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		tf := newTestFactory(t)
		boom := errors.New("no kubeconfig")
		tf.f.EventsClientset = func() (kubeclient.Interface, error) { return nil, boom }
		_, err := tf.f.LoopEventRecorder(fake.NewClientset(), events.JobEventsAll, metrics.NewRegistry())
		assert.ErrorIs(t, err, boom, "the events client's error")
		tf.f.EventsClientset = nil
		reg := metrics.NewRegistry()
		_, err = tf.f.LoopEventRecorder(tf.cs, events.JobEventsAll, reg)
		require.NoError(t, err)
		_, err = tf.f.LoopEventRecorder(tf.cs, events.JobEventsAll, reg)
		assert.Error(t, err, "metrics registered twice in one registry")
	})
}
