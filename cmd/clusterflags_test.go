package cmd

import (
	"testing"

	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/job"
)

// createJobPod creates the pod of a stored job in the fake cluster.
func createJobPod(t *testing.T, te *testEnv, name string, mod func(*corev1.Pod)) {
	t.Helper()
	j, err := job.NewStore(te.cs.CoreV1(), "default").Get(t.Context(), name)
	require.NoError(t, err)
	pod := job.NewPod(j, "default", "7")
	mod(pod)
	_, err = te.cs.CoreV1().Pods("default").Create(t.Context(), pod, metav1.CreateOptions{})
	require.NoError(t, err)
}
