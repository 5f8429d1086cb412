package lock_test

import (
	"context"
	"testing"
	"time"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/liveness"
	"github.com/lockctl/lockctl/lock"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/lockctl/lockctl/lock/record"
)

// deadNodeGrace is the node grace of these tests, short so they run fast.
const deadNodeGrace = 3 * time.Second

// podOnUnmanagedNode creates a Node no kwok plays the kubelet of, and a
// pod bound to it that looks Running and ready, as a kubelet left it.
func podOnUnmanagedNode(t *testing.T, c kubernetes.Interface, ns, name string) (*corev1.Node, *corev1.Pod) {
	t.Helper()
	ctx := t.Context()
	node, err := c.CoreV1().Nodes().Create(ctx, &corev1.Node{ObjectMeta: metav1.ObjectMeta{Name: "dead-" + ns + "-" + name}}, metav1.CreateOptions{})
	require.NoError(t, err)
	t.Cleanup(func() { _ = c.CoreV1().Nodes().Delete(context.Background(), node.Name, metav1.DeleteOptions{}) })
	now := metav1.Now()
	node.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionTrue, LastHeartbeatTime: now, LastTransitionTime: now, Reason: "KubeletReady"}}
	node, err = c.CoreV1().Nodes().UpdateStatus(ctx, node, metav1.UpdateOptions{})
	require.NoError(t, err)

	pod, err := c.CoreV1().Pods(ns).Create(ctx, &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec:       corev1.PodSpec{NodeName: node.Name, Containers: []corev1.Container{{Name: "main", Image: "busybox"}}},
	}, metav1.CreateOptions{})
	require.NoError(t, err)
	pod.Status = corev1.PodStatus{
		Phase:     corev1.PodRunning,
		StartTime: &now,
		Conditions: []corev1.PodCondition{
			{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: corev1.ContainersReady, Status: corev1.ConditionTrue, LastTransitionTime: now},
		},
		ContainerStatuses: []corev1.ContainerStatus{{
			Name: "main", Image: "busybox", Ready: true,
			State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: now}},
		}},
	}
	pod, err = c.CoreV1().Pods(ns).UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	return node, pod
}

// nodeDies does what the node lifecycle controller does when a node stops
// reporting: the node's Ready condition turns Unknown, the pod's Ready
// condition False (its containers still say ready). It returns the time of
// the transition as the API server stored it.
func nodeDies(t *testing.T, c kubernetes.Interface, node *corev1.Node, pod *corev1.Pod) time.Time {
	t.Helper()
	ctx := t.Context()
	now := metav1.Now()
	n, err := c.CoreV1().Nodes().Get(ctx, node.Name, metav1.GetOptions{})
	require.NoError(t, err)
	n.Status.Conditions = []corev1.NodeCondition{{Type: corev1.NodeReady, Status: corev1.ConditionUnknown, LastHeartbeatTime: n.Status.Conditions[0].LastHeartbeatTime, LastTransitionTime: now, Reason: "NodeStatusUnknown"}}
	_, err = c.CoreV1().Nodes().UpdateStatus(ctx, n, metav1.UpdateOptions{})
	require.NoError(t, err)
	p, err := c.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	require.NoError(t, err)
	for i := range p.Status.Conditions {
		if p.Status.Conditions[i].Type == corev1.PodReady {
			p.Status.Conditions[i].Status, p.Status.Conditions[i].LastTransitionTime = corev1.ConditionFalse, now
		}
	}
	_, err = c.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	return now.Time
}

// taintEvict does what the taint eviction controller does once the pod's
// toleration of the unreachable taint ran out: the DisruptionTarget
// condition, then a graceful delete that no kubelet confirms.
func taintEvict(t *testing.T, c kubernetes.Interface, pod *corev1.Pod, grace int64) time.Time {
	t.Helper()
	ctx := t.Context()
	p, err := c.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	require.NoError(t, err)
	p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
		Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: liveness.DisruptionTaintManager,
		Message: "Taint manager: deleting due to NoExecute taint", LastTransitionTime: metav1.Now(),
	})
	_, err = c.CoreV1().Pods(pod.Namespace).UpdateStatus(ctx, p, metav1.UpdateOptions{})
	require.NoError(t, err)
	start := time.Now()
	require.NoError(t, c.CoreV1().Pods(pod.Namespace).Delete(ctx, pod.Name, metav1.DeleteOptions{GracePeriodSeconds: &grace}))
	p, err = c.CoreV1().Pods(pod.Namespace).Get(ctx, pod.Name, metav1.GetOptions{})
	require.NoError(t, err, "no kubelet confirms the deletion: the pod stays Terminating")
	require.NotNil(t, p.DeletionTimestamp)
	return start
}

// TestIntegrationHolderOnDeadNode: a holder pod on a node that stops
// reporting frees the lock when the node grace ends, judged by the node
// when it may be read and by the pod's conditions when not; a pod evicted
// by the taint manager and left Terminating frees it past its grace period.
func TestIntegrationHolderOnDeadNode(t *testing.T) {
	t.Parallel()
	env := testenv.Get(t)
	ns := env.Namespace(t)
	tests := []struct {
		name      string
		readNodes bool
		evict     bool
		// takeover is when the waiter must hold the lock, after the fault.
		min, max time.Duration
	}{
		{name: "node unknown, node readable", readNodes: true, min: deadNodeGrace - time.Second, max: deadNodeGrace + 10*time.Second},
		{name: "node unknown, pod conditions only", min: deadNodeGrace - time.Second, max: deadNodeGrace + 10*time.Second},
		{name: "taint-evicted and left terminating", evict: true, min: 2*time.Second + liveness.DefaultTerminatingMargin - time.Second, max: 2*time.Second + liveness.DefaultTerminatingMargin + 10*time.Second},
	}
	for i, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			target := []string{"dead-node", "dead-node-pod-only", "evicted"}[i]
			node, pod := podOnUnmanagedNode(t, env.Client, ns, "holder-"+target)
			o := lock.Options{LostPodGrace: deadNodeGrace}
			if tt.readNodes {
				o.Nodes = env.Kube.CoreV1()
			}
			if tt.evict {
				o.LostPodGrace = time.Hour // only the eviction counts here
			}
			l := newClientWith(t, env.Kube, ns, o)
			mustAcquire(t, l, lock.Request{Target: target, Identity: clitest.Identity("web", 1), Pod: &record.PodRef{Namespace: ns, Name: pod.Name}})
			done, queued := acquireAsync(t.Context(), l, lock.Request{Target: target, Identity: clitest.Identity("api", 1)})
			awaitQueued(t, queued, "waiter")

			var fault time.Time
			if tt.evict {
				fault = taintEvict(t, env.Client, pod, 2)
			} else {
				fault = nodeDies(t, env.Client, node, pod)
			}
			select {
			case r := <-done:
				require.NoError(t, r.err)
				took := time.Since(fault)
				t.Logf("%s: lock taken over %s after the fault", tt.name, took.Round(10*time.Millisecond))
				assert.GreaterOrEqual(t, took, tt.min, "not before the grace ends")
				assert.LessOrEqual(t, took, tt.max, "when the grace ends, not at a later renewal")
			case <-time.After(tt.max + waitTimeout):
				t.Fatalf("the waiter still waits %s after the fault", tt.max+waitTimeout)
			}
		})
	}
}
