package run

import (
	"context"
	"fmt"
	"io"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/podwatch"
)

// PrintJobLogs writes to w the logs so far of j's pod, read in podNS
// through pods (podwatch.PrintLogs: every container, or only the one
// called only). A job with no pod yet, or whose pod is gone, is an error
// saying so; a container the pod does not have is a
// *podwatch.NoContainerError. FollowJob streams them instead.
func PrintJobLogs(ctx context.Context, w io.Writer, pods kube.PodsGetter, podNS string, j *job.Job, only string) error {
	if j.Status.State == job.Triggered {
		return fmt.Errorf("job %q has no pod yet (triggered): wait for it with -f", j.Name)
	}
	name := job.PodName(j)
	pod, err := pods.Pods(podNS).Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return fmt.Errorf("pod %q of job %q is gone (job %s)", name, j.Name, j.Status.State)
	}
	if err != nil {
		return err
	}
	return podwatch.PrintLogs(ctx, w, pods, pod, only)
}
