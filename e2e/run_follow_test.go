package e2e

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	policyv1 "k8s.io/api/policy/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	corev1client "k8s.io/client-go/kubernetes/typed/core/v1"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/scheduler"
)

// TestIntegrationRunFollowsAcrossEviction evicts the pod of `run -f`'s job
// while it runs: the loop inside run creates it again, run follows the new
// pod (its phases and its log) and exits with the job's status once that
// pod ends.
func TestIntegrationRunFollowsAcrossEviction(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		pod   string
		what  string // what run says happened to the first pod
		evict func(ctx context.Context, t *testing.T, pods corev1client.PodInterface, pod *corev1.Pod)
	}{
		{
			name: "by the kubelet", pod: "evicted-kubelet", what: "was evicted",
			evict: func(ctx context.Context, t *testing.T, pods corev1client.PodInterface, pod *corev1.Pod) {
				pod.Status.Phase, pod.Status.Reason = corev1.PodFailed, scheduler.ReasonEvicted
				_, err := pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
				require.NoError(t, err)
			},
		},
		{
			name: "through the eviction API", pod: "evicted-api", what: "was deleted",
			evict: func(ctx context.Context, t *testing.T, pods corev1client.PodInterface, pod *corev1.Pod) {
				require.NoError(t, pods.EvictV1(ctx, &policyv1.Eviction{ObjectMeta: metav1.ObjectMeta{Name: pod.Name, Namespace: pod.Namespace}}))
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			c := newCLI(t)
			name := tt.pod
			ctx, cancel := context.WithTimeout(t.Context(), 3*time.Minute)
			defer cancel()
			cmd := c.command(ctx, append([]string{"run", "--lock", "staging", "-f", testenv.WriteJob(t, name, "")}, id("web", 1)...)...)
			var stdout, stderr clitest.SyncBuffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			require.NoError(t, cmd.Start())
			require.Eventually(t, func() bool { return stdout.String() == kwokLog }, time.Minute, 50*time.Millisecond,
				"the first pod's log; stderr: %s", &stderr)

			pods := testenv.Get(t).Client.CoreV1().Pods(c.namespace)
			pod, err := pods.Get(ctx, name, metav1.GetOptions{})
			require.NoError(t, err)
			firstUID := pod.UID
			tt.evict(ctx, t, pods, pod)

			var second *corev1.Pod
			require.Eventually(t, func() bool {
				p, err := pods.Get(ctx, name, metav1.GetOptions{})
				if err != nil || p.UID == firstUID {
					return false
				}
				second = p
				return stdout.String() == kwokLog+kwokLog
			}, 2*time.Minute, 50*time.Millisecond, "a new pod, and its log after the first; stderr: %s", &stderr)

			// The new pod fails: run ends with the job, exit 5.
			patch := `{"metadata":{"annotations":{"` + testenv.AnnotationExitCode + `":"3"}}}`
			_, err = pods.Patch(ctx, name, types.MergePatchType, []byte(patch), metav1.PatchOptions{})
			require.NoError(t, err)
			err = cmd.Wait()
			var exitErr *exec.ExitError
			require.ErrorAs(t, err, &exitErr, "stderr: %s", &stderr)
			assert.Equal(t, 5, exitErr.ExitCode(), "the job's status; stderr: %s", &stderr)

			assertInOrder(t, stderr.String(), []string{
				`container "main" is running`,
				`pod "` + name + `" ` + tt.what + ` while job "` + name + `" is pending; following the pod that replaces it`,
				`container "main" is running`,
				`container "main" terminated with exit code 3`,
				`job "` + name + `" (build ID 1 of job deploy-web) failed after`,
				`lock "staging" released`,
			})
			j := getJob(t, c, name)
			assert.Equal(t, job.Failure, j.Status.State)
			assert.NotEqual(t, firstUID, second.UID)
			assert.True(t, lockGone(t, c, "staging"), "lock released")
		})
	}
}
