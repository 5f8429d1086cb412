package e2e

import (
	"context"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/testenv"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/scheduler"
)

// kwokLog is what every container on the test node prints.
var kwokLog = strings.Join(testenv.DefaultContainerLog, "\n") + "\n"

// TestIntegrationLogs reads a job's logs through lockctl logs while a
// reconcile loop runs the job: followed, after the end, and across the pod
// being evicted and created again.
func TestIntegrationLogs(t *testing.T) {
	t.Parallel()
	c := newCLI(t)
	loop := startRun(t, c, "reconcile")
	loop.waitFor(t, "reconciling jobs")

	o := c.run(t, "submit", "-f", testenv.WriteJob(t, "logs-ok", "0"))
	require.Equal(t, 0, o.code, o.stderr)
	o = c.run(t, "logs", "logs-ok", "-f")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, kwokLog, o.stdout, "followed")
	require.Eventually(t, func() bool { return getJob(t, c, "logs-ok").Status.State == job.Success }, time.Minute, 50*time.Millisecond)
	o = c.run(t, "logs", "logs-ok")
	require.Equal(t, 0, o.code, o.stderr)
	assert.Equal(t, kwokLog, o.stdout, "after the end")

	// An evicted pod is created again; logs -f follows the new one.
	o = c.run(t, "submit", "-f", testenv.WriteJob(t, "logs-evicted", ""))
	require.Equal(t, 0, o.code, o.stderr)
	ctx, cancel := context.WithTimeout(t.Context(), 2*time.Minute)
	defer cancel()
	cmd := c.command(ctx, "logs", "logs-evicted", "-f")
	var stdout, stderr clitest.SyncBuffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	require.NoError(t, cmd.Start())
	require.Eventually(t, func() bool { return stdout.String() == kwokLog }, time.Minute, 50*time.Millisecond, "the first pod's log")

	pods := testenv.Get(t).Client.CoreV1().Pods(c.namespace)
	pod, err := pods.Get(ctx, "logs-evicted", metav1.GetOptions{})
	require.NoError(t, err)
	firstUID := pod.UID
	pod.Status.Phase, pod.Status.Reason = corev1.PodFailed, scheduler.ReasonEvicted
	_, err = pods.UpdateStatus(ctx, pod, metav1.UpdateOptions{})
	require.NoError(t, err)
	require.Eventually(t, func() bool { return stdout.String() == kwokLog+kwokLog }, time.Minute, 50*time.Millisecond,
		"the new pod's log after the first; stderr: %s", &stderr)
	pod, err = pods.Get(ctx, "logs-evicted", metav1.GetOptions{})
	require.NoError(t, err)
	assert.NotEqual(t, firstUID, pod.UID, "a new pod")
	assert.Contains(t, stderr.String(), `pod "logs-evicted" was evicted while job "logs-evicted" is pending; following the pod that replaces it`)

	o = c.run(t, "abort", "logs-evicted")
	require.Equal(t, 0, o.code, o.stderr)
	err = cmd.Wait()
	var exitErr *exec.ExitError
	require.ErrorAs(t, err, &exitErr, "logs -f ends with the job; stderr: %s", &stderr)
	assert.Equal(t, 1, exitErr.ExitCode(), "with the exit status of an aborted job; stderr: %s", &stderr)
	assert.Contains(t, stderr.String(), `job "logs-evicted" is aborted`)
	assert.Regexp(t, `job "logs-evicted" \(build ID \d+ of job deploy-web\) was aborted after`, stderr.String())
}
