package scheduler

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes/fake"
	k8stesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
)

const (
	jobNS = "jobs"
	podNS = "pods"
)

var epoch = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// harness is a Reconciler reading straight from fake clientsets: the job
// cluster and one build cluster, "default".
type harness struct {
	t     *testing.T
	r     *Reconciler
	jobs  *fake.Clientset
	build *fake.Clientset
	clock *testingclock.FakeClock
	store *job.Store
}

func newHarness(t *testing.T, opts Options) *harness {
	t.Helper()
	h := &harness{
		t:     t,
		jobs:  withResourceVersions(fake.NewClientset()),
		build: withResourceVersions(fake.NewClientset()),
		clock: testingclock.NewFakeClock(epoch),
	}
	opts.Clock = h.clock
	if opts.PodNamespace == "" {
		opts.PodNamespace = podNS
	}
	r, err := NewReconciler(kubetest.CoreV1(h.jobs.CoreV1()), jobNS, map[string]kube.PodsGetter{job.DefaultCluster: kubetest.CoreV1(h.build.CoreV1())}, opts)
	require.NoError(t, err)
	h.r = r
	h.store = r.Store()
	return h
}

// submit stores a job and steps the clock, so jobs start in submit order.
func (h *harness) submit(name string, mods ...func(*job.Job)) *job.Job {
	h.t.Helper()
	j := &job.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, UID: k8stypes.UID("uid-" + name)},
		Spec: job.JobSpec{
			Job:     "deploy-web",
			Type:    job.Periodic,
			PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}},
		},
	}
	for _, m := range mods {
		m(j)
	}
	out, err := h.store.Create(h.t.Context(), j)
	require.NoError(h.t, err, "submit %s", name)
	h.clock.Step(time.Microsecond)
	return out
}

// setState forces a job's status, as an earlier pass would have left it.
func (h *harness) setState(name string, st job.JobStatus) *job.Job {
	h.t.Helper()
	j := h.get(name)
	st.StartTime = j.Status.StartTime
	j.Status = st
	cm, err := job.ToConfigMap(j)
	require.NoError(h.t, err)
	_, err = h.jobs.CoreV1().ConfigMaps(jobNS).Update(h.t.Context(), cm, metav1.UpdateOptions{})
	require.NoError(h.t, err)
	return h.get(name)
}

// pending makes a job pending with a pod in the given phase, changed by mods.
func (h *harness) pending(name string, phase corev1.PodPhase, mods ...func(*corev1.Pod)) *corev1.Pod {
	h.t.Helper()
	j := h.setState(name, job.JobStatus{State: job.Pending, BuildID: "1", PodName: name})
	pod := job.NewPod(j, podNS, "1")
	pod.UID = k8stypes.UID("pod-uid-" + name)
	pod.CreationTimestamp = metav1.NewTime(h.clock.Now())
	pod.Status.Phase = phase
	for _, m := range mods {
		m(pod)
	}
	created, err := h.build.CoreV1().Pods(podNS).Create(h.t.Context(), pod, metav1.CreateOptions{})
	require.NoError(h.t, err)
	return created
}

func (h *harness) reconcile(name string) (Result, error) {
	h.t.Helper()
	return h.r.Reconcile(h.t.Context(), name)
}

func (h *harness) mustReconcile(name string) Result {
	h.t.Helper()
	res, err := h.reconcile(name)
	require.NoError(h.t, err, "reconcile %s", name)
	return res
}

func (h *harness) get(name string) *job.Job {
	h.t.Helper()
	j, err := h.store.Get(h.t.Context(), name)
	require.NoError(h.t, err)
	return j
}

func (h *harness) pod(name string) *corev1.Pod {
	h.t.Helper()
	pod, err := h.build.CoreV1().Pods(podNS).Get(h.t.Context(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	require.NoError(h.t, err)
	return pod
}

// podActions returns the verbs of the build cluster's pod calls, such as
// "create", "delete", "patch".
func (h *harness) podActions() []string {
	var out []string
	for _, a := range h.build.Actions() {
		if a.GetResource().Resource == "pods" && a.GetVerb() != "get" && a.GetVerb() != "list" {
			out = append(out, a.GetVerb())
		}
	}
	return out
}

// writes keeps the actions that change something: not reads, not dry-run
// creates, not access reviews.
func writes(actions []k8stesting.Action) []k8stesting.Action {
	var out []k8stesting.Action
	for _, a := range actions {
		switch a.GetVerb() {
		case "get", "list", "watch":
			continue
		}
		if a.GetResource().Resource == "selfsubjectaccessreviews" {
			continue
		}
		if c, ok := a.(k8stesting.CreateActionImpl); ok && len(c.CreateOptions.DryRun) > 0 {
			continue
		}
		out = append(out, a)
	}
	return out
}

func (h *harness) assertState(name string, want job.State, desc string) *job.Job {
	h.t.Helper()
	j := h.get(name)
	assert.Equal(h.t, want, j.Status.State, "state of %s", name)
	if desc != "" {
		assert.Equal(h.t, desc, j.Status.Description, "description of %s", name)
	}
	return j
}

func terminated(name string, code int32, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: code, Reason: reason}}}
}

func apiError(code int32, reason metav1.StatusReason) k8stesting.ReactionFunc {
	return func(k8stesting.Action) (bool, runtime.Object, error) {
		return true, nil, &apierrors.StatusError{ErrStatus: metav1.Status{
			Status: metav1.StatusFailure, Code: code, Reason: reason, Message: strings.ToLower(string(reason)) + " from the test",
		}}
	}
}

func conflictOnce() k8stesting.ReactionFunc {
	var once sync.Once
	return func(k8stesting.Action) (bool, runtime.Object, error) {
		handled := false
		once.Do(func() { handled = true })
		if !handled {
			return false, nil, nil
		}
		return true, nil, apierrors.NewConflict(schema.GroupResource{Resource: "configmaps"}, "x", errors.New("changed"))
	}
}

// withResourceVersions makes the fake clientset give every created or updated
// object a new resourceVersion (and a created one a UID) and refuse an update whose resourceVersion is
// not the stored one, as the API server does. The fake alone does neither.
func withResourceVersions(cs *fake.Clientset) *fake.Clientset {
	var (
		mu sync.Mutex
		rv uint64 = 100
	)
	react := func(action k8stesting.Action) (bool, runtime.Object, error) {
		mu.Lock()
		defer mu.Unlock()
		// NOTE: switch on the verb, not the action's type: CreateAction and
		// UpdateAction are the same interface, so a type switch never
		// reaches its update case.
		var obj runtime.Object
		switch action.GetVerb() {
		case "create":
			obj = action.(k8stesting.CreateAction).GetObject()
		case "update":
			a := action.(k8stesting.UpdateAction)
			obj = a.GetObject()
			m, err := meta.Accessor(obj)
			if err != nil {
				return false, nil, nil
			}
			stored, err := cs.Tracker().Get(a.GetResource(), a.GetNamespace(), m.GetName())
			if err == nil && m.GetResourceVersion() != "" {
				sm, _ := meta.Accessor(stored)
				if sm.GetResourceVersion() != m.GetResourceVersion() {
					return true, nil, apierrors.NewConflict(a.GetResource().GroupResource(), m.GetName(), errors.New("the object has been modified"))
				}
			}
		default:
			return false, nil, nil
		}
		if m, err := meta.Accessor(obj); err == nil {
			rv++
			m.SetResourceVersion(strconv.FormatUint(rv, 10))
			if action.GetVerb() == "create" && m.GetUID() == "" {
				m.SetUID(k8stypes.UID("uid-" + strconv.FormatUint(rv, 10)))
			}
		}
		return false, nil, nil
	}
	cs.PrependReactor("create", "*", react)
	cs.PrependReactor("update", "*", react)
	return cs
}

// fakeLocker is a NamespaceLocker whose answers the test sets.
type fakeLocker struct {
	mu       sync.Mutex
	err      error
	free     bool
	acquired []string
	released []string
}

var _ NamespaceLocker = (*fakeLocker)(nil)

func (l *fakeLocker) TryAcquire(_ context.Context, target string, holder *corev1.Pod) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.err != nil {
		return false, l.err
	}
	if l.free {
		l.acquired = append(l.acquired, target+"/"+holder.Name)
	}
	return l.free, nil
}

func (l *fakeLocker) Release(_ context.Context, target string, holder *corev1.Pod) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.released = append(l.released, target+"/"+holder.Name)
	return nil
}
