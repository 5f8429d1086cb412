package liveness

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

func TestJudge(t *testing.T) {
	t.Parallel()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	ago := func(d time.Duration) metav1.Time { return metav1.NewTime(now.Add(-d)) }
	agoPtr := func(d time.Duration) *metav1.Time { m := ago(d); return &m }
	running := func(mut ...func(*corev1.Pod)) *corev1.Pod {
		p := &corev1.Pod{
			ObjectMeta: metav1.ObjectMeta{Name: "p", CreationTimestamp: ago(time.Hour)},
			Spec:       corev1.PodSpec{NodeName: "n1"},
			Status: corev1.PodStatus{
				Phase:      corev1.PodRunning,
				Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue, LastTransitionTime: ago(time.Hour)}},
				ContainerStatuses: []corev1.ContainerStatus{{
					Name: "main", Ready: true,
					State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}},
				}},
			},
		}
		for _, m := range mut {
			m(p)
		}
		return p
	}
	notReadyPod := func(d time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Conditions[0].Status = corev1.ConditionFalse
			p.Status.Conditions[0].LastTransitionTime = ago(d)
		}
	}
	disrupted := func(reason string) func(*corev1.Pod) {
		return func(p *corev1.Pod) {
			p.Status.Conditions = append(p.Status.Conditions, corev1.PodCondition{
				Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: ago(time.Minute),
			})
		}
	}
	deleting := func(d time.Duration) func(*corev1.Pod) {
		return func(p *corev1.Pod) { p.DeletionTimestamp = agoPtr(d) }
	}
	node := func(status corev1.ConditionStatus, since time.Duration) *corev1.Node {
		return &corev1.Node{
			ObjectMeta: metav1.ObjectMeta{Name: "n1"},
			Status: corev1.NodeStatus{Conditions: []corev1.NodeCondition{{
				Type: corev1.NodeReady, Status: status, LastTransitionTime: ago(since),
			}}},
		}
	}

	tests := []struct {
		name    string
		pod     *corev1.Pod
		node    *corev1.Node
		alive   bool
		lost    bool
		evicted bool
		// disrupted: taken away by Kubernetes, not evicted.
		disrupted bool
		reason    string
		recheck   time.Duration // from now; 0 means none
	}{
		{name: "healthy running pod", pod: running(), alive: true},
		{name: "healthy pod on a ready node", pod: running(), node: node(corev1.ConditionTrue, time.Hour), alive: true},
		{name: "gone", pod: nil, lost: true, reason: ReasonNodeLost},
		{name: "succeeded", pod: running(func(p *corev1.Pod) { p.Status.Phase = corev1.PodSucceeded }), reason: ReasonFinished},
		{name: "kubelet eviction", pod: running(func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed; p.Status.Reason = "Evicted" }), evicted: true, reason: ReasonEvicted},
		{name: "node unknown within grace", pod: running(), node: node(corev1.ConditionUnknown, time.Minute), alive: true, recheck: 4 * time.Minute},
		{name: "node unknown past grace", pod: running(), node: node(corev1.ConditionUnknown, 6*time.Minute), lost: true, reason: ReasonNodeLost},
		{name: "node not ready past grace", pod: running(), node: node(corev1.ConditionFalse, 6*time.Minute), lost: true, reason: ReasonNodeLost},
		{name: "pod marked not ready by the node controller, no node access, past grace", pod: running(notReadyPod(6 * time.Minute)), lost: true, reason: ReasonNodeLost},
		{name: "pod marked not ready by the node controller, within grace", pod: running(notReadyPod(time.Minute)), alive: true, recheck: 4 * time.Minute},
		{name: "pod not ready because its container is not: not a node signal", pod: running(notReadyPod(time.Hour), func(p *corev1.Pod) { p.Status.ContainerStatuses[0].Ready = false }), alive: true},
		{name: "node signal wins over the pod's own condition", pod: running(notReadyPod(time.Hour)), node: node(corev1.ConditionTrue, time.Hour), alive: true},
		{name: "taint eviction still in its grace period", pod: running(disrupted(DisruptionTaintManager), func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now.Add(20 * time.Second)} }), alive: true, disrupted: true, reason: DisruptionTaintManager, recheck: 50 * time.Second},
		{name: "taint eviction left terminating", pod: running(disrupted(DisruptionTaintManager), deleting(time.Minute)), lost: true, disrupted: true, reason: DisruptionTaintManager},
		{name: "eviction API, terminating", pod: running(disrupted(DisruptionEvictionAPI), func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now.Add(10 * time.Second)} }), alive: true, evicted: true, reason: ReasonEvicted, recheck: 40 * time.Second},
		{name: "eviction API, never confirmed", pod: running(disrupted(DisruptionEvictionAPI), deleting(time.Minute)), lost: true, evicted: true, reason: ReasonEvicted},
		{name: "plain delete past grace", pod: running(deleting(time.Minute)), lost: true, reason: ReasonTerminatingTooLong},
		{name: "phase Unknown, older clusters", pod: running(func(p *corev1.Pod) { p.Status.Phase = corev1.PodUnknown }, notReadyPod(10*time.Minute)), lost: true, reason: ReasonNodeLost},
		{name: "reason NodeLost within grace", pod: running(func(p *corev1.Pod) { p.Status.Reason = "NodeLost" }, func(p *corev1.Pod) { p.Status.Conditions[0].LastTransitionTime = ago(time.Minute) }), alive: true, recheck: 4 * time.Minute},
		{name: "reason NodeLost, deleted by an older node controller", pod: running(func(p *corev1.Pod) { p.Status.Reason = "NodeLost" }, notReadyPod(time.Minute), func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now.Add(10 * time.Second)} }), alive: true, disrupted: true, recheck: 40 * time.Second},
		{name: "preempted, terminating with a live kubelet", pod: running(disrupted(DisruptionPreemption), func(p *corev1.Pod) { p.DeletionTimestamp = &metav1.Time{Time: now.Add(20 * time.Second)} }), alive: true, disrupted: true, reason: DisruptionPreemption, recheck: 50 * time.Second},
		{name: "preempted and stopped: finished, but disrupted", pod: running(disrupted(DisruptionPreemption), func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), disrupted: true, reason: DisruptionPreemption},
		{name: "evicted by the API and stopped", pod: running(disrupted(DisruptionEvictionAPI), func(p *corev1.Pod) { p.Status.Phase = corev1.PodFailed }), evicted: true, reason: ReasonEvicted},
		{name: "a DisruptionTarget condition that is False counts for nothing", pod: running(disrupted(DisruptionTaintManager), func(p *corev1.Pod) { p.Status.Conditions[1].Status = corev1.ConditionFalse }), alive: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := Judge(tt.pod, tt.node, now, Options{})
			assert.Equal(t, tt.disrupted, v.Disrupted, "disrupted for %s: %+v", tt.name, v)
			assert.Equal(t, tt.alive, v.Alive, "alive for %s: %+v", tt.name, v)
			assert.Equal(t, tt.lost, v.Lost, "lost for %s: %+v", tt.name, v)
			assert.Equal(t, tt.evicted, v.Evicted, "evicted for %s: %+v", tt.name, v)
			assert.Equal(t, tt.reason, v.Reason, "reason for %s", tt.name)
			if tt.recheck == 0 {
				assert.True(t, v.Recheck.IsZero(), "no recheck for %s, got %v", tt.name, v.Recheck)
			} else {
				assert.Equal(t, now.Add(tt.recheck), v.Recheck, "recheck for %s", tt.name)
			}
			if v.Lost || !v.Alive {
				assert.NotEmpty(t, v.Message, "a message for %s", tt.name)
			}
		})
	}
}
