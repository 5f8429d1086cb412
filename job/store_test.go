package job

import (
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
)

const ns = "jobs"

var epoch = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

func newJob(name string) *Job {
	return &Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: JobSpec{
			Job:     "deploy-web",
			Type:    Periodic,
			PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}},
		},
	}
}

func newStore(t *testing.T, objs ...runtime.Object) (*Store, *fake.Clientset, *testingclock.FakeClock) {
	t.Helper()
	cs := fake.NewClientset(objs...)
	clk := testingclock.NewFakeClock(epoch)
	return NewStore(kubetest.CoreV1(cs.CoreV1()), ns, StoreOptions{Clock: clk}), cs, clk
}

func TestStoreCreate(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, cs, _ := newStore(t)

	got, err := s.Create(ctx, newJob("deploy-web-1"))
	require.NoError(t, err)
	assert.Equal(t, Triggered, got.Status.State)
	assert.Equal(t, ns, got.Namespace)
	assert.Equal(t, DefaultCluster, got.Spec.Cluster)
	require.NotNil(t, got.Status.StartTime)
	assert.True(t, got.Status.StartTime.Time.Equal(epoch))

	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "deploy-web-1", metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, map[string]string{
		LabelManagedBy: ManagedByValue,
		LabelKind:      KindJob,
		LabelJob:       "deploy-web",
		LabelType:      "periodic",
		LabelState:     "triggered",
	}, cm.Labels)
	assert.Contains(t, cm.Data[dataSpec], `"podSpec"`)
	assert.Contains(t, cm.Data[dataStatus], `"state":"triggered"`)

	_, err = s.Create(ctx, newJob("deploy-web-1"))
	assert.ErrorIs(t, err, ErrExists)
}

func TestStoreCreateInvalidWritesNothing(t *testing.T) {
	t.Parallel()
	s, cs, _ := newStore(t)
	j := newJob("deploy-web-1")
	j.Spec.PodSpec = nil

	_, err := s.Create(t.Context(), j)
	var ve *ValidationError
	require.ErrorAs(t, err, &ve)
	assert.Equal(t, "spec.podSpec", ve.Errors[0].Field)
	assert.Empty(t, cs.Actions(), "no API call for an invalid job")
}

func TestStoreGet(t *testing.T) {
	t.Parallel()
	other := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "other", Namespace: ns}}
	corrupt := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "corrupt", Namespace: ns, Labels: map[string]string{LabelManagedBy: ManagedByValue, LabelKind: KindJob}},
		Data:       map[string]string{dataSpec: "{", dataStatus: "{}"},
	}
	s, _, _ := newStore(t, other, corrupt)
	tests := []struct {
		name string
		get  string
		want error
	}{
		{name: "missing", get: "nope", want: ErrNotFound},
		{name: "not labelled as a job", get: "other", want: ErrNotFound},
		{name: "undecodable", get: "corrupt", want: ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := s.Get(t.Context(), tt.get)
			assert.ErrorIs(t, err, tt.want, tt.get)
		})
	}
}

func TestStoreList(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _, clk := newStore(t)
	for _, name := range []string{"c", "a", "b"} {
		j := newJob(name)
		if name == "b" {
			j.Spec.Job = "other"
			j.Labels = map[string]string{"team": "api"}
		}
		_, err := s.Create(ctx, j)
		require.NoError(t, err)
		clk.Step(time.Microsecond)
	}
	done, err := s.Get(ctx, "a")
	require.NoError(t, err)
	_, err = s.UpdateStatus(ctx, done, JobStatus{State: Error, StartTime: done.Status.StartTime})
	require.NoError(t, err)

	tests := []struct {
		name string
		opts ListOptions
		want []string
	}{
		{name: "all in start order", want: []string{"c", "a", "b"}},
		{name: "by job name", opts: ListOptions{JobName: "deploy-web"}, want: []string{"c", "a"}},
		{name: "active only", opts: ListOptions{ActiveOnly: true}, want: []string{"c", "b"}},
		{name: "by the job's own label", opts: ListOptions{Selector: "team=api"}, want: []string{"b"}},
		{name: "by lockctl's state label and job name", opts: ListOptions{JobName: "deploy-web", Selector: LabelState + " in (triggered,pending)"}, want: []string{"c"}},
		{name: "by a missing label", opts: ListOptions{Selector: "!team"}, want: []string{"c", "a"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			jobs, err := s.List(t.Context(), tt.opts)
			require.NoError(t, err)
			var names []string
			for _, j := range jobs {
				names = append(names, j.Name)
			}
			assert.Equal(t, tt.want, names)
		})
	}
}

func TestStoreUpdateStatus(t *testing.T) {
	t.Parallel()
	later := metav1.NewTime(epoch.Add(time.Hour))
	tests := []struct {
		name    string
		from    JobStatus
		to      JobStatus
		reactor k8stesting.ReactionFunc
		wantErr error
		check   func(t *testing.T, got *Job)
	}{
		{
			name: "triggered to pending stamps the pending time",
			from: JobStatus{State: Triggered},
			to:   JobStatus{State: Pending, PodName: "p", BuildID: "3"},
			check: func(t *testing.T, got *Job) {
				assert.True(t, got.Status.PendingTime.Time.Equal(epoch))
				assert.Nil(t, got.Status.CompletionTime)
			},
		},
		{
			name: "pending to failure stamps the completion time and complete label",
			from: JobStatus{State: Pending},
			to:   JobStatus{State: Failure},
			check: func(t *testing.T, got *Job) {
				assert.True(t, got.Status.CompletionTime.Time.Equal(epoch))
				assert.True(t, got.IsTerminal())
			},
		},
		{
			name: "aborted completes with its completion time",
			from: JobStatus{State: Aborted},
			to:   JobStatus{State: Aborted, CompletionTime: &later},
			check: func(t *testing.T, got *Job) {
				assert.True(t, got.IsTerminal())
			},
		},
		{name: "pending back to triggered", from: JobStatus{State: Pending}, to: JobStatus{State: Triggered}, wantErr: &TransitionError{}},
		{name: "triggered straight to success", from: JobStatus{State: Triggered}, to: JobStatus{State: Success}, wantErr: &TransitionError{}},
		{name: "aborted to success", from: JobStatus{State: Aborted}, to: JobStatus{State: Success}, wantErr: &TransitionError{}},
		{name: "terminal never changes", from: JobStatus{State: Success, CompletionTime: &later}, to: JobStatus{State: Success, CompletionTime: &later, Description: "x"}, wantErr: ErrTerminal},
		{
			name:    "lost race",
			from:    JobStatus{State: Triggered},
			to:      JobStatus{State: Pending},
			reactor: conflicts(-1),
			wantErr: ErrConflict,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			s, cs, _ := newStore(t)
			j := newJob("j")
			j.Namespace = ns
			j.Status = tt.from
			cm, err := ToConfigMap(j)
			require.NoError(t, err)
			_, err = cs.CoreV1().ConfigMaps(ns).Create(ctx, cm, metav1.CreateOptions{})
			require.NoError(t, err)
			cur, err := s.Get(ctx, "j")
			require.NoError(t, err)
			if tt.reactor != nil {
				cs.PrependReactor("update", "configmaps", tt.reactor)
			}

			got, err := s.UpdateStatus(ctx, cur, tt.to)
			if tt.wantErr != nil {
				var te *TransitionError
				if errors.As(tt.wantErr, &te) {
					assert.ErrorAs(t, err, &te)
				} else {
					assert.ErrorIs(t, err, tt.wantErr)
				}
				stored, gerr := s.Get(ctx, "j")
				require.NoError(t, gerr)
				assert.Equal(t, tt.from.State, stored.Status.State, "nothing written")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.to.State, got.Status.State)
			stored, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "j", metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, string(tt.to.State), stored.Labels[LabelState])
			assert.Equal(t, got.IsTerminal(), stored.Labels[LabelComplete] == "true")
			tt.check(t, got)
		})
	}
}

func TestStoreUpdateStatusUnchangedWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, cs, _ := newStore(t)
	j, err := s.Create(ctx, newJob("j"))
	require.NoError(t, err)
	cs.ClearActions()

	got, err := s.UpdateStatus(ctx, j, *j.Status.DeepCopy())
	require.NoError(t, err)
	assert.Equal(t, j, got)
	assert.Empty(t, cs.Actions())
}

func TestStoreUpdateStatusRefusesAPartialJob(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, cs, _ := newStore(t)
	j, err := s.Create(ctx, newJob("j"))
	require.NoError(t, err)
	cs.ClearActions()

	partial := j.DeepCopy()
	partial.Spec.PodSpec = nil
	st := *j.Status.DeepCopy()
	st.State = Pending
	_, err = s.UpdateStatus(ctx, partial, st)
	assert.ErrorIs(t, err, ErrCorrupt, "a job without its pod template is not written")
	assert.Empty(t, cs.Actions(), "nothing written")
}

func TestStoreAbort(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, cs, _ := newStore(t)
	_, err := s.Create(ctx, newJob("j"))
	require.NoError(t, err)

	cs.PrependReactor("update", "configmaps", conflicts(1))
	got, err := s.Abort(ctx, "j", ReasonAbortRequested, "aborted by alice")
	require.NoError(t, err, "a lost race is retried")
	assert.Equal(t, Aborted, got.Status.State)
	assert.Equal(t, "aborted by alice", got.Status.Description)
	assert.False(t, got.IsTerminal(), "the reconciler completes an aborted job")

	again, err := s.Abort(ctx, "j", ReasonAbortRequested, "again")
	require.ErrorIs(t, err, ErrAborted, "aborting twice changes nothing, and says so")
	assert.Equal(t, "aborted by alice", again.Status.Description)

	_, err = s.UpdateStatus(ctx, again, JobStatus{State: Aborted, CompletionTime: &metav1.Time{Time: epoch}, Description: "done"})
	require.NoError(t, err)
	_, err = s.Abort(ctx, "j", ReasonAbortRequested, "late")
	assert.ErrorIs(t, err, ErrTerminal)

	_, err = s.Abort(ctx, "missing", ReasonAbortRequested, "x")
	assert.ErrorIs(t, err, ErrNotFound)
}

// conflicts fails the next n updates with a Conflict, every update if n < 0.
func conflicts(n int) k8stesting.ReactionFunc {
	return func(k8stesting.Action) (bool, runtime.Object, error) {
		if n == 0 {
			return false, nil, nil
		}
		n--
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("changed"))
	}
}

func TestNextBuildID(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, cs, _ := newStore(t)

	for _, want := range []string{"1", "2", "3"} {
		got, err := s.NextBuildID(ctx, "deploy-web")
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
	other, err := s.NextBuildID(ctx, "other")
	require.NoError(t, err)
	assert.Equal(t, "1", other, "counted per job name")

	restarted := NewStore(kubetest.CoreV1(cs.CoreV1()), ns, StoreOptions{})
	got, err := restarted.NextBuildID(ctx, "deploy-web")
	require.NoError(t, err)
	assert.Equal(t, "4", got, "a new process continues the count")

	// NOTE: the fake clientset does not check resourceVersion, so the lost
	// race of the stale cached counter is injected.
	cs.PrependReactor("update", "configmaps", conflicts(1))
	got, err = s.NextBuildID(ctx, "deploy-web")
	require.NoError(t, err)
	assert.Equal(t, "5", got, "a stale cached counter re-reads after the conflict")

	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, BuildIDCounterName("deploy-web"), metav1.GetOptions{})
	require.NoError(t, err)
	assert.Equal(t, KindBuildID, cm.Labels[LabelKind])
}

func TestNextBuildIDConcurrent(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	s, _, _ := newStore(t)
	const n = 20
	ids := make(chan string, n)
	errs := make(chan error, n)
	for range n {
		go func() {
			id, err := s.NextBuildID(ctx, "deploy-web")
			ids <- id
			errs <- err
		}()
	}
	seen := map[string]bool{}
	for range n {
		require.NoError(t, <-errs)
		id := <-ids
		assert.False(t, seen[id], "build id %s handed out twice", id)
		seen[id] = true
	}
	assert.Len(t, seen, n)
	for i := 1; i <= n; i++ {
		assert.True(t, seen[strconv.Itoa(i)], "id %d handed out: ids are dense", i)
	}
}

func TestNextBuildIDBlocks(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		block      int
		calls      int
		wantWrites int // counter creates and updates
		wantStored string
	}{
		{name: "no block function", block: -1, calls: 5, wantWrites: 5, wantStored: "5"},
		{name: "block of one", block: 1, calls: 5, wantWrites: 5, wantStored: "5"},
		{name: "block covers all", block: 10, calls: 5, wantWrites: 1, wantStored: "10"},
		{name: "blocks run out", block: 4, calls: 10, wantWrites: 3, wantStored: "12"},
		{name: "block capped", block: 5000, calls: 2, wantWrites: 1, wantStored: "1000"},
		{name: "negative block means just the callers", block: -7, calls: 3, wantWrites: 3, wantStored: "3"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			cs := fake.NewClientset()
			var opts StoreOptions
			if tt.block != -1 {
				opts.BuildIDBlock = func(jobName string) int {
					assert.Equal(t, "deploy-web", jobName, "block asked for the job name")
					return tt.block
				}
			}
			s := NewStore(kubetest.CoreV1(cs.CoreV1()), ns, opts)
			for i := 1; i <= tt.calls; i++ {
				got, err := s.NextBuildID(ctx, "deploy-web")
				require.NoError(t, err)
				assert.Equal(t, strconv.Itoa(i), got, "call %d: ids handed out in order", i)
			}
			writes := 0
			for _, a := range cs.Actions() {
				if a.GetVerb() == "create" || a.GetVerb() == "update" {
					writes++
				}
			}
			assert.Equal(t, tt.wantWrites, writes, "counter writes for %d ids", tt.calls)
			cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, BuildIDCounterName("deploy-web"), metav1.GetOptions{})
			require.NoError(t, err)
			assert.Equal(t, tt.wantStored, cm.Data[buildIDKey], "ids reserved")

			other := NewStore(kubetest.CoreV1(cs.CoreV1()), ns, opts)
			got, err := other.NextBuildID(ctx, "deploy-web")
			require.NoError(t, err)
			want, _ := strconv.Atoi(tt.wantStored)
			assert.Equal(t, strconv.Itoa(want+1), got, "another process starts after the reserved block")
		})
	}
}

func TestNextBuildIDCorrupt(t *testing.T) {
	t.Parallel()
	bad := &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: BuildIDCounterName("x"), Namespace: ns},
		Data:       map[string]string{buildIDKey: "abc"},
	}
	s, _, _ := newStore(t, bad)
	_, err := s.NextBuildID(t.Context(), "x")
	assert.ErrorIs(t, err, ErrCorrupt)
}

// TestStoreGetAll: the jobs named come in the order given; those that do
// not exist are named apart.
func TestStoreGetAll(t *testing.T) {
	t.Parallel()
	s, _, _ := newStore(t)
	for _, name := range []string{"a", "b"} {
		_, err := s.Create(t.Context(), newJob(name))
		require.NoError(t, err, name)
	}
	jobs, missing, err := s.GetAll(t.Context(), []string{"b", "nope", "a", "gone"})
	require.NoError(t, err)
	var names []string
	for _, j := range jobs {
		names = append(names, j.Name)
	}
	assert.Equal(t, []string{"b", "a"}, names, "in the order given")
	assert.Equal(t, []string{"nope", "gone"}, missing)
}

func TestDisplayName(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "deploy-web-42", (&Job{ObjectMeta: metav1.ObjectMeta{Name: "deploy-web-42", GenerateName: "deploy-web-"}}).DisplayName(), "the name once given")
	assert.Equal(t, "deploy-web-*", (&Job{ObjectMeta: metav1.ObjectMeta{GenerateName: "deploy-web-"}}).DisplayName(), "before: generateName and *")
}
