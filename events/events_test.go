package events

import (
	"errors"
	"strings"
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

	"github.com/lockctl/lockctl/internal/testing/kubetest"
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
			rec := NewRecorder(kubetest.EventsV1(cs.EventsV1()), Options{Clock: clock, Instance: "test"})
			store := job.NewStore(kubetest.CoreV1(cs.CoreV1()), "ci", job.StoreOptions{Clock: clock, OnChange: rec.JobChanged})
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

func TestJobChangedLevels(t *testing.T) {
	t.Parallel()
	mk := func(state job.State, mod func(*job.JobStatus)) *job.Job {
		j := &job.Job{ObjectMeta: metav1.ObjectMeta{Name: "deploy-1", Namespace: "ci"}, Status: job.JobStatus{State: state, Description: "why"}}
		if mod != nil {
			mod(&j.Status)
		}
		return j
	}
	done := func(s *job.JobStatus) { now := metav1.Now(); s.CompletionTime = &now }
	changes := []struct {
		name          string
		before, after *job.Job
		want          string // type and reason of the Event; "" for none
	}{
		{"started", mk(job.Triggered, nil), mk(job.Pending, nil), "Normal Pending"},
		{"succeeded", mk(job.Pending, nil), mk(job.Success, nil), "Normal Success"},
		{"failed", mk(job.Pending, nil), mk(job.Failure, nil), "Warning Failure"},
		{"error", mk(job.Pending, nil), mk(job.Error, nil), "Warning Error"},
		{"timed out", mk(job.Pending, nil), mk(job.Error, func(s *job.JobStatus) { s.Reason = job.ReasonTimeout }), "Warning Error"},
		{"aborted by someone", mk(job.Pending, nil), mk(job.Aborted, func(s *job.JobStatus) { s.Reason = job.ReasonAbortRequested }), "Warning Aborted"},
		{"abort completed", mk(job.Aborted, nil), mk(job.Aborted, done), "Warning Aborted"},
		{"running timeout", mk(job.Pending, nil), mk(job.Aborted, func(s *job.JobStatus) { s.Reason = job.ReasonTimeout; done(s) }), "Warning Aborted"},
		{"superseded is routine", mk(job.Pending, nil), mk(job.Aborted, func(s *job.JobStatus) { s.Reason = job.ReasonSuperseded; done(s) }), "Normal Aborted"},
		{"pod lost and replaced", mk(job.Pending, nil), mk(job.Pending, func(s *job.JobStatus) { s.Revivals = 1 }), "Warning PodLost"},
		{"nothing changed", mk(job.Pending, nil), mk(job.Pending, func(s *job.JobStatus) { s.Description = "other" }), ""},
	}
	for _, level := range []JobEvents{"", JobEventsAll, JobEventsWarnings, JobEventsNone} {
		for _, c := range changes {
			t.Run(string(level)+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				cs := fake.NewClientset()
				rec := NewRecorder(kubetest.EventsV1(cs.EventsV1()), Options{Jobs: level})
				rec.JobChanged(t.Context(), c.before, c.after)
				list, err := cs.EventsV1().Events("ci").List(t.Context(), metav1.ListOptions{})
				require.NoError(t, err)
				want := c.want
				switch {
				case level == JobEventsNone:
					want = ""
				case level == JobEventsWarnings && !strings.HasPrefix(want, "Warning"):
					want = ""
				}
				if want == "" {
					assert.Empty(t, list.Items)
					return
				}
				require.Len(t, list.Items, 1)
				assert.Equal(t, want, list.Items[0].Type+" "+list.Items[0].Reason)
			})
		}
	}
}

func TestParseJobEvents(t *testing.T) {
	t.Parallel()
	for _, s := range JobEventsValues {
		got, err := ParseJobEvents(s)
		require.NoError(t, err)
		assert.Equal(t, JobEvents(s), got)
	}
	_, err := ParseJobEvents("some")
	assert.EqualError(t, err, `must be one of all, warnings, none, not "some"`)
}
