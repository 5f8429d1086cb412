package podwatch

import (
	"bytes"
	"context"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"

	"github.com/lockctl/lockctl/internal/testing/testenv"
)

func TestMain(m *testing.M) { testenv.Main(m) }

// recorder collects what a Follow reports, and signals the first event that
// matches trigger.
type recorder struct {
	t       *testing.T
	mu      sync.Mutex
	events  []Event
	out     bytes.Buffer
	trigger func(Event) bool
	fired   chan struct{}
	once    sync.Once
}

func newRecorder(t *testing.T, trigger func(Event) bool) *recorder {
	return &recorder{t: t, trigger: trigger, fired: make(chan struct{})}
}

func (r *recorder) onEvent(e Event) {
	r.t.Logf("event: %s", e)
	r.mu.Lock()
	r.events = append(r.events, e)
	r.mu.Unlock()
	if r.trigger != nil && r.trigger(e) {
		r.once.Do(func() { close(r.fired) })
	}
}

func (r *recorder) Write(p []byte) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.out.Write(p)
}

func (r *recorder) kinds() []EventKind {
	r.mu.Lock()
	defer r.mu.Unlock()
	var kinds []EventKind
	for _, e := range r.events {
		kinds = append(kinds, e.Kind)
	}
	return kinds
}

func (r *recorder) logErrors() map[string]int {
	r.mu.Lock()
	defer r.mu.Unlock()
	n := map[string]int{}
	for _, e := range r.events {
		if e.Kind == EventLogError {
			n[e.Container]++
		}
	}
	return n
}

func isMainRunning(e Event) bool { return e.Kind == EventRunning && e.Container == "main" }

func isWaiting(e Event) bool { return e.Kind == EventWaiting && e.Container == "main" }

func TestIntegrationFollow(t *testing.T) {
	env := testenv.Get(t)
	t.Parallel()

	tests := []struct {
		name        string
		annotations map[string]string
		initAndSide bool // add an init container and a second container
		// createLate creates the pod only after Follow has started.
		createLate bool
		// trigger and act: act runs once an event matches trigger.
		trigger func(Event) bool
		act     func(ctx context.Context, c kubernetes.Interface, ns, name string, cancel context.CancelFunc) error

		wantErr       error
		wantCanceled  bool
		wantPhase     corev1.PodPhase
		wantExitCodes map[string]int32
		wantSucceeded bool
		wantKinds     []EventKind // must appear, in this order, among the events
		wantLogs      bool        // the container's log (kwok's) arrives whole, in order
	}{
		{
			name:          "succeeds with every container at exit code 0",
			annotations:   map[string]string{testenv.AnnotationExitCode: "0", testenv.AnnotationDuration: "1s"},
			initAndSide:   true,
			createLate:    true,
			wantPhase:     corev1.PodSucceeded,
			wantExitCodes: map[string]int32{"setup": 0, "main": 0, "side": 0},
			wantSucceeded: true,
			wantKinds:     []EventKind{EventPodMissing, EventPhase, EventRunning, EventTerminated, EventPhase},
		},
		{
			name:          "fails with the exit code",
			annotations:   map[string]string{testenv.AnnotationExitCode: "3", testenv.AnnotationDuration: "500ms"},
			wantPhase:     corev1.PodFailed,
			wantExitCodes: map[string]int32{"main": 3},
			wantKinds:     []EventKind{EventRunning, EventTerminated, EventPhase},
			wantLogs:      true,
		},
		{
			name: "waits while the container is not started",
			annotations: map[string]string{
				testenv.AnnotationHold: testenv.HoldPending, testenv.AnnotationExitCode: "0", testenv.AnnotationDuration: "500ms",
			},
			trigger: isWaiting,
			act: func(ctx context.Context, c kubernetes.Interface, ns, name string, _ context.CancelFunc) error {
				patch := []byte(`{"metadata":{"annotations":{"` + testenv.AnnotationHold + `":null}}}`)
				_, err := c.CoreV1().Pods(ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
				return err
			},
			wantPhase:     corev1.PodSucceeded,
			wantExitCodes: map[string]int32{"main": 0},
			wantSucceeded: true,
			wantKinds:     []EventKind{EventWaiting, EventRunning, EventTerminated, EventPhase},
		},
		{
			name:    "pod deleted while running",
			trigger: isMainRunning,
			act: func(ctx context.Context, c kubernetes.Interface, ns, name string, _ context.CancelFunc) error {
				return c.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{})
			},
			wantErr:   ErrPodDeleted,
			wantKinds: []EventKind{EventRunning, EventDeleted},
		},
		{
			name:    "context cancelled while running",
			trigger: isMainRunning,
			act: func(_ context.Context, _ kubernetes.Interface, _, _ string, cancel context.CancelFunc) error {
				cancel()
				return nil
			},
			wantCanceled: true,
			wantKinds:    []EventKind{EventRunning},
		},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ns := env.Namespace(t)
			pod := &corev1.Pod{
				ObjectMeta: metav1.ObjectMeta{Name: "job", Namespace: ns, Annotations: tc.annotations},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers:    []corev1.Container{{Name: "main", Image: "alpine", Command: []string{"echo", "hello"}}},
				},
			}
			if tc.initAndSide {
				pod.Spec.InitContainers = []corev1.Container{{Name: "setup", Image: "alpine"}}
				pod.Spec.Containers = append(pod.Spec.Containers, corev1.Container{Name: "side", Image: "alpine"})
			}
			create := func() {
				_, err := env.Client.CoreV1().Pods(ns).Create(t.Context(), pod, metav1.CreateOptions{})
				require.NoError(t, err, "create pod in %s", ns)
			}
			if !tc.createLate {
				create()
			}

			// NOTE: a safety net so that a broken case fails instead of
			// hanging; the pods finish within seconds.
			ctx, cancel := context.WithTimeout(t.Context(), 90*time.Second)
			defer cancel()
			rec := newRecorder(t, tc.trigger)
			if tc.createLate {
				rec.trigger = func(e Event) bool { return e.Kind == EventPodMissing }
			}
			acted := make(chan error, 1)
			go func() {
				select {
				case <-rec.fired:
				case <-ctx.Done():
					acted <- nil
					return
				}
				switch {
				case tc.createLate:
					_, err := env.Client.CoreV1().Pods(ns).Create(ctx, pod, metav1.CreateOptions{})
					acted <- err
				case tc.act != nil:
					acted <- tc.act(ctx, env.Client, ns, pod.Name, cancel)
				default:
					acted <- nil
				}
			}()
			if tc.trigger == nil && !tc.createLate {
				rec.once.Do(func() { close(rec.fired) })
			}

			logger := slog.New(slog.NewTextHandler(newTestWriter(t), &slog.HandlerOptions{Level: slog.LevelDebug}))
			f := New(env.Kube.CoreV1(), ns, pod.Name, Options{Log: logger})
			res, err := f.Follow(ctx, FollowOptions{Out: rec, OnEvent: rec.onEvent, DrainTimeout: 2 * time.Second})
			cancel()
			require.NoError(t, <-acted, "acting on the pod")
			t.Logf("result: %+v; logs: %q", res, rec.out.String())

			switch {
			case tc.wantCanceled:
				require.ErrorIs(t, err, context.Canceled)
			case tc.wantErr != nil:
				require.ErrorIs(t, err, tc.wantErr)
			default:
				require.NoError(t, err)
				assert.Equal(t, tc.wantPhase, res.Phase)
				assert.Equal(t, tc.wantExitCodes, res.ExitCodes)
				assert.Equal(t, tc.wantSucceeded, res.Succeeded(), "Succeeded of %+v", res)
			}
			assertInOrder(t, rec.kinds(), tc.wantKinds)
			if tc.wantLogs {
				assert.Equal(t, strings.Join(testenv.DefaultContainerLog, "\n")+"\n", rec.out.String(), "logs")
				assert.Empty(t, rec.logErrors(), "no log errors")
			}
			for container, n := range rec.logErrors() {
				assert.LessOrEqual(t, n, 1, "log errors of container %q are reported once", container)
			}
		})
	}
}

// assertInOrder checks that want is a subsequence of got.
func assertInOrder(t *testing.T, got, want []EventKind) {
	t.Helper()
	i := 0
	for _, k := range got {
		if i < len(want) && k == want[i] {
			i++
		}
	}
	assert.Equal(t, len(want), i, "events %v should contain %v in this order", got, want)
}

// testWriter sends log output to the test log until the test ends.
type testWriter struct {
	t    *testing.T
	mu   sync.Mutex
	done bool
}

func newTestWriter(t *testing.T) *testWriter {
	w := &testWriter{t: t}
	t.Cleanup(func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		w.done = true
	})
	return w
}

func (w *testWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if !w.done {
		w.t.Log(string(bytes.TrimRight(p, "\n")))
	}
	return len(p), nil
}
