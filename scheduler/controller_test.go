package scheduler

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/metrics"
)

// controller builds a Controller over the harness's fake clientsets.
func (h *harness) controller(opts Options) *Controller {
	h.t.Helper()
	opts.Clock = h.clock
	if opts.PodNamespace == "" {
		opts.PodNamespace = podNS
	}
	c, err := NewController(kubetest.Clients(h.jobs), jobNS, map[string]Clientset{job.DefaultCluster: kubetest.Clients(h.build)}, opts)
	require.NoError(h.t, err)
	return c
}

func TestRunOnceDryRunPrintsPlanAndWritesNothing(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.submit("old-pr", presubmit(7))
	h.submit("stuck")
	h.submit("first")
	h.submit("second")
	h.submit("new-pr", presubmit(7))
	h.submit("nowhere", func(j *job.Job) { j.Spec.Cluster = "gpu" })
	h.clock.SetTime(epoch)
	h.pending("stuck", corev1.PodPending, func(p *corev1.Pod) {
		st := metav1.NewTime(epoch.Add(-time.Hour))
		p.Status.StartTime = &st
	})
	h.clock.Step(time.Minute)
	h.jobs.ClearActions()
	h.build.ClearActions()

	c := h.controller(Options{DryRun: true, MaxConcurrency: 2})
	require.NoError(t, c.RunOnce(t.Context()))

	assert.Equal(t, []string{
		"would abort old-pr: superseded by a newer run (new-pr)",
		"would error stuck: pod pending timeout",
		"would start first",
		"would start second",
		"would keep new-pr waiting: global limit of 2 running jobs reached",
		`would error nowhere: unknown build cluster "gpu"`,
	}, c.Reconciler().Plan())
	assert.Empty(t, writes(h.jobs.Actions()), "dry run writes no job")
	assert.Empty(t, writes(h.build.Actions()), "dry run writes no pod")
}

func TestRunOnceDrivesEveryJob(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	for _, n := range []string{"a", "b", "c"} {
		h.submit(n)
	}
	h.submit("done")
	h.pending("done", corev1.PodSucceeded)
	reg := metrics.NewRegistry()
	m, err := NewMetrics(reg)
	require.NoError(t, err)

	c := h.controller(Options{Metrics: m, Workers: 2})
	require.NoError(t, c.RunOnce(t.Context()))

	for _, n := range []string{"a", "b", "c"} {
		assert.Equal(t, job.Pending, h.get(n).Status.State, n)
		assert.NotNil(t, h.pod(n), n)
	}
	assert.Equal(t, job.Success, h.get("done").Status.State)
	assert.Equal(t, 3.0, m.transitions.WithLabelValues("triggered", "pending").Value())
	assert.Equal(t, 1.0, m.transitions.WithLabelValues("pending", "success").Value())
	assert.Equal(t, 1.0, m.clusters.WithLabelValues("default", "reachable").Value())
}

func TestRunFollowsEventsUntilCancelled(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	m, err := NewMetrics(metrics.NewRegistry())
	require.NoError(t, err)
	c := h.controller(Options{MaxConcurrency: 1, Metrics: m})
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	h.submit("a")
	h.submit("b")
	require.Eventually(t, func() bool { return h.get("a").Status.State == job.Pending }, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, job.Triggered, h.get("b").Status.State, "b waits for a")

	// NOTE: the job turns pending before its pod is created.
	require.Eventually(t, func() bool { return h.pod("a") != nil }, 10*time.Second, 10*time.Millisecond, "a's pod")
	pod := h.pod("a")
	pod.Status.Phase = corev1.PodSucceeded
	_, err = h.build.CoreV1().Pods(podNS).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return h.get("b").Status.State == job.Pending }, 10*time.Second, 10*time.Millisecond,
		"a's success frees its place and wakes b")
	assert.Equal(t, job.Success, h.get("a").Status.State)
	want := `
# HELP lockctl_jobs Jobs known to the reconciler, by state, job name and type.
# TYPE lockctl_jobs gauge
lockctl_jobs{job="deploy-web",state="pending",type="periodic"} 1
lockctl_jobs{job="deploy-web",state="success",type="periodic"} 1
`
	assert.Eventually(t, func() bool { return scrapeText(m.jobs) == strings.TrimPrefix(want, "\n") },
		10*time.Second, 10*time.Millisecond, "lockctl_jobs follows the cache")
	require.Eventually(t, func() bool {
		_, kept := c.decoded.Load("a")
		return !kept
	}, 10*time.Second, 10*time.Millisecond, "no decoded copy of a complete job is kept")
	var passed []string
	for _, j := range c.allJobs() {
		passed = append(passed, j.Name)
	}
	assert.Equal(t, []string{"b"}, passed, "the passes over every job leave complete ones out")

	cancel()
	select {
	case err := <-done:
		assert.NoError(t, err)
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return after cancel")
	}
}

func TestRunOnceOnlyJob(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	h.submit("a")
	h.submit("b")
	c := h.controller(Options{OnlyJob: "b"})
	require.NoError(t, c.RunOnce(t.Context()))
	assert.Equal(t, job.Triggered, h.get("a").Status.State)
	assert.Equal(t, job.Pending, h.get("b").Status.State)
}

func TestCheckClusters(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	st, err := h.r.CheckClusters(t.Context())
	require.NoError(t, err)
	assert.Equal(t, ClusterReachable, st["default"].State)

	h.build.PrependReactor("list", "pods", apiError(403, metav1.StatusReasonForbidden))
	h.clock.Step(time.Minute)
	st, err = h.r.CheckClusters(t.Context())
	require.NoError(t, err)
	assert.Equal(t, ClusterForbidden, st["default"].State)
	assert.Equal(t, "forbidden from the test", st["default"].Message)

	recorded, err := ReadClusterStatus(t.Context(), h.jobs.CoreV1().ConfigMaps(jobNS))
	require.NoError(t, err)
	assert.Equal(t, ClusterForbidden, recorded["default"].State)
	assert.WithinDuration(t, h.clock.Now(), recorded["default"].Since.Time, time.Second)
}

func TestTrimPod(t *testing.T) {
	t.Parallel()
	started := metav1.Now()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "p", UID: "u", Labels: map[string]string{"a": "b"}, Annotations: map[string]string{"c": "d"},
			Finalizers: []string{job.Finalizer}, ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubelet"}},
		},
		Spec: corev1.PodSpec{
			Containers:      []corev1.Container{{Name: "main", Image: "alpine", Command: []string{"sh"}}},
			SchedulingGates: []corev1.PodSchedulingGate{{Name: job.LockGate}},
			NodeName:        "n", RestartPolicy: corev1.RestartPolicyNever,
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, Reason: "r", StartTime: &started,
			Conditions: []corev1.PodCondition{
				{Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "NodeNotReady", Message: "long words"},
				{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager", Message: "more words"},
			},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "main"}},
		},
	}
	got, err := trimPod(pod)
	require.NoError(t, err)
	p := got.(*corev1.Pod)
	assert.Nil(t, p.ManagedFields)
	assert.Nil(t, p.Spec.Containers, "container specs are not cached")
	assert.Equal(t, []corev1.PodCondition{
		{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "NodeNotReady"},
		{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: "DeletionByTaintManager"},
	}, p.Status.Conditions, "only the conditions liveness reads, without messages")
	assert.Equal(t, []corev1.PodSchedulingGate{{Name: job.LockGate}}, p.Spec.SchedulingGates)
	assert.Equal(t, "n", p.Spec.NodeName)
	assert.Equal(t, map[string]string{"a": "b"}, p.Labels)
	assert.Equal(t, []string{job.Finalizer}, p.Finalizers)
	assert.Equal(t, corev1.PodRunning, p.Status.Phase)
	assert.Len(t, p.Status.ContainerStatuses, 1)
	assert.Equal(t, "r", p.Status.Reason)
	assert.Equal(t, &started, p.Status.StartTime)

	done := pod.DeepCopy()
	done.Status.ContainerStatuses = []corev1.ContainerStatus{{
		Name: "main", Image: "alpine", ImageID: "sha", ContainerID: "cri://1",
		State:                corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled", Message: "long", StartedAt: started}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
	}}
	got, err = trimPod(done)
	require.NoError(t, err)
	assert.Equal(t, []corev1.ContainerStatus{{
		Name:                 "main",
		State:                corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 137, Reason: "OOMKilled"}},
		LastTerminationState: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{ExitCode: 1, Reason: "Error"}},
	}}, got.(*corev1.Pod).Status.ContainerStatuses, "what the judge reads of a container, without IDs, images, messages or times")

	tomb := cache.DeletedFinalStateUnknown{Key: "ns/p", Obj: pod}
	same, err := trimPod(tomb)
	require.NoError(t, err)
	assert.Equal(t, tomb, same, "anything else passes through")
}

func TestTrimJobRecord(t *testing.T) {
	t.Parallel()
	record := func(state job.State) *corev1.ConfigMap {
		j := &job.Job{
			ObjectMeta: metav1.ObjectMeta{Name: "j", Namespace: "ci", ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "lockctl"}}},
			Spec: job.JobSpec{Job: "deploy", Type: job.Periodic, Cluster: "gpu",
				PodSpec: &corev1.PodSpec{Containers: []corev1.Container{{Name: "main", Image: "alpine"}}}},
			Status: job.JobStatus{State: state},
		}
		cm, err := job.ToConfigMap(j)
		require.NoError(t, err)
		return cm
	}
	tests := []struct {
		name        string
		state       job.State
		wantPodSpec bool
	}{
		{name: "triggered keeps its pod template", state: job.Triggered, wantPodSpec: true},
		{name: "pending keeps its pod template", state: job.Pending, wantPodSpec: true},
		{name: "complete drops it", state: job.Success, wantPodSpec: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := trimJobRecord(record(tt.state))
			require.NoError(t, err)
			cm := got.(*corev1.ConfigMap)
			assert.Nil(t, cm.ManagedFields, "managedFields dropped")
			j, err := job.FromConfigMap(cm)
			require.NoError(t, err, "still a job record")
			assert.Equal(t, tt.wantPodSpec, j.Spec.PodSpec != nil, "pod template kept")
			assert.Equal(t, "gpu", j.Spec.Cluster, "the rest of the spec kept")
			assert.Equal(t, tt.state, j.Status.State)
		})
	}

	t.Run("anything else passes through", func(t *testing.T) {
		t.Parallel()
		bad := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "x", Labels: map[string]string{
			job.LabelManagedBy: job.ManagedByValue, job.LabelKind: job.KindJob, job.LabelComplete: "true"}},
			Data: map[string]string{job.DataSpec: "{not json"}}
		got, err := trimJobRecord(bad)
		require.NoError(t, err)
		assert.Equal(t, "{not json", got.(*corev1.ConfigMap).Data[job.DataSpec])
	})
}

// TestNoDecodedCopyOfCompleteJobsWithoutLimits: with no limit in use the
// admission passes are skipped (admissionIdle), so no walk over every job
// forgets the decoded copy of a job that completed; the job records'
// informer does.
func TestNoDecodedCopyOfCompleteJobsWithoutLimits(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	m, err := NewMetrics(metrics.NewRegistry())
	require.NoError(t, err)
	c := h.controller(Options{Metrics: m})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	h.submit("a")
	require.Eventually(t, func() bool { return h.pod("a") != nil }, 10*time.Second, 10*time.Millisecond, "a's pod")
	require.Eventually(t, func() bool {
		m.jobs.Collect(func(metrics.Family) {}) // a scrape decodes every job not complete
		_, kept := c.decoded.Load("a")
		return kept
	}, 10*time.Second, 10*time.Millisecond, "a scrape keeps a decoded copy of a running job")
	pod := h.pod("a")
	pod.Status.Phase = corev1.PodSucceeded
	_, err = h.build.CoreV1().Pods(podNS).UpdateStatus(t.Context(), pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return h.get("a").Status.State == job.Success }, 10*time.Second, 10*time.Millisecond)
	require.Eventually(t, func() bool {
		_, kept := c.decoded.Load("a")
		return !kept
	}, 10*time.Second, 10*time.Millisecond, "no decoded copy of a complete job is kept")
	cancel()
	require.NoError(t, <-done)
}

// TestPodGoneBeforeConfirmed: a pod without lockctl's finalizer that is
// deleted and gone before the reconciler reads it again (kwok, or a kubelet,
// removes it at once) still ends its job in error: the confirming read finds
// nothing, and the pod as the cache last saw it, deleted, is judged.
func TestPodGoneBeforeConfirmed(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	c := h.controller(Options{})
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- c.Run(ctx) }()

	h.submit("victim")
	require.Eventually(t, func() bool {
		p, err := c.r.read.pod(t.Context(), c.r.clusters[job.DefaultCluster], "victim", false)
		return err == nil && p != nil
	}, 10*time.Second, 10*time.Millisecond, "victim's pod, in the pod cache")
	// NOTE: deleted only once the pod cache has it: the fake clientset's
	// watch may start after its list, and an informer drops the deletion of
	// a pod it never saw (a real API server's watch starts at the list).
	require.NoError(t, h.build.CoreV1().Pods(podNS).Delete(t.Context(), "victim", metav1.DeleteOptions{}))
	require.Eventually(t, func() bool { return h.get("victim").Status.State == job.Error }, 10*time.Second, 10*time.Millisecond,
		"the job ends in error; it is %+v", h.get("victim").Status)
	assert.Equal(t, "pod deleted unexpectedly", h.get("victim").Status.Description)
	assert.Nil(t, h.pod("victim"), "and no pod is created again")
	cancel()
	require.NoError(t, <-done)
}

// scrapeText is what a scrape of a registry holding only c shows.
func scrapeText(c metrics.Collector) string {
	reg := metrics.NewRegistry()
	reg.MustRegister(c)
	var b strings.Builder
	_ = reg.WriteText(&b)
	return b.String()
}

// TestRememberCreatedAfterTheCacheSawIt: a create that returns after the pod
// cache saw the pod, and even its deletion, neither leaves the pod
// remembered as just created nor forgets its deletion.
func TestRememberCreatedAfterTheCacheSawIt(t *testing.T) {
	t.Parallel()
	h := newHarness(t, Options{})
	c := h.controller(Options{})
	r, cl := c.r, c.r.clusters[job.DefaultCluster]
	pod := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "p", UID: "new", Labels: map[string]string{job.LabelRecordNamespace: jobNS}}}
	old := pod.DeepCopy()
	old.UID = "old"

	r.rememberGone(cl.alias, old)
	r.rememberCreated(t.Context(), cl, pod)
	_, remembered := r.created.Load(cl.alias + "/p")
	assert.True(t, remembered, "a pod the cache has not seen is remembered as created")
	_, gone := r.gone.Load(cl.alias + "/p")
	assert.False(t, gone, "and the older pod of its name is forgotten")

	r.created.Delete(cl.alias + "/p")
	r.rememberGone(cl.alias, pod)
	r.rememberCreated(t.Context(), cl, pod)
	_, remembered = r.created.Load(cl.alias + "/p")
	assert.False(t, remembered, "a pod the cache saw go is not remembered as created")
	_, gone = r.gone.Load(cl.alias + "/p")
	assert.True(t, gone, "and its deletion is kept")
}

// TestStaticErrorsSpellDurations: the messages written out by hand say the
// durations they are about.
func TestStaticErrorsSpellDurations(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "reconcile step took longer than "+stepTimeout.String(), errStepTimeout.Error())
	assert.Equal(t, "stopped: the steps in flight had "+shutdownGrace.String()+" to finish", errShuttingDown.Error())
}
