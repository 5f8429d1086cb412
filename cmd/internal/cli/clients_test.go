package cli

import (
	"errors"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/lockctl/lockctl/events"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/metrics"
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
		tf.f.EventsClientset = func() (kube.Interface, error) { return kubetest.Clients(separate), nil }
		reg := metrics.NewRegistry()
		rec, err := tf.f.LoopEventRecorder(kubetest.Clients(fallback), events.JobEventsWarnings, reg)
		require.NoError(t, err)
		before := &job.Job{ObjectMeta: metav1.ObjectMeta{Name: "x", Namespace: "ci"}, Status: job.JobStatus{State: job.Triggered}}
		after := before.DeepCopy()
		after.Status.State = job.Pending
		rec.JobChanged(t.Context(), before, after)
		assert.Empty(t, separate.Actions(), "--job-events warnings: a job pending is not recorded")
		rec.Event(t.Context(), cm, false, "Test", "Test", "note")
		assert.Len(t, separate.Actions(), 1, "written through the events client")
		var scrape strings.Builder
		require.NoError(t, reg.WriteText(&scrape))
		assert.Contains(t, scrape.String(), `# HELP lockctl_events_total Events about job records and locks, by what became of them: written, failed, dropped.
# TYPE lockctl_events_total counter
lockctl_events_total{result="dropped"} 0
lockctl_events_total{result="failed"} 0
lockctl_events_total{result="written"} 1
`, "counted")
		assert.Empty(t, fallback.Actions(), "not through the fallback")
	})
	t.Run("fallback", func(t *testing.T) {
		t.Parallel()
		tf := newTestFactory(t)
		fallback := fake.NewClientset()
		rec, err := tf.f.LoopEventRecorder(kubetest.Clients(fallback), events.JobEventsAll, metrics.NewRegistry())
		require.NoError(t, err)
		rec.Event(t.Context(), cm, false, "Test", "Test", "note")
		assert.Len(t, fallback.Actions(), 1, "written through the fallback")
	})
	t.Run("errors", func(t *testing.T) {
		t.Parallel()
		tf := newTestFactory(t)
		boom := errors.New("no kubeconfig")
		tf.f.EventsClientset = func() (kube.Interface, error) { return nil, boom }
		_, err := tf.f.LoopEventRecorder(kubetest.Clients(fake.NewClientset()), events.JobEventsAll, metrics.NewRegistry())
		assert.ErrorIs(t, err, boom, "the events client's error")
		tf.f.EventsClientset = nil
		reg := metrics.NewRegistry()
		_, err = tf.f.LoopEventRecorder(kubetest.Clients(tf.cs), events.JobEventsAll, reg)
		require.NoError(t, err)
		_, err = tf.f.LoopEventRecorder(kubetest.Clients(tf.cs), events.JobEventsAll, reg)
		assert.Error(t, err, "metrics registered twice in one registry")
	})
}
