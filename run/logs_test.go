package run

import (
	"bytes"
	"errors"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes/fake"

	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/podwatch"
)

func TestPrintJobLogs(t *testing.T) {
	t.Parallel()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "deploy-2", Namespace: "ci"},
		Spec:       corev1.PodSpec{Containers: []corev1.Container{{Name: "main"}}},
		Status:     corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "main", State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{}}}}},
	}
	jobIn := func(name string, state job.State) *job.Job {
		return &job.Job{ObjectMeta: metav1.ObjectMeta{Name: name}, Status: job.JobStatus{State: state}}
	}
	tests := []struct {
		name    string
		job     *job.Job
		only    string
		want    string
		wantErr string
		noCont  bool
	}{
		{name: "the logs so far", job: jobIn("deploy-2", job.Pending), want: "fake logs\n"},
		{name: "no pod yet", job: jobIn("deploy-1", job.Triggered), wantErr: `job "deploy-1" has no pod yet (triggered): wait for it with -f`},
		{name: "pod gone", job: jobIn("deploy-3", job.Success), wantErr: `pod "deploy-3" of job "deploy-3" is gone (job success)`},
		{name: "no such container", job: jobIn("deploy-2", job.Pending), only: "sidecar", noCont: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			pods := kubetest.CoreV1(fake.NewClientset(pod.DeepCopy()).CoreV1())
			var out bytes.Buffer
			err := PrintJobLogs(t.Context(), &out, pods, "ci", tt.job, tt.only)
			switch {
			case tt.noCont:
				assert.True(t, errors.As(err, new(*podwatch.NoContainerError)), "a usage error for the caller: %v", err)
			case tt.wantErr != "":
				require.Error(t, err, tt.name)
				assert.Equal(t, tt.wantErr, err.Error(), tt.name)
			default:
				require.NoError(t, err, tt.name)
				assert.Equal(t, tt.want, out.String(), tt.name)
			}
		})
	}
}
