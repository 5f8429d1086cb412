package scheduler

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	k8stypes "k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// waitFor bounds how long an integration test waits for a state.
const waitFor = 60 * time.Second

// itest is one integration test's namespace on the shared control plane.
type itest struct {
	t     *testing.T
	env   *testenv.Env
	ns    string
	store *job.Store
}

func newITest(t *testing.T) *itest {
	t.Helper()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	return &itest{t: t, env: env, ns: ns, store: job.NewStore(env.Kube.CoreV1(), ns, job.StoreOptions{})}
}

// run runs a Controller over the test's namespace until the test ends;
// clusters nil means the shared control plane as build cluster "default".
func (it *itest) run(opts Options, clusters map[string]Clientset) {
	it.t.Helper()
	if clusters == nil {
		clusters = map[string]Clientset{job.DefaultCluster: it.env.Kube}
	}
	c, err := NewController(it.env.Kube, it.ns, clusters, opts)
	require.NoError(it.t, err)
	ctx, cancel := context.WithCancel(context.WithoutCancel(it.t.Context()))
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()
	it.t.Cleanup(func() {
		cancel()
		assert.NoError(it.t, <-done, "Run returns nil when stopped")
	})
}

// submit stores a job whose pod kwok finishes as the mods say.
func (it *itest) submit(name string, mods ...func(*job.Job)) *job.Job {
	it.t.Helper()
	j := &job.Job{
		TypeMeta:   metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind},
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{}},
		Spec: job.JobSpec{
			Job:  "it",
			Type: job.Periodic,
			PodSpec: &corev1.PodSpec{
				Containers:  []corev1.Container{{Name: "main", Image: "busybox"}},
				Tolerations: notReadyToleration,
			},
		},
	}
	for _, m := range mods {
		m(j)
	}
	out, err := it.store.Create(it.t.Context(), j)
	require.NoError(it.t, err, "submit %s", name)
	return out
}

// notReadyToleration lets pods onto the fake node.
// NOTE: the fake node keeps the node.kubernetes.io/not-ready taint that
// admission puts on new nodes, as no controller manager runs to lift it.
var notReadyToleration = []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}}

// exits makes the job's pod finish with code after d.
func exits(code, d string) func(*job.Job) {
	return func(j *job.Job) {
		j.Annotations[testenv.AnnotationExitCode] = code
		if d != "" {
			j.Annotations[testenv.AnnotationDuration] = d
		}
	}
}

func annotate(k, v string) func(*job.Job) {
	return func(j *job.Job) { j.Annotations[k] = v }
}

// waitState waits until the job is in state and returns it.
func (it *itest) waitState(name string, want job.State) *job.Job {
	it.t.Helper()
	var last *job.Job
	ok := assert.Eventually(it.t, func() bool {
		j, err := it.store.Get(it.t.Context(), name)
		if err != nil {
			return false
		}
		last = j
		return j.Status.State == want && (want != job.Aborted || j.IsTerminal())
	}, waitFor, 20*time.Millisecond)
	if !ok && last == nil {
		it.t.Fatalf("job %s never read", name)
	}
	if !ok {
		it.t.Fatalf("job %s never reached %s; last status %+v", name, want, last.Status)
	}
	return last
}

func (it *itest) pod(name string) *corev1.Pod {
	it.t.Helper()
	pod, err := it.env.Client.CoreV1().Pods(it.ns).Get(it.t.Context(), name, metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return pod
}

// podLog records the job pods of a namespace as a watch sees them.
type podLog struct {
	mu      sync.Mutex
	created []string
	active  map[string]bool
	maxSeen int
	uids    map[string]map[string]bool
}

// watchPods records pod creations and the most pods active (not Succeeded
// or Failed) at once, as seen in pod events.
func (it *itest) watchPods() *podLog {
	it.t.Helper()
	w, err := it.env.Client.CoreV1().Pods(it.ns).Watch(it.t.Context(), metav1.ListOptions{LabelSelector: job.LabelManagedBy + "=" + job.ManagedByValue})
	require.NoError(it.t, err)
	it.t.Cleanup(w.Stop)
	l := &podLog{active: map[string]bool{}, uids: map[string]map[string]bool{}}
	go func() {
		for ev := range w.ResultChan() {
			pod, ok := ev.Object.(*corev1.Pod)
			if ok {
				l.record(ev.Type, pod)
			}
		}
	}()
	return l
}

func (l *podLog) record(t watch.EventType, pod *corev1.Pod) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if t == watch.Added {
		l.created = append(l.created, pod.Name)
	}
	if l.uids[pod.Name] == nil {
		l.uids[pod.Name] = map[string]bool{}
	}
	l.uids[pod.Name][string(pod.UID)] = true
	done := pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed
	if t == watch.Deleted || done {
		delete(l.active, string(pod.UID))
	} else {
		l.active[string(pod.UID)] = true
	}
	l.maxSeen = max(l.maxSeen, len(l.active))
}

func (l *podLog) snapshot() (created []string, maxActive int) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.created...), l.maxSeen
}

func TestIntegrationJobSucceedsAndFails(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	it.run(Options{}, nil)
	it.submit("ok", exits("0", "200ms"))
	it.submit("ko", exits("3", "200ms"))

	ok := it.waitState("ok", job.Success)
	assert.Equal(t, "job succeeded", ok.Status.Description)
	ko := it.waitState("ko", job.Failure)
	assert.Equal(t, `job failed: container "main" exited with code 3`, ko.Status.Description)
	assert.ElementsMatch(t, []string{"1", "2"}, []string{ok.Status.BuildID, ko.Status.BuildID}, "build ids of the job name")
	assert.Eventually(t, func() bool {
		p := it.pod("ok")
		return p != nil && len(p.Finalizers) == 0
	}, waitFor, 20*time.Millisecond, "finished pods keep their logs but lose lockctl's finalizer")
	env := map[string]string{}
	for _, e := range it.pod("ok").Spec.Containers[0].Env {
		env[e.Name] = e.Value
	}
	assert.Equal(t, ok.Status.BuildID, env["BUILD_ID"])
}

func TestIntegrationMaxConcurrencyStartsInCreationOrder(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	pods := it.watchPods()
	names := []string{"j1", "j2", "j3", "j4", "j5"}
	for _, n := range names {
		it.submit(n, exits("0", "300ms"), func(j *job.Job) { j.Spec.MaxConcurrency = 1 })
	}
	it.run(Options{}, nil)
	for _, n := range names {
		it.waitState(n, job.Success)
	}
	created, maxActive := pods.snapshot()
	assert.Equal(t, names, created, "pods start in creation order")
	assert.Equal(t, 1, maxActive, "one at a time")
}

func TestIntegrationQueueCapacity(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	pods := it.watchPods()
	var names []string
	for i := range 6 {
		n := "q" + string(rune('a'+i))
		names = append(names, n)
		it.submit(n, exits("0", "500ms"), func(j *job.Job) { j.Spec.Queue = "deploys" })
	}
	it.run(Options{QueueCapacities: map[string]int{"deploys": 2}}, nil)
	for _, n := range names {
		it.waitState(n, job.Success)
	}
	created, maxActive := pods.snapshot()
	assertStartOrder(t, names, created, 2)
	assert.Equal(t, 2, maxActive, "never more than the queue's capacity")
}

func presubmitOf(pull int) func(*job.Job) {
	return func(j *job.Job) {
		j.Spec.Type = job.Presubmit
		j.Spec.Refs = &job.Refs{Org: "acme", Repo: "web", BaseRef: "main", Pulls: []job.Pull{{Number: pull, SHA: "abc"}}}
	}
}

func TestIntegrationDuplicatePresubmitAborted(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	it.run(Options{}, nil)
	it.submit("pr-old", presubmitOf(7))
	it.waitState("pr-old", job.Pending)
	it.submit("pr-new", presubmitOf(7), exits("0", "200ms"))

	old := it.waitState("pr-old", job.Aborted)
	assert.Equal(t, "superseded by a newer run (pr-new)", old.Status.Description)
	assert.Eventually(t, func() bool { return it.pod("pr-old") == nil }, waitFor, 20*time.Millisecond, "the older run's pod is removed")
	it.waitState("pr-new", job.Success)
}

func TestIntegrationPendingTimeout(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	it.run(Options{PendingTimeout: 2 * time.Second}, nil)
	start := time.Now()
	it.submit("stuck", annotate(testenv.AnnotationHold, testenv.HoldPending))

	j := it.waitState("stuck", job.Error)
	assert.Equal(t, "pod pending timeout", j.Status.Description)
	// NOTE: startTime has a resolution of one second, so the timeout may
	// fall due up to a second early.
	assert.GreaterOrEqual(t, time.Since(start), time.Second)
	assert.Eventually(t, func() bool { return it.pod("stuck") == nil }, waitFor, 20*time.Millisecond, "pod deleted")
}

// evict marks the job's pod evicted, as the kubelet does.
func (it *itest) evict(name string) k8stypes.UID {
	it.t.Helper()
	pod := it.pod(name)
	require.NotNil(it.t, pod)
	pod.Status.Phase, pod.Status.Reason, pod.Status.Message = corev1.PodFailed, ReasonEvicted, "The node was low on resource: memory."
	_, err := it.env.Client.CoreV1().Pods(it.ns).UpdateStatus(it.t.Context(), pod, metav1.UpdateOptions{})
	require.NoError(it.t, err)
	return pod.UID
}

func TestIntegrationEviction(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	it.run(Options{}, nil)
	it.submit("revive")
	it.submit("fatal", func(j *job.Job) { j.Spec.ErrorOnEviction = true })
	it.waitState("revive", job.Pending)
	it.waitState("fatal", job.Pending)
	require.Eventually(t, func() bool {
		p, q := it.pod("revive"), it.pod("fatal")
		return p != nil && q != nil && p.Status.Phase == corev1.PodRunning && q.Status.Phase == corev1.PodRunning
	}, waitFor, 20*time.Millisecond)

	old := it.evict("revive")
	it.evict("fatal")

	assert.Eventually(t, func() bool {
		p := it.pod("revive")
		return p != nil && p.UID != old && p.Status.Phase == corev1.PodRunning
	}, waitFor, 20*time.Millisecond, "the evicted pod is recreated and runs")
	j, err := it.store.Get(t.Context(), "revive")
	require.NoError(t, err)
	assert.Equal(t, job.Pending, j.Status.State)
	assert.Equal(t, 1, j.Status.Revivals)
	fatal := it.waitState("fatal", job.Error)
	assert.Equal(t, "pod was evicted", fatal.Status.Description)
}

func TestIntegrationPodDeletedByHand(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	it.run(Options{}, nil)
	it.submit("victim")
	it.waitState("victim", job.Pending)
	require.Eventually(t, func() bool { p := it.pod("victim"); return p != nil && p.Status.Phase == corev1.PodRunning },
		waitFor, 20*time.Millisecond)

	require.NoError(t, it.env.Client.CoreV1().Pods(it.ns).Delete(t.Context(), "victim", metav1.DeleteOptions{}))

	j := it.waitState("victim", job.Error)
	assert.Equal(t, "pod deleted unexpectedly", j.Status.Description)
	assert.Eventually(t, func() bool { return it.pod("victim") == nil }, waitFor, 20*time.Millisecond, "the finalizer is removed, the pod goes")
}

func TestIntegrationUnknownClusterAlias(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	it.run(Options{}, nil)
	it.submit("lost", func(j *job.Job) { j.Spec.Cluster = "nowhere" })
	j := it.waitState("lost", job.Error)
	assert.Equal(t, `unknown build cluster "nowhere"`, j.Status.Description)
}

func TestIntegrationInvalidPodSpecRejected(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	it.run(Options{}, nil)
	it.submit("bad", func(j *job.Job) {
		j.Spec.PodSpec.Containers[0].VolumeMounts = []corev1.VolumeMount{{Name: "missing", MountPath: "/data"}}
	})
	j := it.waitState("bad", job.Error)
	assert.Contains(t, j.Status.Description, "pod can not be created: ")
	assert.Contains(t, j.Status.Description, "volumeMounts[0].name")
	assert.Nil(t, it.pod("bad"))
}

func TestIntegrationTwoBuildClusters(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	ctx, cancel := context.WithTimeout(t.Context(), testenv.SharedStartTimeout)
	defer cancel()
	second, err := testenv.Start(ctx, testenv.Options{})
	require.NoError(t, err, "second control plane")
	t.Cleanup(second.Stop)
	_, err = second.Client.CoreV1().Namespaces().Create(t.Context(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: it.ns}}, metav1.CreateOptions{})
	require.NoError(t, err)
	it.run(Options{}, map[string]Clientset{"default": it.env.Kube, "second": second.Kube})

	it.submit("here", exits("0", "100ms"))
	it.submit("there", exits("0", "100ms"), func(j *job.Job) { j.Spec.Cluster = "second" })

	it.waitState("here", job.Success)
	it.waitState("there", job.Success)
	_, err = second.Client.CoreV1().Pods(it.ns).Get(t.Context(), "there", metav1.GetOptions{})
	assert.NoError(t, err, "the pod ran in the second cluster")
	assert.Nil(t, it.pod("there"), "and not in the first")
}

var jobTypeMeta = metav1.TypeMeta{APIVersion: job.APIVersion, Kind: job.Kind}

func metaNamed(name string) metav1.ObjectMeta { return metav1.ObjectMeta{Name: name} }

func benchPodSpec() *corev1.PodSpec {
	return &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "busybox"}}, Tolerations: notReadyToleration}
}

// assertStartOrder checks that pods started in creation order, where up to
// k jobs admitted together may start in any order among themselves: no pod
// starts before the pods of all jobs k or more places older than it.
func assertStartOrder(t *testing.T, names, created []string, k int) {
	t.Helper()
	require.ElementsMatch(t, names, created, "one pod per job")
	pos := map[string]int{}
	for i, n := range created {
		pos[n] = i
	}
	for i, n := range names {
		for _, older := range names[:max(0, i-k+1)] {
			assert.Less(t, pos[older], pos[n], "%s started before %s, which is %d places older: %v", n, older, i-k+1, created)
		}
	}
}
