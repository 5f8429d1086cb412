package scheduler

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"

	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/liveness"
)

// poolLabel steers a test's pods onto the test's own nodes.
const poolLabel = "lockctl.dev/test-pool"

// addNode registers a node of the test's pool. A kwok node gets kwok's
// annotation, and kwok plays its kubelet; any other node has nothing behind
// it, and the test writes its status.
func (it *itest) addNode(name string, kwok bool) {
	it.t.Helper()
	capacity := corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("100"), corev1.ResourceMemory: resource.MustParse("100Gi"), corev1.ResourcePods: resource.MustParse("100")}
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{Name: name, Labels: map[string]string{poolLabel: it.ns, "kubernetes.io/hostname": name}},
		// NOTE: tainted, so that the pods of other tests stay off it.
		Spec:   corev1.NodeSpec{Taints: []corev1.Taint{{Key: poolLabel, Value: it.ns, Effect: corev1.TaintEffectNoSchedule}}},
		Status: corev1.NodeStatus{Capacity: capacity, Allocatable: capacity},
	}
	if kwok {
		node.Annotations = map[string]string{"kwok.x-k8s.io/node": "fake"}
	}
	nodes := it.env.Client.CoreV1().Nodes()
	created, err := nodes.Create(it.t.Context(), node, metav1.CreateOptions{})
	require.NoError(it.t, err, "create node %s", name)
	it.t.Cleanup(func() { _ = nodes.Delete(context.WithoutCancel(it.t.Context()), name, metav1.DeleteOptions{}) })
	if kwok {
		return
	}
	created.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: corev1.ConditionTrue, Reason: "KubeletReady",
		LastHeartbeatTime: metav1.Now(), LastTransitionTime: metav1.Now(),
	}}
	_, err = nodes.UpdateStatus(it.t.Context(), created, metav1.UpdateOptions{})
	require.NoError(it.t, err, "node %s ready", name)
}

// setNodeReady writes the Ready condition of a node with nothing behind
// it, as the node lifecycle controller does when heartbeats stop.
func (it *itest) setNodeReady(name string, status corev1.ConditionStatus, since time.Time) {
	it.t.Helper()
	nodes := it.env.Client.CoreV1().Nodes()
	n, err := nodes.Get(it.t.Context(), name, metav1.GetOptions{})
	require.NoError(it.t, err)
	n.Status.Conditions = []corev1.NodeCondition{{
		Type: corev1.NodeReady, Status: status, Reason: "NodeStatusUnknown", Message: "Kubelet stopped posting node status.",
		LastHeartbeatTime: metav1.NewTime(since), LastTransitionTime: metav1.NewTime(since),
	}}
	_, err = nodes.UpdateStatus(it.t.Context(), n, metav1.UpdateOptions{})
	require.NoError(it.t, err)
}

// updatePodStatus changes a pod's status as a kubelet or a controller
// would.
func (it *itest) updatePodStatus(name string, change func(*corev1.Pod)) *corev1.Pod {
	it.t.Helper()
	pods := it.env.Client.CoreV1().Pods(it.ns)
	p, err := pods.Get(it.t.Context(), name, metav1.GetOptions{})
	require.NoError(it.t, err)
	change(p)
	out, err := pods.UpdateStatus(it.t.Context(), p, metav1.UpdateOptions{})
	require.NoError(it.t, err)
	return out
}

// withoutNodes returns a client of a user that may do in the test's
// namespace what the reconciler needs, and may not read nodes.
func (it *itest) withoutNodes() kube.Interface {
	it.t.Helper()
	user := "reconciler-" + it.ns
	it.env.Grant(it.t, it.ns, "reconciler", rbacv1.Subject{Kind: rbacv1.UserKind, APIGroup: rbacv1.GroupName, Name: user}, []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "delete"}},
		{APIGroups: []string{""}, Resources: []string{"pods"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	})
	cfg := rest.CopyConfig(it.env.RESTConfig)
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	cs, err := kube.NewForConfig(cfg)
	require.NoError(it.t, err)
	return cs
}

// A node dies as current Kubernetes reports it: the Node goes Unknown, the
// node controller marks its pods Ready=False, and once the not-ready
// toleration (300 s) has run out, taint eviction marks the pod
// DisruptionTarget/DeletionByTaintManager and deletes it gracefully, and with
// no kubelet it stays Terminating. Within the grace the job waits; then the
// pod is lost: force-removed and created again on a live node, one revival,
// and the job goes on to succeed. Once with the nodes readable, once by the
// pods' own conditions.
func TestIntegrationDeadNode(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name  string
		nodes bool
	}{
		{name: "nodes readable", nodes: true},
		{name: "pod conditions only", nodes: false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			it := newITest(t)
			dead := "dead-" + it.ns[len(it.ns)-5:]
			it.addNode(dead, false)
			cs := it.env.Kube
			if !tc.nodes {
				cs = it.withoutNodes()
			}
			c, err := NewController(cs, it.ns, map[string]Clientset{job.DefaultCluster: cs}, Options{Log: testLog(t)})
			require.NoError(t, err)
			ctx, cancel := context.WithCancel(context.WithoutCancel(t.Context()))
			done := make(chan error, 1)
			go func() { done <- c.Run(ctx) }()
			t.Cleanup(func() { cancel(); assert.NoError(t, <-done) })

			it.submit("victim", func(j *job.Job) {
				j.Spec.PodSpec.NodeSelector = map[string]string{poolLabel: it.ns}
				j.Spec.PodSpec.Tolerations = append(j.Spec.PodSpec.Tolerations, corev1.Toleration{Key: poolLabel, Value: it.ns, Effect: corev1.TaintEffectNoSchedule})
			})
			var first *corev1.Pod
			require.Eventually(t, func() bool {
				first = it.pod("victim")
				return first != nil && first.Spec.NodeName == dead
			}, waitFor, 50*time.Millisecond, "the pod is scheduled onto the node that will die")
			// The kubelet starts it.
			started := metav1.Now()
			first = it.updatePodStatus("victim", func(p *corev1.Pod) {
				p.Status.Phase, p.Status.StartTime = corev1.PodRunning, &started
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: started}}
				p.Status.ContainerStatuses = []corev1.ContainerStatus{{
					Name: "main", Ready: true, Image: "busybox", ImageID: "busybox",
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: started}},
				}}
			})

			// The node dies: within the grace the job waits, untouched.
			died := time.Now()
			it.setNodeReady(dead, corev1.ConditionUnknown, died)
			it.updatePodStatus("victim", func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "NodeNotReady", LastTransitionTime: metav1.NewTime(died)}}
			})
			time.Sleep(3 * time.Second)
			j, err := it.store.Get(t.Context(), "victim")
			require.NoError(t, err)
			assert.Equal(t, job.Pending, j.Status.State, "within the node's grace the job waits: %s", j.Status.Description)
			p := it.pod("victim")
			require.NotNil(t, p, "and its pod is left alone")
			assert.Nil(t, p.DeletionTimestamp)

			// 300 s later (the clock moved back instead): taint eviction. A
			// live node takes the pool's pods from now on.
			it.addNode("live-"+it.ns[len(it.ns)-5:], true)
			cordon := `{"spec":{"unschedulable":true}}`
			_, err = it.env.Client.CoreV1().Nodes().Patch(t.Context(), dead, types.MergePatchType, []byte(cordon), metav1.PatchOptions{})
			require.NoError(t, err)
			longAgo := time.Now().Add(-liveness.DefaultNodeGrace - time.Second)
			it.setNodeReady(dead, corev1.ConditionUnknown, longAgo)
			it.updatePodStatus("victim", func(p *corev1.Pod) {
				p.Status.Conditions = []corev1.PodCondition{
					{Type: corev1.PodReady, Status: corev1.ConditionFalse, Reason: "NodeNotReady", LastTransitionTime: metav1.NewTime(longAgo)},
					{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: liveness.DisruptionTaintManager, LastTransitionTime: metav1.Now(),
						Message: "Taint manager: deleting due to NoExecute taint"},
				}
			})
			evicted := time.Now()
			require.NoError(t, it.env.Client.CoreV1().Pods(it.ns).Delete(t.Context(), "victim", metav1.DeleteOptions{}))

			var second *corev1.Pod
			require.Eventually(t, func() bool {
				second = it.pod("victim")
				return second != nil && second.UID != first.UID
			}, waitFor, 20*time.Millisecond, "the lost pod is replaced")
			t.Logf("new pod %s after the taint eviction", time.Since(evicted).Round(time.Millisecond))
			require.Eventually(t, func() bool {
				p := it.pod("victim")
				return p != nil && p.Status.Phase == corev1.PodRunning
			}, waitFor, 50*time.Millisecond, "and runs on the live node")
			_, err = it.env.Client.CoreV1().Pods(it.ns).Patch(t.Context(), "victim", types.MergePatchType,
				[]byte(`{"metadata":{"annotations":{"`+testenv.AnnotationExitCode+`":"0"}}}`), metav1.PatchOptions{})
			require.NoError(t, err)
			j = it.waitState("victim", job.Success)
			assert.Equal(t, 1, j.Status.Revivals, "one lost pod, one revival")
			assert.Equal(t, first.UID, j.Status.LostPodUID)
		})
	}
}

// Eviction through the eviction API (DisruptionTarget EvictionByEvictionAPI)
// follows errorOnEviction: an error, or a revival.
func TestIntegrationEvictionAPI(t *testing.T) {
	t.Parallel()
	it := newITest(t)
	it.run(Options{}, nil)
	it.submit("revive")
	it.submit("fatal", func(j *job.Job) { j.Spec.ErrorOnEviction = true })
	first := map[string]types.UID{}
	for _, name := range []string{"revive", "fatal"} {
		require.Eventually(t, func() bool {
			p := it.pod(name)
			if p == nil || p.Status.Phase != corev1.PodRunning {
				return false
			}
			first[name] = p.UID
			return true
		}, waitFor, 20*time.Millisecond)
		err := it.env.Client.CoreV1().Pods(it.ns).EvictV1(t.Context(), &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: it.ns}})
		require.NoError(t, err, "evict %s", name)
	}
	j := it.waitState("fatal", job.Error)
	assert.Equal(t, "pod was evicted", j.Status.Description)
	require.Eventually(t, func() bool {
		p := it.pod("revive")
		return p != nil && p.UID != first["revive"] && p.Status.Phase == corev1.PodRunning
	}, waitFor, 20*time.Millisecond, "the evicted pod is replaced")
	j, err := it.store.Get(t.Context(), "revive")
	require.NoError(t, err)
	assert.Equal(t, job.Pending, j.Status.State)
	assert.Equal(t, 1, j.Status.Revivals)
}
