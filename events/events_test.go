package events

import (
	"errors"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/job"
)

func TestJobChanged(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		to         job.State
		failWrites bool
		wantReason string
		wantType   string
		wantNote   string
	}{
		{name: "pending", to: job.Pending, wantReason: "Pending", wantType: corev1.EventTypeNormal, wantNote: "triggered → pending: started"},
		{name: "error is a warning", to: job.Error, wantReason: "Error", wantType: corev1.EventTypeWarning, wantNote: "triggered → error: started"},
		{name: "an event that cannot be written fails nothing", to: job.Pending, failWrites: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cs := fake.NewClientset()
			if tt.failWrites {
				cs.PrependReactor("create", "events", func(k8stesting.Action) (bool, runtime.Object, error) {
					return true, nil, errors.New("events are forbidden")
				})
			}
			clock := testingclock.NewFakeClock(time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC))
			rec := NewRecorder(cs.EventsV1())
			rec.Clock, rec.Instance = clock, "test"
			store := job.NewStore(cs.CoreV1(), "ci", job.WithClock(clock), job.WithChangeHook(rec.JobChanged))
			j, err := store.Create(t.Context(), &job.Job{
				TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
				ObjectMeta: metav1.ObjectMeta{Name: "deploy-1"},
				Spec: job.JobSpec{Job: "deploy", Type: job.Periodic,
					PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}},
			})
			require.NoError(t, err)
			st := *j.Status.DeepCopy()
			st.State, st.Description = tt.to, "started"
			_, err = store.UpdateStatus(t.Context(), j, st)
			require.NoError(t, err, "the status is written whatever happens to the event")

			list, err := cs.EventsV1().Events("ci").List(t.Context(), metav1.ListOptions{})
			require.NoError(t, err)
			if tt.failWrites {
				assert.Empty(t, list.Items)
				return
			}
			require.Len(t, list.Items, 1)
			ev := list.Items[0]
			assert.Equal(t, tt.wantReason, ev.Reason)
			assert.Equal(t, tt.wantType, ev.Type)
			assert.Equal(t, tt.wantNote, ev.Note)
			assert.Equal(t, corev1.ObjectReference{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ci", Name: "deploy-1", ResourceVersion: ev.Regarding.ResourceVersion}, ev.Regarding)
			assert.Equal(t, Controller, ev.ReportingController)
			assert.Equal(t, clock.Now(), ev.EventTime.Time)
		})
	}
}
