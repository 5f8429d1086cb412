package podwatch

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
)

// TestPrintLogs: every container's logs, init containers first, prefixed
// when there are several; one container's alone; a container the pod
// lacks is a *NoContainerError.
func TestPrintLogs(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-1", Namespace: "ci"},
		Spec:       corev1.PodSpec{InitContainers: []corev1.Container{{Name: "init"}}, Containers: []corev1.Container{{Name: "main"}}},
	}
	cs := fake.NewClientset(pod)
	tests := []struct {
		name, only, want, wantErr string
	}{
		{name: "all containers", want: "[init] fake logs\n[main] fake logs\n"},
		{name: "one container", only: "main", want: "fake logs\n"},
		{name: "no such container", only: "nope", wantErr: `pod "deploy-1" has no container "nope"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			err := PrintLogs(t.Context(), &buf, kubetest.CoreV1(cs.CoreV1()), pod, tt.only)
			if tt.wantErr != "" {
				var nc *NoContainerError
				require.ErrorAs(t, err, &nc)
				assert.EqualError(t, err, tt.wantErr)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.want, buf.String(), "logs of %q", tt.only)
		})
	}
}
