package podwatch

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes/fake"
	clienttesting "k8s.io/client-go/testing"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/internal/testing/clitest"
	"github.com/lockctl/lockctl/internal/testing/kubetest"
	"github.com/lockctl/lockctl/kube"
)

const (
	testNS  = "ci"
	testPod = "job-1"
)

var podsGVR = corev1.SchemeGroupVersion.WithResource("pods")

// noWatchList marks the fake client as unable to do streaming lists, which
// client-go's reflector then does not try; *fake.Clientset says so itself,
// but its typed CoreV1 client does not.
type noWatchList struct {
	kube.PodsGetter
}

func (noWatchList) IsWatchListSemanticsUnSupported() bool { return true }

// harness runs one Follow against a fake clientset whose watches are
// watch.FakeWatchers fed by the test, and a fake kubelet for the logs.
type harness struct {
	t        *testing.T
	cs       *fake.Clientset
	watchers chan *watch.FakeWatcher
	w        *watch.FakeWatcher
	kubelet  *fakeKubelet
	clock    *testingclock.FakeClock
	pod      *corev1.Pod
	cancel   context.CancelFunc

	mu      sync.Mutex
	events  []Event
	evented chan struct{} // closed and replaced on every event
	out     bytes.Buffer
}

func newHarness(t *testing.T, objects ...runtime.Object) *harness {
	h := &harness{
		t:        t,
		cs:       fake.NewClientset(objects...),
		watchers: make(chan *watch.FakeWatcher, 16),
		kubelet:  newFakeKubelet(),
		clock:    testingclock.NewFakeClock(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)),
		evented:  make(chan struct{}),
	}
	for _, o := range objects {
		if p, ok := o.(*corev1.Pod); ok && h.pod == nil {
			h.pod = p.DeepCopy()
		}
	}
	h.cs.PrependWatchReactor("pods", func(clienttesting.Action) (bool, watch.Interface, error) {
		w := watch.NewFake()
		h.watchers <- w
		return true, w, nil
	})
	return h
}

func (h *harness) follower(selector labels.Selector, log *slog.Logger) *Follower {
	pods := noWatchList{kubetest.CoreV1(h.cs.CoreV1())}
	var f *Follower
	if selector != nil {
		f = NewForSelector(pods, testNS, selector, Options{Clock: h.clock, Logs: h.kubelet, Log: log})
	} else {
		f = New(pods, testNS, testPod, Options{Clock: h.clock, Logs: h.kubelet, Log: log})
	}
	return f
}

func (h *harness) Write(p []byte) (int, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.out.Write(p)
}

func (h *harness) onEvent(e Event) {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.events = append(h.events, e)
	close(h.evented)
	h.evented = make(chan struct{})
}

// waitEvent waits until an event of kind has been reported.
func (h *harness) waitEvent(kind EventKind) bool {
	deadline := time.After(10 * time.Second) // safety net only
	for {
		h.mu.Lock()
		evented := h.evented
		for _, e := range h.events {
			if e.Kind == kind {
				h.mu.Unlock()
				return true
			}
		}
		h.mu.Unlock()
		select {
		case <-evented:
		case <-deadline:
			h.t.Errorf("timed out waiting for a %s event", kind)
			return false
		}
	}
}

func (h *harness) output() string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return h.out.String()
}

func (h *harness) eventLines() []string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var lines []string
	for _, e := range h.events {
		lines = append(lines, e.String())
	}
	return lines
}

// nextWatch waits for the informer to open its next watch.
func (h *harness) nextWatch() bool {
	select {
	case h.w = <-h.watchers:
		return true
	case <-time.After(10 * time.Second): // safety net only
		h.t.Errorf("timed out waiting for a watch")
		return false
	}
}

// update changes the pod in the tracker, so that a re-list sees it too, and
// pushes it through the current watch.
func (h *harness) update(mutate func(p *corev1.Pod)) {
	p := h.pod.DeepCopy()
	mutate(p)
	h.pod = p
	assert.NoError(h.t, h.cs.Tracker().Update(podsGVR, p.DeepCopy(), testNS))
	h.w.Modify(p.DeepCopy())
}

// create adds the pod to the tracker and pushes it through the current watch.
func (h *harness) create(p *corev1.Pod) {
	h.pod = p.DeepCopy()
	assert.NoError(h.t, h.cs.Tracker().Add(p.DeepCopy()))
	h.w.Add(p.DeepCopy())
}

func (h *harness) delete() {
	assert.NoError(h.t, h.cs.Tracker().Delete(podsGVR, testNS, h.pod.Name))
	h.w.Delete(h.pod.DeepCopy())
}

// stepWhenWaiting steps the fake clock by d once something waits on it.
func (h *harness) stepWhenWaiting(d time.Duration) {
	err := wait.PollUntilContextTimeout(h.t.Context(), time.Millisecond, 10*time.Second, true,
		func(context.Context) (bool, error) { return h.clock.HasWaiters(), nil })
	if err != nil {
		h.t.Errorf("waiting for a clock waiter: %v", err)
		return
	}
	h.clock.Step(d)
}

// Pod builders.

func newPod(phase corev1.PodPhase, policy corev1.RestartPolicy, containers ...string) *corev1.Pod {
	p := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: testPod, Namespace: testNS, Labels: map[string]string{"job": "deploy"}},
		Spec:       corev1.PodSpec{RestartPolicy: policy},
		Status:     corev1.PodStatus{Phase: phase},
	}
	for _, c := range containers {
		if name, ok := strings.CutPrefix(c, "init:"); ok {
			p.Spec.InitContainers = append(p.Spec.InitContainers, corev1.Container{Name: name, Image: "alpine"})
			continue
		}
		p.Spec.Containers = append(p.Spec.Containers, corev1.Container{Name: c, Image: "alpine"})
	}
	return p
}

var t0 = metav1.NewTime(time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC))

func waiting(name, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{Name: name, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: reason}}}
}

func running(name, id string, restarts int32) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, ContainerID: id, RestartCount: restarts,
		State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{StartedAt: metav1.NewTime(t0.Add(time.Duration(restarts) * time.Minute))}},
	}
}

func terminated(name, id string, restarts, code int32, reason string) corev1.ContainerStatus {
	return corev1.ContainerStatus{
		Name: name, ContainerID: id, RestartCount: restarts,
		State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ContainerID: id, ExitCode: code, Reason: reason, FinishedAt: metav1.NewTime(t0.Add(time.Hour)),
		}},
	}
}

func withStatus(phase corev1.PodPhase, statuses ...corev1.ContainerStatus) func(*corev1.Pod) {
	return func(p *corev1.Pod) {
		p.Status.Phase = phase
		p.Status.InitContainerStatuses, p.Status.ContainerStatuses = nil, nil
		initNames := map[string]bool{}
		for _, c := range p.Spec.InitContainers {
			initNames[c.Name] = true
		}
		for _, st := range statuses {
			if initNames[st.Name] {
				p.Status.InitContainerStatuses = append(p.Status.InitContainerStatuses, st)
			} else {
				p.Status.ContainerStatuses = append(p.Status.ContainerStatuses, st)
			}
		}
	}
}

func podWith(p *corev1.Pod, mutate func(*corev1.Pod)) *corev1.Pod {
	p = p.DeepCopy()
	mutate(p)
	return p
}

func TestFollow(t *testing.T) {
	t.Parallel()

	single := newPod(corev1.PodPending, corev1.RestartPolicyNever, "main")
	singleRunning := podWith(single, withStatus(corev1.PodRunning, running("main", "c1", 0)))

	tests := []struct {
		name     string
		pod      *corev1.Pod // initial pod in the cluster; nil for none
		others   []runtime.Object
		selector labels.Selector
		opts     FollowOptions
		// setup prepares the fake kubelet before Follow starts.
		setup func(h *harness)
		// drive feeds the watch and the kubelet while Follow runs; it runs
		// in its own goroutine once the first watch is open.
		drive func(h *harness)
		// noWatch: Follow fails before any watch is opened.
		noWatch bool

		wantErr       error
		wantCanceled  bool
		wantResult    Result
		wantSucceeded bool
		wantEvents    []string
		wantOut       string
		check         func(t *testing.T, h *harness)
	}{
		{
			name: "pending to running to succeeded, with events and logs",
			pod:  podWith(single, withStatus(corev1.PodPending, waiting("main", "ContainerCreating"))),
			drive: func(h *harness) {
				h.kubelet.start("main", "c1")
				h.kubelet.write("main", "hello", "world")
				h.update(withStatus(corev1.PodRunning, running("main", "c1", 0)))
				h.kubelet.write("main", "bye")
				h.kubelet.end("main")
				h.update(withStatus(corev1.PodSucceeded, terminated("main", "c1", 0, 0, "Completed")))
			},
			wantResult: Result{
				Pod: testPod, Phase: corev1.PodSucceeded,
				ExitCodes: map[string]int32{"main": 0}, Containers: []string{"main"},
			},
			wantSucceeded: true,
			wantEvents: []string{
				`pod "job-1" is Pending`,
				`container "main" is waiting: ContainerCreating`,
				`pod "job-1" is Running`,
				`container "main" is running`,
				`container "main" terminated with exit code 0 (Completed)`,
				`pod "job-1" is Succeeded`,
			},
			wantOut: "hello\nworld\nbye\n",
		},
		{
			name: "failed with exit code",
			pod:  singleRunning,
			setup: func(h *harness) {
				h.kubelet.start("main", "c1")
				h.kubelet.write("main", "deploying", "boom")
			},
			drive: func(h *harness) {
				h.kubelet.end("main")
				h.update(withStatus(corev1.PodFailed, terminated("main", "c1", 0, 2, "Error")))
			},
			wantResult: Result{
				Pod: testPod, Phase: corev1.PodFailed, Reason: "Error",
				ExitCodes: map[string]int32{"main": 2}, Containers: []string{"main"},
			},
			wantEvents: []string{
				`pod "job-1" is Running`,
				`container "main" is running`,
				`container "main" terminated with exit code 2 (Error)`,
				`pod "job-1" is Failed`,
			},
			wantOut: "deploying\nboom\n",
		},
		{
			name: "pod deleted mid-run",
			pod:  singleRunning,
			setup: func(h *harness) {
				h.kubelet.start("main", "c1")
				h.kubelet.write("main", "working")
			},
			drive: func(h *harness) {
				h.kubelet.waitFor(h.t, "a followed stream", func(k *fakeKubelet) bool { return len(k.opens) > 0 })
				h.update(func(p *corev1.Pod) { p.DeletionTimestamp = &t0 })
				h.delete()
			},
			wantErr: ErrPodDeleted,
			wantEvents: []string{
				`pod "job-1" is Running`,
				`container "main" is running`,
				`pod "job-1" is being deleted`,
				`pod "job-1" was deleted`,
			},
		},
		{
			name: "pod replaced by a new one of the same name",
			pod:  podWith(singleRunning, func(p *corev1.Pod) { p.UID = "uid-1" }),
			setup: func(h *harness) {
				h.kubelet.start("main", "c1")
			},
			drive: func(h *harness) {
				h.update(func(p *corev1.Pod) {
					p.UID = "uid-2"
					withStatus(corev1.PodPending, waiting("main", "ContainerCreating"))(p)
				})
			},
			wantErr: ErrPodDeleted,
			wantEvents: []string{
				`pod "job-1" is Running`,
				`container "main" is running`,
				`pod "job-1" was deleted`,
			},
		},
		{
			name: "watch closed and expired, then resumed",
			pod:  podWith(single, withStatus(corev1.PodPending, waiting("main", "ContainerCreating"))),
			drive: func(h *harness) {
				h.kubelet.start("main", "c1")
				h.kubelet.write("main", "one")
				h.update(withStatus(corev1.PodRunning, running("main", "c1", 0)))
				h.w.Stop() // the API server closes the watch
				if !h.nextWatch() {
					return
				}
				h.kubelet.write("main", "two")
				h.kubelet.end("main")
				// NOTE: the tracker already holds the final state, so the
				// re-list after 410 Gone delivers it even though the watch
				// never does.
				p := podWith(h.pod, withStatus(corev1.PodSucceeded, terminated("main", "c1", 0, 0, "Completed")))
				h.pod = p
				assert.NoError(h.t, h.cs.Tracker().Update(podsGVR, p.DeepCopy(), testNS))
				h.w.Error(&metav1.Status{Status: metav1.StatusFailure, Code: 410, Reason: metav1.StatusReasonExpired, Message: "too old resource version"})
			},
			wantResult: Result{
				Pod: testPod, Phase: corev1.PodSucceeded,
				ExitCodes: map[string]int32{"main": 0}, Containers: []string{"main"},
			},
			wantSucceeded: true,
			wantEvents: []string{
				`pod "job-1" is Pending`,
				`container "main" is waiting: ContainerCreating`,
				`pod "job-1" is Running`,
				`container "main" is running`,
				`container "main" terminated with exit code 0 (Completed)`,
				`pod "job-1" is Succeeded`,
			},
			wantOut: "one\ntwo\n",
		},
		{
			name: "context cancelled while following",
			pod:  singleRunning,
			setup: func(h *harness) {
				h.kubelet.start("main", "c1")
				h.kubelet.write("main", "working")
			},
			drive: func(h *harness) {
				h.kubelet.waitFor(h.t, "a followed stream", func(k *fakeKubelet) bool { return len(k.opens) > 0 })
				h.cancel()
			},
			wantCanceled: true,
			wantEvents: []string{
				`pod "job-1" is Running`,
				`container "main" is running`,
			},
		},
		{
			name: "init container failing",
			pod: podWith(newPod(corev1.PodPending, corev1.RestartPolicyNever, "init:setup", "app"),
				withStatus(corev1.PodPending, running("setup", "s1", 0), waiting("app", "PodInitializing"))),
			setup: func(h *harness) {
				h.kubelet.start("setup", "s1")
				h.kubelet.write("setup", "migrating")
			},
			drive: func(h *harness) {
				h.kubelet.write("setup", "migration failed")
				h.kubelet.end("setup")
				h.update(withStatus(corev1.PodFailed, terminated("setup", "s1", 0, 3, "Error"), waiting("app", "PodInitializing")))
			},
			wantResult: Result{
				Pod: testPod, Phase: corev1.PodFailed, Reason: "Error",
				ExitCodes: map[string]int32{"setup": 3}, Containers: []string{"setup", "app"},
			},
			wantEvents: []string{
				`pod "job-1" is Pending`,
				`init container "setup" is running`,
				`container "app" is waiting: PodInitializing`,
				`init container "setup" terminated with exit code 3 (Error)`,
				`pod "job-1" is Failed`,
			},
			wantOut: "[setup] migrating\n[setup] migration failed\n",
			check: func(t *testing.T, h *harness) {
				for _, o := range h.kubelet.recorded() {
					assert.Equal(t, "setup", o.Container, "only the init container that ran has logs to read")
				}
			},
		},
		{
			name: "init container first, then two containers with prefixes",
			pod: podWith(newPod(corev1.PodPending, corev1.RestartPolicyNever, "init:setup", "web", "sidecar"),
				withStatus(corev1.PodPending, running("setup", "s1", 0), waiting("web", "PodInitializing"), waiting("sidecar", "PodInitializing"))),
			setup: func(h *harness) {
				h.kubelet.start("setup", "s1")
				h.kubelet.write("setup", "init 1", "init 2")
			},
			drive: func(h *harness) {
				h.kubelet.end("setup")
				h.kubelet.start("web", "w1")
				h.kubelet.start("sidecar", "x1")
				h.kubelet.write("web", "web 1")
				h.kubelet.write("sidecar", "side 1")
				h.kubelet.write("web", "web 2")
				h.update(withStatus(corev1.PodRunning, terminated("setup", "s1", 0, 0, "Completed"), running("web", "w1", 0), running("sidecar", "x1", 0)))
				h.kubelet.write("sidecar", "side 2")
				h.kubelet.end("web")
				h.kubelet.end("sidecar")
				h.update(withStatus(corev1.PodSucceeded, terminated("setup", "s1", 0, 0, "Completed"),
					terminated("web", "w1", 0, 0, "Completed"), terminated("sidecar", "x1", 0, 0, "Completed")))
			},
			wantResult: Result{
				Pod: testPod, Phase: corev1.PodSucceeded,
				ExitCodes:  map[string]int32{"setup": 0, "web": 0, "sidecar": 0},
				Containers: []string{"setup", "web", "sidecar"},
			},
			wantSucceeded: true,
			check: func(t *testing.T, h *harness) {
				lines := strings.Split(strings.TrimSuffix(h.output(), "\n"), "\n")
				require.Len(t, lines, 6, "output %q", h.output())
				assert.Equal(t, []string{"[setup] init 1", "[setup] init 2"}, lines[:2], "init container logs come first")
				var web, side []string
				for _, l := range lines[2:] {
					switch {
					case strings.HasPrefix(l, "[web] "):
						web = append(web, l)
					case strings.HasPrefix(l, "[sidecar] "):
						side = append(side, l)
					}
				}
				assert.Equal(t, []string{"[web] web 1", "[web] web 2"}, web)
				assert.Equal(t, []string{"[sidecar] side 1", "[sidecar] side 2"}, side)
			},
		},
		{
			name: "log stream ending early is re-opened without lost or repeated lines",
			pod:  singleRunning,
			setup: func(h *harness) {
				h.kubelet.start("main", "c1")
				h.kubelet.write("main", "1", "2")
				// 3 and 4 share a timestamp and the stream is cut between them.
				h.kubelet.writeSameTime("main", "3", "4")
				h.kubelet.write("main", "5", "6")
				h.kubelet.cutNextStream("main", 3)
			},
			drive: func(h *harness) {
				h.kubelet.waitFor(h.t, "the stream to be cut", func(k *fakeKubelet) bool { return k.cuts == 1 })
				// The container still runs: the stream is re-opened after
				// the retry delay and followed again.
				h.stepWhenWaiting(DefaultRetryDelay)
				h.kubelet.waitFor(h.t, "the re-opened stream", func(k *fakeKubelet) bool { return len(k.opens) == 2 })
				h.kubelet.write("main", "7")
				h.kubelet.end("main")
				h.update(withStatus(corev1.PodSucceeded, terminated("main", "c1", 0, 0, "Completed")))
			},
			wantResult: Result{
				Pod: testPod, Phase: corev1.PodSucceeded,
				ExitCodes: map[string]int32{"main": 0}, Containers: []string{"main"},
			},
			wantSucceeded: true,
			wantOut:       "1\n2\n3\n4\n5\n6\n7\n",
			check: func(t *testing.T, h *harness) {
				opens := h.kubelet.recorded()
				require.GreaterOrEqual(t, len(opens), 2)
				assert.Nil(t, opens[0].SinceTime, "first open reads from the start")
				assert.True(t, opens[0].Timestamps, "timestamps are always requested")
				require.NotNil(t, opens[1].SinceTime, "re-open starts at the last line seen")
				assert.True(t, opens[1].Follow, "the container still runs, so the re-opened stream follows")
			},
		},
		{
			name: "restarted container is read to its end, then the new instance is streamed",
			pod:  podWith(newPod(corev1.PodPending, corev1.RestartPolicyOnFailure, "main"), withStatus(corev1.PodRunning, running("main", "c1", 0))),
			setup: func(h *harness) {
				h.kubelet.start("main", "c1")
				h.kubelet.write("main", "first 1", "first 2")
				h.kubelet.cutNextStream("main", 1)
			},
			drive: func(h *harness) {
				h.kubelet.waitFor(h.t, "the stream to be cut", func(k *fakeKubelet) bool { return k.cuts == 1 })
				h.kubelet.write("main", "first 3")
				h.kubelet.end("main")
				h.kubelet.start("main", "c2")
				h.kubelet.write("main", "second 1")
				st := running("main", "c2", 1)
				st.LastTerminationState.Terminated = &corev1.ContainerStateTerminated{ContainerID: "c1", ExitCode: 1, Reason: "Error"}
				h.update(withStatus(corev1.PodRunning, st))
				h.kubelet.waitFor(h.t, "the old instance read through Previous, then the new one followed", func(k *fakeKubelet) bool {
					previous := false
					for _, o := range k.opens {
						if o.Previous {
							previous = true
						} else if previous && o.Follow {
							return true
						}
					}
					return false
				})
				h.kubelet.write("main", "second 2")
				h.kubelet.end("main")
				done := terminated("main", "c2", 1, 0, "Completed")
				done.LastTerminationState = st.LastTerminationState
				h.update(withStatus(corev1.PodSucceeded, done))
			},
			wantResult: Result{
				Pod: testPod, Phase: corev1.PodSucceeded,
				ExitCodes: map[string]int32{"main": 0}, Containers: []string{"main"},
			},
			wantSucceeded: true,
			wantEvents: []string{
				`pod "job-1" is Running`,
				`container "main" is running`,
				`container "main" restarted (restart count 1)`,
				`container "main" is running`,
				`container "main" terminated with exit code 0 (Completed)`,
				`pod "job-1" is Succeeded`,
			},
			wantOut: "first 1\nfirst 2\nfirst 3\nsecond 1\nsecond 2\n",
			check: func(t *testing.T, h *harness) {
				var previous int
				for _, o := range h.kubelet.recorded() {
					if o.Previous {
						previous++
						assert.NotNil(t, o.SinceTime, "the previous instance is read from the last line seen")
					}
				}
				assert.Equal(t, 1, previous, "the replaced instance is read once through Previous: %+v", h.kubelet.recorded())
			},
		},
		{
			name: "log errors are reported once and do not fail the follow",
			pod:  singleRunning,
			setup: func(h *harness) {
				h.kubelet.setFail(errConnRefused)
			},
			drive: func(h *harness) {
				h.kubelet.waitFor(h.t, "a failed open", func(k *fakeKubelet) bool { return len(k.opens) == 1 })
				h.stepWhenWaiting(DefaultRetryDelay)
				h.kubelet.waitFor(h.t, "a retried open", func(k *fakeKubelet) bool { return len(k.opens) == 2 })
				h.update(withStatus(corev1.PodSucceeded, terminated("main", "c1", 0, 0, "Completed")))
			},
			wantResult: Result{
				Pod: testPod, Phase: corev1.PodSucceeded,
				ExitCodes: map[string]int32{"main": 0}, Containers: []string{"main"},
			},
			wantSucceeded: true,
			wantEvents: []string{
				`pod "job-1" is Running`,
				`container "main" is running`,
				`cannot stream logs of container "main": open log stream: ` + errConnRefused.Error(),
				`container "main" terminated with exit code 0 (Completed)`,
				`pod "job-1" is Succeeded`,
			},
			check: func(t *testing.T, h *harness) {
				assert.Len(t, h.kubelet.recorded(), 3, "two opens while running, one final read")
			},
		},
		{
			// NOTE: kwok's streams never end; a kubelet's may outlive the
			// container by a second.
			name: "followed stream that outlives the pod is closed and read to its end",
			pod:  singleRunning,
			setup: func(h *harness) {
				h.kubelet.start("main", "c1")
				h.kubelet.write("main", "working")
				h.kubelet.setHang()
			},
			drive: func(h *harness) {
				h.kubelet.waitFor(h.t, "a followed stream", func(k *fakeKubelet) bool { return len(k.opens) > 0 })
				h.kubelet.write("main", "done")
				h.kubelet.end("main")
				h.update(withStatus(corev1.PodSucceeded, terminated("main", "c1", 0, 0, "Completed")))
				h.stepWhenWaiting(settleTimeout)
			},
			wantResult: Result{
				Pod: testPod, Phase: corev1.PodSucceeded,
				ExitCodes: map[string]int32{"main": 0}, Containers: []string{"main"},
			},
			wantSucceeded: true,
			wantEvents: []string{
				`pod "job-1" is Running`,
				`container "main" is running`,
				`container "main" terminated with exit code 0 (Completed)`,
				`pod "job-1" is Succeeded`,
			},
			wantOut: "working\ndone\n",
			check: func(t *testing.T, h *harness) {
				opens := h.kubelet.recorded()
				require.Len(t, opens, 2, "the followed stream, then one read to the end")
				assert.True(t, opens[0].Follow)
				assert.False(t, opens[1].Follow)
			},
		},
		{
			name: "hung log stream is abandoned after the drain timeout",
			pod:  singleRunning,
			setup: func(h *harness) {
				// NOTE: no lines, so that nothing but the opens counts as
				// log activity while the fake clock steps.
				h.kubelet.start("main", "c1")
				h.kubelet.setHangAll()
			},
			drive: func(h *harness) {
				h.kubelet.waitFor(h.t, "a followed stream", func(k *fakeKubelet) bool { return len(k.opens) > 0 })
				h.kubelet.end("main")
				h.update(withStatus(corev1.PodSucceeded, terminated("main", "c1", 0, 0, "Completed")))
				h.stepWhenWaiting(settleTimeout)
				h.kubelet.waitFor(h.t, "a read to the end", func(k *fakeKubelet) bool { return len(k.opens) > 1 })
				h.stepWhenWaiting(DefaultDrainTimeout)
			},
			wantResult: Result{
				Pod: testPod, Phase: corev1.PodSucceeded,
				ExitCodes: map[string]int32{"main": 0}, Containers: []string{"main"},
			},
			wantSucceeded: true,
			wantEvents: []string{
				`pod "job-1" is Running`,
				`container "main" is running`,
				`container "main" terminated with exit code 0 (Completed)`,
				`pod "job-1" is Succeeded`,
				`log streams idle for 5s after the pod finished; output may be incomplete`,
			},
		},
		{
			name: "pod created after the follow starts",
			drive: func(h *harness) {
				if !h.waitEvent(EventPodMissing) {
					return
				}
				h.kubelet.start("main", "c1")
				h.kubelet.write("main", "late")
				h.kubelet.end("main")
				h.create(podWith(single, withStatus(corev1.PodSucceeded, terminated("main", "c1", 0, 0, "Completed"))))
			},
			wantResult: Result{
				Pod: testPod, Phase: corev1.PodSucceeded,
				ExitCodes: map[string]int32{"main": 0}, Containers: []string{"main"},
			},
			wantSucceeded: true,
			wantEvents: []string{
				`pod "job-1" does not exist yet; waiting for it to be created`,
				`container "main" terminated with exit code 0 (Completed)`,
				`pod "job-1" is Succeeded`,
			},
			wantOut: "late\n",
		},
		{
			name:    "missing pod with RequireExisting",
			opts:    FollowOptions{RequireExisting: true},
			noWatch: true,
			wantErr: ErrPodNotFound,
		},
		{
			name: "selector follows the one matching pod",
			pod: podWith(single, func(p *corev1.Pod) {
				withStatus(corev1.PodFailed, terminated("main", "c1", 0, 137, "OOMKilled"))(p)
			}),
			selector: labels.SelectorFromSet(labels.Set{"job": "deploy"}),
			setup: func(h *harness) {
				h.kubelet.start("main", "c1")
				h.kubelet.write("main", "allocating")
				h.kubelet.end("main")
			},
			wantResult: Result{
				Pod: testPod, Phase: corev1.PodFailed, Reason: "OOMKilled",
				ExitCodes: map[string]int32{"main": 137}, Containers: []string{"main"},
			},
			wantEvents: []string{
				`container "main" terminated with exit code 137 (OOMKilled)`,
				`pod "job-1" is Failed`,
			},
			wantOut: "allocating\n",
		},
		{
			name:     "selector matching two pods",
			pod:      single,
			others:   []runtime.Object{podWith(single, func(p *corev1.Pod) { p.Name = "job-2" })},
			selector: labels.SelectorFromSet(labels.Set{"job": "deploy"}),
			noWatch:  true,
			wantErr:  ErrAmbiguousSelector,
		},
	}

	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			var objects []runtime.Object
			if tc.pod != nil {
				objects = append(objects, tc.pod.DeepCopy())
			}
			objects = append(objects, tc.others...)
			h := newHarness(t, objects...)
			if tc.setup != nil {
				tc.setup(h)
			}
			// NOTE: the timeout is a safety net so that a broken case fails
			// instead of hanging; no case depends on it.
			ctx, cancel := context.WithTimeout(t.Context(), 30*time.Second)
			defer cancel()
			h.cancel = cancel

			opts := tc.opts
			opts.Out, opts.OnEvent = h, h.onEvent
			driven := make(chan struct{})
			go func() {
				defer close(driven)
				if tc.noWatch || !h.nextWatch() {
					return
				}
				if tc.drive != nil {
					tc.drive(h)
				}
			}()

			res, err := h.follower(tc.selector, nil).Follow(ctx, opts)
			if !tc.noWatch {
				<-driven
			}

			switch {
			case tc.wantCanceled:
				require.ErrorIs(t, err, context.Canceled)
			case tc.wantErr != nil:
				require.ErrorIs(t, err, tc.wantErr)
			default:
				require.NoError(t, err)
				assert.Equal(t, tc.wantResult, res)
				assert.Equal(t, tc.wantSucceeded, res.Succeeded(), "Result.Succeeded of %+v", res)
			}
			if tc.wantEvents != nil {
				assert.Equal(t, tc.wantEvents, h.eventLines())
			}
			if tc.wantOut != "" {
				assert.Equal(t, tc.wantOut, h.output())
			}
			if tc.check != nil {
				tc.check(t, h)
			}
		})
	}
}

func TestFollowWithoutOut(t *testing.T) {
	t.Parallel()
	pod := podWith(newPod(corev1.PodPending, corev1.RestartPolicyNever, "main"),
		withStatus(corev1.PodSucceeded, terminated("main", "c1", 0, 0, "Completed")))
	h := newHarness(t, pod)
	go h.nextWatch()

	res, err := h.follower(nil, nil).Follow(t.Context(), FollowOptions{})

	require.NoError(t, err)
	assert.True(t, res.Succeeded())
	assert.Empty(t, h.kubelet.recorded(), "no Out, no log requests")
}

func TestFollowLogsThroughLogger(t *testing.T) {
	t.Parallel()
	pod := podWith(newPod(corev1.PodPending, corev1.RestartPolicyNever, "main"),
		withStatus(corev1.PodSucceeded, terminated("main", "c1", 0, 0, "Completed")))
	h := newHarness(t, pod)
	h.kubelet.setFail(errConnRefused)
	go h.nextWatch()
	var logs clitest.SyncBuffer
	logger := slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))

	_, err := h.follower(nil, logger).Follow(t.Context(), FollowOptions{Out: io.Discard})

	require.NoError(t, err)
	var warnings []string
	for line := range strings.Lines(logs.String()) {
		var e struct{ Level, Msg, Pod, Container string }
		require.NoError(t, json.Unmarshal([]byte(line), &e), "log entry %s", line)
		if e.Level == slog.LevelWarn.String() {
			warnings = append(warnings, e.Msg)
			assert.Equal(t, testNS+"/"+testPod, e.Pod, "log entries name the pod")
			assert.Equal(t, "main", e.Container, "log entries name the container")
		}
	}
	assert.Equal(t, []string{"cannot stream container logs; following the pod without them"}, warnings)
}

func TestResultSucceeded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		result Result
		want   bool
	}{
		{
			name:   "succeeded with every container at 0",
			result: Result{Phase: corev1.PodSucceeded, Containers: []string{"init", "main"}, ExitCodes: map[string]int32{"init": 0, "main": 0}},
			want:   true,
		},
		{
			name:   "succeeded but a container never terminated",
			result: Result{Phase: corev1.PodSucceeded, Containers: []string{"init", "main"}, ExitCodes: map[string]int32{"main": 0}},
		},
		{
			name:   "succeeded with a non-zero exit code",
			result: Result{Phase: corev1.PodSucceeded, Containers: []string{"main"}, ExitCodes: map[string]int32{"main": 1}},
		},
		{
			name:   "failed",
			result: Result{Phase: corev1.PodFailed, Containers: []string{"main"}, ExitCodes: map[string]int32{"main": 0}},
		},
		{
			name:   "zero value",
			result: Result{},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, tc.result.Succeeded(), "Succeeded of %+v", tc.result)
		})
	}
}

func TestStreamerEnded(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		ref    containerRef
		policy corev1.RestartPolicy
		status *corev1.ContainerStatus
		want   bool
	}{
		{name: "no status", ref: containerRef{name: "c"}, policy: corev1.RestartPolicyNever},
		{name: "running", ref: containerRef{name: "c"}, policy: corev1.RestartPolicyNever, status: ptrTo(running("c", "1", 0))},
		{name: "never restarts", ref: containerRef{name: "c"}, policy: corev1.RestartPolicyNever, status: ptrTo(terminated("c", "1", 0, 1, "Error")), want: true},
		{name: "on failure, exit 0", ref: containerRef{name: "c"}, policy: corev1.RestartPolicyOnFailure, status: ptrTo(terminated("c", "1", 0, 0, "Completed")), want: true},
		{name: "on failure, exit 1 restarts", ref: containerRef{name: "c"}, policy: corev1.RestartPolicyOnFailure, status: ptrTo(terminated("c", "1", 0, 1, "Error"))},
		{name: "always restarts", ref: containerRef{name: "c"}, policy: corev1.RestartPolicyAlways, status: ptrTo(terminated("c", "1", 0, 0, "Completed"))},
		{name: "init container done", ref: containerRef{name: "i", init: true}, policy: corev1.RestartPolicyAlways, status: ptrTo(terminated("i", "1", 0, 0, "Completed")), want: true},
		{name: "init container failed, restarted", ref: containerRef{name: "i", init: true}, policy: corev1.RestartPolicyOnFailure, status: ptrTo(terminated("i", "1", 0, 1, "Error"))},
		{name: "init container failed, never restarted", ref: containerRef{name: "i", init: true}, policy: corev1.RestartPolicyNever, status: ptrTo(terminated("i", "1", 0, 1, "Error")), want: true},
		{name: "sidecar", ref: containerRef{name: "s", init: true, sidecar: true}, policy: corev1.RestartPolicyNever, status: ptrTo(terminated("s", "1", 0, 0, "Completed"))},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := &streamer{ref: tc.ref}
			pod := newPod(corev1.PodRunning, tc.policy)
			assert.Equal(t, tc.want, s.ended(pod, tc.status), "ended(%s, %+v)", tc.policy, tc.ref)
		})
	}
}

func ptrTo[T any](v T) *T { return &v }

func TestSplitTimestamp(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		line     string
		wantTS   time.Time
		wantRest string
		wantOK   bool
	}{
		{
			name:     "kubelet line",
			line:     "2026-12-02T10:00:01.123456789Z hello world\n",
			wantTS:   time.Date(2026, 12, 2, 10, 0, 1, 123456789, time.UTC),
			wantRest: "hello world\n",
			wantOK:   true,
		},
		{
			name:     "whole second",
			line:     "2026-12-02T10:00:01Z x\n",
			wantTS:   time.Date(2026, 12, 2, 10, 0, 1, 0, time.UTC),
			wantRest: "x\n",
			wantOK:   true,
		},
		{
			name:     "empty line",
			line:     "2026-12-02T10:00:01Z \n",
			wantTS:   time.Date(2026, 12, 2, 10, 0, 1, 0, time.UTC),
			wantRest: "\n",
			wantOK:   true,
		},
		{name: "no timestamp", line: "fake logs", wantRest: "fake logs"},
		{name: "leading space", line: " x\n", wantRest: " x\n"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ts, rest, ok := splitTimestamp([]byte(tc.line))
			assert.Equal(t, tc.wantOK, ok, "line %q", tc.line)
			assert.True(t, tc.wantTS.Equal(ts), "timestamp of %q: got %s", tc.line, ts)
			assert.Equal(t, tc.wantRest, string(rest), "line %q", tc.line)
		})
	}
}

func TestPodLogs(t *testing.T) {
	t.Parallel()
	cs := fake.NewClientset()
	opts := &corev1.PodLogOptions{Container: "main", Timestamps: true, Follow: true}

	rc, err := PodLogs(kubetest.CoreV1(cs.CoreV1())).OpenLogs(t.Context(), testNS, testPod, opts)
	require.NoError(t, err)
	defer func() { _ = rc.Close() }()
	body, err := io.ReadAll(rc)

	require.NoError(t, err)
	assert.Equal(t, "fake logs", string(body), "the fake clientset's fixed body")
	require.Len(t, cs.Actions(), 1)
	action, ok := cs.Actions()[0].(clienttesting.GenericAction)
	require.True(t, ok, "action %T", cs.Actions()[0])
	assert.Equal(t, "log", action.GetSubresource())
	assert.Equal(t, opts, action.GetValue())
}

func TestEventString(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		event Event
		want  string
	}{
		{name: "missing pod", event: Event{Kind: EventPodMissing, Pod: "p"}, want: `pod "p" does not exist yet; waiting for it to be created`},
		{name: "missing pod by selector", event: Event{Kind: EventPodMissing}, want: "no pod matches yet; waiting for it to be created"},
		{name: "phase with reason", event: Event{Kind: EventPhase, Pod: "p", Phase: corev1.PodFailed, Reason: "DeadlineExceeded", Message: "too slow"}, want: `pod "p" is Failed: DeadlineExceeded: too slow`},
		{name: "unschedulable", event: Event{Kind: EventUnschedulable, Pod: "p", Message: "0/1 nodes are available"}, want: `pod "p" cannot be scheduled: 0/1 nodes are available`},
		{name: "waiting with message", event: Event{Kind: EventWaiting, Pod: "p", Container: "c", Reason: "ImagePullBackOff", Message: "no such image"}, want: `container "c" is waiting: ImagePullBackOff: no such image`},
		{name: "init terminated", event: Event{Kind: EventTerminated, Pod: "p", Container: "i", InitContainer: true, ExitCode: 1}, want: `init container "i" terminated with exit code 1`},
		{name: "restarted", event: Event{Kind: EventRestarted, Pod: "p", Container: "c", RestartCount: 3}, want: `container "c" restarted (restart count 3)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tc.want, tc.event.String())
		})
	}
}

func TestChangesUnschedulable(t *testing.T) {
	t.Parallel()
	pod := newPod(corev1.PodPending, corev1.RestartPolicyNever, "main")
	pod.Status.Conditions = []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse,
		Reason: corev1.PodReasonUnschedulable, Message: "0/1 nodes are available: 1 Insufficient cpu.",
	}}

	first := changes(nil, pod)
	again := changes(pod, pod.DeepCopy())

	require.Len(t, first, 2)
	assert.Equal(t, EventUnschedulable, first[1].Kind)
	assert.Equal(t, `pod "job-1" cannot be scheduled: 0/1 nodes are available: 1 Insufficient cpu.`, first[1].String())
	assert.Empty(t, again, "an unchanged pod reports nothing")
}
