package testenv_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/lockctl/lockctl/internal/testing/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// podTimeout bounds each wait for a Pod to reach a state.
const podTimeout = 30 * time.Second

func TestIntegrationHarness(t *testing.T) {
	env := testenv.Get(t)

	t.Run("kubeconfig reaches the api server", func(t *testing.T) {
		t.Parallel()
		cfg, err := clientcmd.BuildConfigFromFlags("", env.Kubeconfig)
		require.NoError(t, err, "load %s", env.Kubeconfig)
		c, err := kubernetes.NewForConfig(cfg)
		require.NoError(t, err)
		v, err := c.Discovery().ServerVersion()
		require.NoError(t, err, "server version via kubeconfig")
		assert.Equal(t, testenv.KubeVersion, v.GitVersion, "kube-apiserver version")
		raw, err := clientcmd.LoadFromFile(env.Kubeconfig)
		require.NoError(t, err)
		assert.Equal(t, testenv.ContextName, raw.CurrentContext, "current context")
		assert.Equal(t, metav1.NamespaceDefault, raw.Contexts[testenv.ContextName].Namespace, "context namespace")
	})

	t.Run("container logs come from kwok through the api server", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		pod := newPod("logs", map[string]string{testenv.AnnotationExitCode: "0", testenv.AnnotationDuration: "1s"})
		runPod(t, env.Client, ns, pod, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		raw, err := env.Client.CoreV1().Pods(ns).GetLogs(pod.Name, &corev1.PodLogOptions{}).DoRaw(t.Context())
		require.NoError(t, err, "logs of %s", pod.Name)
		assert.Equal(t, strings.Join(testenv.DefaultContainerLog, "\n")+"\n", string(raw))
	})

	t.Run("exit code 0 goes Pending, Running, Succeeded", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		pod := newPod("ok", map[string]string{
			testenv.AnnotationExitCode: "0",
			testenv.AnnotationDuration: "1s",
		})
		seen := runPod(t, env.Client, ns, pod, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })

		assert.Equal(t, []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodSucceeded}, phases(seen), "phases of %s", pod.Name)
		running, runningAt := firstInPhase(seen, corev1.PodRunning)
		require.NotNil(t, running, "pod %s never seen Running", pod.Name)
		assert.Equal(t, testenv.NodeName, running.Spec.NodeName, "node")
		assert.NotNil(t, running.Status.StartTime, "startTime when Running")
		assert.NotEmpty(t, running.Status.PodIP, "podIP when Running")
		assert.True(t, hasCondition(running, corev1.PodReady, corev1.ConditionTrue), "Ready when Running: %+v", running.Status.Conditions)
		require.Len(t, running.Status.ContainerStatuses, 1)
		assert.NotNil(t, running.Status.ContainerStatuses[0].State.Running, "container running")

		done, doneAt := firstInPhase(seen, corev1.PodSucceeded)
		assert.GreaterOrEqual(t, doneAt.Sub(runningAt), 900*time.Millisecond, "Running lasts about %s", pod.Annotations[testenv.AnnotationDuration])
		require.Len(t, done.Status.ContainerStatuses, 1)
		term := done.Status.ContainerStatuses[0].State.Terminated
		require.NotNil(t, term, "container terminated when Succeeded")
		assert.Equal(t, int32(0), term.ExitCode, "exit code")
		assert.Equal(t, "Completed", term.Reason, "reason")
	})

	t.Run("non-zero exit code goes Failed with that code", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		pod := newPod("fail", map[string]string{testenv.AnnotationExitCode: "3"})
		pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "sidecar", Image: "busybox"})
		seen := runPod(t, env.Client, ns, pod, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodFailed })

		assert.Equal(t, []corev1.PodPhase{corev1.PodPending, corev1.PodRunning, corev1.PodFailed}, phases(seen), "phases of %s", pod.Name)
		done := seen[len(seen)-1]
		require.Len(t, done.Status.ContainerStatuses, 2)
		for _, cs := range done.Status.ContainerStatuses {
			require.NotNil(t, cs.State.Terminated, "container %s terminated", cs.Name)
			assert.Equal(t, int32(3), cs.State.Terminated.ExitCode, "exit code of %s", cs.Name)
			assert.Equal(t, "Error", cs.State.Terminated.Reason, "reason of %s", cs.Name)
		}
	})

	t.Run("held pod stays Pending with startTime until released", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		held := newPod("held", map[string]string{testenv.AnnotationHold: testenv.HoldPending})
		runPod(t, env.Client, ns, held, func(p *corev1.Pod) bool { return p.Status.StartTime != nil })
		// A Pod created later gets to Running; the held one must not have.
		runPod(t, env.Client, ns, newPod("after-held", nil), isRunning)

		got, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), held.Name, metav1.GetOptions{})
		require.NoError(t, err)
		assert.Equal(t, corev1.PodPending, got.Status.Phase, "phase of held pod")
		require.NotNil(t, got.Status.StartTime, "startTime of held pod")
		require.Len(t, got.Status.ContainerStatuses, 1)
		waiting := got.Status.ContainerStatuses[0].State.Waiting
		require.NotNil(t, waiting, "container of held pod waiting")
		assert.Equal(t, "ContainerCreating", waiting.Reason, "waiting reason")

		patch := []byte(`{"metadata":{"annotations":{"` + testenv.AnnotationHold + `":null}}}`)
		seen := watchPod(t, env.Client, ns, held.Name, func() {
			_, err := env.Client.CoreV1().Pods(ns).Patch(t.Context(), held.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			require.NoError(t, err, "release hold")
		}, isRunning)
		released := seen[len(seen)-1]
		assert.Equal(t, got.Status.StartTime.Time, released.Status.StartTime.Time, "startTime kept on release")
	})

	t.Run("unschedulable pod stays Pending without startTime", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		pod := newPod("nowhere", nil)
		pod.Spec.NodeSelector = map[string]string{"no-such": "node"}
		seen := runPod(t, env.Client, ns, pod, func(p *corev1.Pod) bool {
			return hasCondition(p, corev1.PodScheduled, corev1.ConditionFalse)
		})
		got := seen[len(seen)-1]
		assert.Equal(t, corev1.PodPending, got.Status.Phase, "phase")
		assert.Nil(t, got.Status.StartTime, "startTime")
		assert.Empty(t, got.Spec.NodeName, "nodeName")
		for _, c := range got.Status.Conditions {
			if c.Type == corev1.PodScheduled {
				assert.Equal(t, corev1.PodReasonUnschedulable, c.Reason, "PodScheduled reason")
			}
		}
	})

	t.Run("deleted running pod disappears", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		pod := newPod("doomed", nil)
		runPod(t, env.Client, ns, pod, isRunning)
		watchPod(t, env.Client, ns, pod.Name, func() {
			require.NoError(t, env.Client.CoreV1().Pods(ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}), "delete")
		}, nil) // until Deleted
		_, err := env.Client.CoreV1().Pods(ns).Get(t.Context(), pod.Name, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "get after delete: %v", err)
	})

	t.Run("finalizers hold a deleted pod until removed", func(t *testing.T) {
		t.Parallel()
		ns := env.Namespace(t)
		pod := newPod("finalized", nil)
		pod.Finalizers = []string{"lockctl.dev/test"}
		runPod(t, env.Client, ns, pod, isRunning)
		// kwok deletes again with grace period 0 and leaves the finalizer.
		watchPod(t, env.Client, ns, pod.Name, func() {
			require.NoError(t, env.Client.CoreV1().Pods(ns).Delete(t.Context(), pod.Name, metav1.DeleteOptions{}), "delete")
		}, func(p *corev1.Pod) bool {
			return p.DeletionGracePeriodSeconds != nil && *p.DeletionGracePeriodSeconds == 0
		})
		patch := []byte(`{"metadata":{"finalizers":null}}`)
		watchPod(t, env.Client, ns, pod.Name, func() {
			_, err := env.Client.CoreV1().Pods(ns).Patch(t.Context(), pod.Name, types.MergePatchType, patch, metav1.PatchOptions{})
			require.NoError(t, err, "remove finalizer")
		}, nil) // until Deleted
	})

	t.Run("a second control plane runs alongside", func(t *testing.T) {
		t.Parallel()
		ctx, cancel := context.WithTimeout(t.Context(), testenv.SharedStartTimeout)
		defer cancel()
		env2, err := testenv.Start(ctx, testenv.Options{})
		require.NoError(t, err, "start second control plane")
		t.Cleanup(env2.Stop)
		t.Logf("second control plane ready in %s", env2.StartupTime.Round(time.Millisecond))
		assert.NotEqual(t, env.RESTConfig.Host, env2.RESTConfig.Host, "api server addresses")
		assert.NotEqual(t, env.Dir, env2.Dir, "directories")

		ns := env2.Namespace(t)
		pod := newPod("elsewhere", map[string]string{testenv.AnnotationExitCode: "0"})
		runPod(t, env2.Client, ns, pod, func(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodSucceeded })
		_, err = env.Client.CoreV1().Namespaces().Get(t.Context(), ns, metav1.GetOptions{})
		assert.True(t, apierrors.IsNotFound(err), "namespace %s of the second cluster in the first: %v", ns, err)
	})
}

func newPod(name string, annotations map[string]string) *corev1.Pod {
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: annotations},
		Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "main", Image: "busybox"}},
		},
	}
}

// observed is a Pod as a watch delivered it, and when.
type observed struct {
	*corev1.Pod
	at time.Time
}

// runPod creates pod in ns and returns every version of it seen up to and
// including the first for which until is true.
func runPod(t *testing.T, c kubernetes.Interface, ns string, pod *corev1.Pod, until func(*corev1.Pod) bool) []observed {
	t.Helper()
	return watchPod(t, c, ns, pod.Name, func() {
		_, err := c.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
		require.NoError(t, err, "create pod %s", pod.Name)
	}, until)
}

// watchPod watches the Pod ns/name, calls do, and collects the versions seen
// until one satisfies until, or, when until is nil, until the Pod is deleted.
func watchPod(t *testing.T, c kubernetes.Interface, ns, name string, do func(), until func(*corev1.Pod) bool) []observed {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), podTimeout)
	defer cancel()
	w, err := c.CoreV1().Pods(ns).Watch(ctx, metav1.ListOptions{FieldSelector: "metadata.name=" + name})
	require.NoError(t, err, "watch pod %s", name)
	defer w.Stop()
	do()
	var seen []observed
	for ev := range w.ResultChan() {
		pod, ok := ev.Object.(*corev1.Pod)
		if !ok {
			t.Fatalf("watch pod %s: unexpected %s event: %v", name, ev.Type, ev.Object)
		}
		seen = append(seen, observed{Pod: pod, at: time.Now()})
		if ev.Type == watch.Deleted {
			if until == nil {
				return seen
			}
			t.Fatalf("pod %s deleted while waiting", name)
		}
		if until != nil && until(pod) {
			return seen
		}
	}
	last := "never seen"
	if len(seen) > 0 {
		last = string(seen[len(seen)-1].Status.Phase)
	}
	t.Fatalf("pod %s: condition not reached within %s (last phase: %s)", name, podTimeout, last)
	return nil
}

// phases returns the distinct consecutive phases in seen.
func phases(seen []observed) []corev1.PodPhase {
	var out []corev1.PodPhase
	for _, p := range seen {
		if len(out) == 0 || out[len(out)-1] != p.Status.Phase {
			out = append(out, p.Status.Phase)
		}
	}
	return out
}

func firstInPhase(seen []observed, phase corev1.PodPhase) (*corev1.Pod, time.Time) {
	for _, p := range seen {
		if p.Status.Phase == phase {
			return p.Pod, p.at
		}
	}
	return nil, time.Time{}
}

func isRunning(p *corev1.Pod) bool { return p.Status.Phase == corev1.PodRunning }

func hasCondition(p *corev1.Pod, typ corev1.PodConditionType, status corev1.ConditionStatus) bool {
	for _, c := range p.Status.Conditions {
		if c.Type == typ && c.Status == status {
			return true
		}
	}
	return false
}
