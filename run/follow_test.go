package run

import (
	"testing"

	"github.com/stretchr/testify/assert"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/liveness"
)

func TestIsReplacement(t *testing.T) {
	t.Parallel()
	deleting := metav1.NewTime(testNow)
	tests := []struct {
		name string
		pod  corev1.Pod
		want bool
	}{
		{name: "new pod, pending", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodPending}}, want: true},
		{name: "running", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodRunning}}, want: true},
		{name: "finished on its own already", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodSucceeded}}, want: true},
		{name: "evicted by the kubelet", pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Reason: liveness.ReasonEvicted}}},
		{name: "being deleted", pod: corev1.Pod{ObjectMeta: metav1.ObjectMeta{DeletionTimestamp: &deleting}, Status: corev1.PodStatus{Phase: corev1.PodRunning}}},
		{
			name: "taken away by taint eviction",
			pod: corev1.Pod{Status: corev1.PodStatus{Phase: corev1.PodFailed, Conditions: []corev1.PodCondition{
				{Type: corev1.DisruptionTarget, Status: corev1.ConditionTrue, Reason: liveness.DisruptionTaintManager},
			}}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, isReplacement(&tt.pod, testNow), "pod %s", tt.name)
		})
	}
}
