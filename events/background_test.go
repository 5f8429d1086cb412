package events

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/metrics"
)

// notes returns the notes of the Events created through cs, in the order
// they were created, per object name.
func notes(cs *fake.Clientset) map[string][]string {
	out := map[string][]string{}
	for _, a := range cs.Actions() {
		if c, ok := a.(k8stesting.CreateAction); ok && a.GetResource().Resource == "events" {
			ev := c.GetObject().(*eventsv1.Event)
			out[ev.Regarding.Name] = append(out[ev.Regarding.Name], ev.Note)
		}
	}
	return out
}

func configMap(name string) *corev1.ConfigMap {
	return &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "ci"}}
}

func TestBackgroundKeepsEachObjectsOrder(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	reg := metrics.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	rec := NewRecorder(kubetest.EventsV1(cs.EventsV1()), Options{Metrics: m})
	stop := rec.Background(1000, 4)

	const objects, each = 20, 10
	var wg sync.WaitGroup
	for o := range objects {
		wg.Go(func() {
			for i := range each {
				rec.Event(t.Context(), configMap(fmt.Sprintf("job-%02d", o)), false, "Reconcile", "Pending", fmt.Sprint(i))
			}
		})
	}
	wg.Wait()
	stop(t.Context())

	got := notes(cs)
	require.Len(t, got, objects)
	for name, n := range got {
		assert.Equal(t, []string{"0", "1", "2", "3", "4", "5", "6", "7", "8", "9"}, n, "the Events of %s, in the order recorded", name)
	}
	assert.Zero(t, rec.Dropped())
	assert.Equal(t, float64(objects*each), m.events.WithLabelValues(resultWritten).Value())
	assert.Zero(t, m.events.WithLabelValues(resultDropped).Value())

	rec.Event(t.Context(), configMap("late"), false, "Reconcile", "Pending", "after stop")
	assert.Equal(t, []string{"after stop"}, notes(cs)["late"], "an Event after stop is written at once")
}

// TestBackgroundNeverBlocks holds every write of an Event until the test
// lets go: recording goes on returning at once, a full queue drops and
// counts, and what was queued is written in order once the API server
// answers.
func TestBackgroundNeverBlocks(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	release := make(chan struct{})
	started := make(chan struct{}, 100)
	cs.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		started <- struct{}{}
		<-release
		return false, nil, nil
	})
	reg := metrics.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)
	rec := NewRecorder(kubetest.EventsV1(cs.EventsV1()), Options{Metrics: m})
	stop := rec.Background(4, 1)

	rec.Event(t.Context(), configMap("job"), false, "Reconcile", "Pending", "0")
	<-started // the writer holds "0"; the queue (4) takes 1-4, 5-9 are dropped
	for i := 1; i < 10; i++ {
		rec.Event(t.Context(), configMap("job"), false, "Reconcile", "Pending", fmt.Sprint(i))
	}
	assert.Equal(t, int64(5), rec.Dropped())
	assert.Equal(t, 5.0, m.events.WithLabelValues(resultDropped).Value())

	close(release)
	stop(t.Context())
	assert.Equal(t, []string{"0", "1", "2", "3", "4"}, notes(cs)["job"])
	assert.Equal(t, 5.0, m.events.WithLabelValues(resultWritten).Value())
}

// TestBackgroundStopIsBounded: a stop whose context ends gives up the
// Events still queued (dropped, counted) instead of waiting for an API
// server that does not answer.
func TestBackgroundStopIsBounded(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	release := make(chan struct{})
	started := make(chan struct{}, 100)
	cs.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
		started <- struct{}{}
		<-release
		return false, nil, nil
	})
	rec := NewRecorder(kubetest.EventsV1(cs.EventsV1()), Options{})
	stop := rec.Background(100, 1)
	for i := range 50 {
		rec.Event(t.Context(), configMap("job"), false, "Reconcile", "Pending", fmt.Sprint(i))
	}
	<-started // "0" is in flight
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	stopped := make(chan struct{})
	go func() {
		stop(ctx)
		close(stopped)
	}()
	rec.bgMu.RLock()
	bg := rec.bg
	rec.bgMu.RUnlock()
	require.Eventually(t, func() bool { return bg.abandon.Err() != nil }, time.Minute, time.Millisecond, "stop gives up once its context ends")
	close(release)
	<-stopped
	assert.Equal(t, []string{"0"}, notes(cs)["job"], "only the Event in flight is written")
	assert.Equal(t, int64(49), rec.Dropped(), "every Event not written is counted")
}
