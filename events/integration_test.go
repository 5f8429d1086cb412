package events

import (
	"bytes"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"strconv"
	"sync"

	"github.com/lockctl/lockctl/lock/record"
	"k8s.io/utils/clock"

	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// TestIntegrationJobEvents moves a job record through its states on the
// real API server, which validates every events.k8s.io Event, and reads
// them back as kubectl get events does (core/v1, by involvedObject).
func TestIntegrationJobEvents(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	logs := &bytes.Buffer{}
	l := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rec := NewRecorder(env.Kube.EventsV1(), Options{Log: l})
	store := job.NewStore(env.Kube.CoreV1(), ns, job.StoreOptions{OnChange: rec.JobChanged})
	j, err := store.Create(t.Context(), &job.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-1"},
		Spec: job.JobSpec{Job: "deploy", Type: job.Periodic,
			PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}},
	})
	require.NoError(t, err)
	for _, st := range []job.JobStatus{
		{State: job.Pending, Description: "pod created", StartTime: j.Status.StartTime},
		{State: job.Failure, Description: `container "main" exited with code 3`, StartTime: j.Status.StartTime},
	} {
		j, err = store.UpdateStatus(t.Context(), j, st)
		require.NoError(t, err)
	}

	assert.Empty(t, logs.String(), "every Event is accepted")
	list, err := env.Client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=deploy-1"})
	require.NoError(t, err)
	var got []string
	for _, ev := range list.Items {
		got = append(got, ev.Type+" "+ev.Reason+": "+ev.Message)
		assert.Equal(t, "ConfigMap", ev.InvolvedObject.Kind)
		assert.Equal(t, j.UID, ev.InvolvedObject.UID, "the Event points at the job record")
	}
	assert.ElementsMatch(t, []string{
		"Normal Pending: triggered → pending: pod created",
		`Warning Failure: pending → failure: container "main" exited with code 3`,
	}, got, "kubectl get events shows the job's state changes")
}

// TestIntegrationLockEvents takes a lock, hands it over on release and has
// someone else break it with --force on the real API server, then lists the
// lock's Events as `kubectl get events` does.
func TestIntegrationLockEvents(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	logs := &bytes.Buffer{}
	l := slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	rec := NewRecorder(env.Kube.EventsV1(), Options{Log: l})
	locks := lock.New(env.Kube.CoreV1(), env.Kube.CoreV1(), ns, clock.RealClock{}, lock.Options{Events: rec})
	req := func(repo, session string) lock.Request {
		return lock.Request{Target: "staging", Identity: record.Identity{Owner: "acme", Repo: repo, Branch: "main", Build: "1"}, ClaimID: session}
	}

	first, _, err := locks.TryAcquire(t.Context(), req("web", "a"))
	require.NoError(t, err)
	require.NotNil(t, first, "the free lock is taken")
	held, queued, err := locks.TryAcquire(t.Context(), req("api", "b"))
	require.NoError(t, err)
	require.Nil(t, held)
	require.NotNil(t, queued, "the second contender waits")
	res, err := locks.Release(t.Context(), "staging", req("web", "a").Identity, lock.ReleaseOptions{})
	require.NoError(t, err)
	require.NotNil(t, res.HandedTo, "the release hands the lock over")
	held, _, err = locks.TryAcquire(t.Context(), req("api", "b"))
	require.NoError(t, err)
	require.NotNil(t, held, "the waiter confirms the hand-over")
	res, err = locks.Release(t.Context(), "staging", req("ops", "c").Identity, lock.ReleaseOptions{Force: true, By: "alice@console"})
	require.NoError(t, err)
	require.True(t, res.Forced)

	assert.Empty(t, logs.String(), "every Event is accepted")
	list, err := env.Client.CoreV1().Events(ns).List(t.Context(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + record.Name("staging")})
	require.NoError(t, err)
	var got []string
	for _, ev := range list.Items {
		got = append(got, ev.Type+" "+ev.Reason+": "+ev.Message)
		assert.Equal(t, "ConfigMap", ev.InvolvedObject.Kind)
		assert.Equal(t, first.UID, ev.InvolvedObject.UID, "the Event points at the lock")
	}
	assert.ElementsMatch(t, []string{
		"Normal Acquired: acquired by acme/web@main#1, fencing token " + first.Token,
		"Normal HandedOver: released by acme/web@main#1, handed over to acme/api@main#1",
		"Normal Acquired: hand-over confirmed by acme/api@main#1, fencing token " + held.Token,
		"Warning ForceReleased: hold of acme/api@main#1 broken with --force by alice@console",
	}, got, "kubectl get events shows the lock's changes")
}

// TestIntegrationBackgroundJobEvents records the state changes of many jobs
// at once through a Recorder writing in the background, through a client
// of its own, on the real API server: once stopped, every Event is there,
// none dropped, and each job's Events were written in the order its state
// changed (the API server's resourceVersions follow the recorded times).
func TestIntegrationBackgroundJobEvents(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	own, err := kube.NewForConfig(rest.CopyConfig(env.RESTConfig))
	require.NoError(t, err)
	rec := NewRecorder(own.EventsV1(), Options{})
	stop := rec.Background(DefaultQueueCapacity, DefaultWriters)
	store := job.NewStore(env.Kube.CoreV1(), ns, job.StoreOptions{OnChange: rec.JobChanged})

	const jobs = 20
	var wg sync.WaitGroup
	for i := range jobs {
		wg.Go(func() {
			j, err := store.Create(t.Context(), &job.Job{
				TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
				ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("deploy-%02d", i)},
				Spec: job.JobSpec{Job: "deploy", Type: job.Periodic,
					PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}},
			})
			if !assert.NoError(t, err) {
				return
			}
			for _, st := range []job.JobStatus{
				{State: job.Pending, Description: "pod created", StartTime: j.Status.StartTime},
				{State: job.Pending, Description: "pod lost, replacing it", StartTime: j.Status.StartTime, Revivals: 1},
				{State: job.Success, Description: "job succeeded", StartTime: j.Status.StartTime, Revivals: 1},
			} {
				if j, err = store.UpdateStatus(t.Context(), j, st); !assert.NoError(t, err) {
					return
				}
			}
		})
	}
	wg.Wait()
	stop(t.Context())
	assert.Zero(t, rec.Dropped())

	list, err := env.Client.EventsV1().Events(ns).List(t.Context(), metav1.ListOptions{})
	require.NoError(t, err)
	byJob := map[string][]eventsv1.Event{}
	for _, ev := range list.Items {
		byJob[ev.Regarding.Name] = append(byJob[ev.Regarding.Name], ev)
	}
	require.Len(t, byJob, jobs)
	for name, evs := range byJob {
		sort.Slice(evs, func(a, b int) bool { return evs[a].EventTime.Before(&evs[b].EventTime) })
		var reasons []string
		for k, ev := range evs {
			reasons = append(reasons, ev.Reason)
			if k > 0 {
				prev, err1 := strconv.ParseInt(evs[k-1].ResourceVersion, 10, 64)
				cur, err2 := strconv.ParseInt(ev.ResourceVersion, 10, 64)
				require.NoError(t, errors.Join(err1, err2))
				assert.Less(t, prev, cur, "%s: %s written after %s", name, ev.Reason, evs[k-1].Reason)
			}
		}
		assert.Equal(t, []string{"Pending", ReasonPodLost, "Success"}, reasons, name)
	}
}
