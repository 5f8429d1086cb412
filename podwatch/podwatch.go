package podwatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/base/logutil"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/liveness"
)

var (
	// ErrPodDeleted is returned by Follow when the pod is deleted before it
	// has finished, including when it is replaced by a new pod of the same
	// name (another UID).
	ErrPodDeleted = errors.New("pod deleted before it finished")
	// ErrPodNotFound is returned by Follow when FollowOptions.RequireExisting is set
	// and no pod matches when the follow starts.
	ErrPodNotFound = errors.New("pod not found")
	// ErrAmbiguousSelector is returned by Follow when the label selector of a
	// Follower made by NewForSelector matches more than one pod.
	ErrAmbiguousSelector = errors.New("label selector matches more than one pod")
)

// DefaultDrainTimeout is the FollowOptions.DrainTimeout used when it is zero.
const DefaultDrainTimeout = 5 * time.Second

// DefaultRetryDelay is the FollowOptions.RetryDelay used when it is zero.
const DefaultRetryDelay = time.Second

// maxRetryDelay caps the exponential backoff between log stream re-opens.
const maxRetryDelay = 30 * time.Second

// PrefixMode says when log lines get a "[container] " prefix.
type PrefixMode int

const (
	// PrefixAuto prefixes lines only when the pod has more than one
	// container, init containers included. It is the zero value.
	PrefixAuto PrefixMode = iota
	// PrefixAlways prefixes every line.
	PrefixAlways
	// PrefixNever never prefixes lines.
	PrefixNever
)

// FollowOptions configure one Follow call. The zero value follows the pod
// without streaming logs and without reporting events.
type FollowOptions struct {
	// Out receives the log lines of all containers, timestamps stripped,
	// one whole line per Write. Nil means logs are not read at all.
	Out io.Writer
	// OnEvent is called for every change of the pod's phase and of its
	// containers' states, and for log errors. Calls are never concurrent and
	// never happen after Follow has returned; OnEvent should not block.
	// Nil means events are only logged at debug level.
	OnEvent func(Event)
	// Prefix says when log lines get a "[container] " prefix. The zero value
	// is PrefixAuto.
	Prefix PrefixMode
	// RequireExisting makes Follow return ErrPodNotFound when no pod matches
	// once the initial list is done. False (the default) waits for the pod to
	// be created, for as long as ctx allows.
	RequireExisting bool
	// DrainTimeout bounds the wait for log streams after the pod has
	// finished: a stream that delivers nothing for this long is abandoned,
	// so a hung stream cannot block Follow forever. 0 means
	// DefaultDrainTimeout.
	DrainTimeout time.Duration
	// RetryDelay is the first delay before a log stream that ended or failed
	// while its container was still running is opened again; the delay
	// doubles while re-opens bring nothing, up to 30s. 0 means
	// DefaultRetryDelay.
	RetryDelay time.Duration
}

// Result is the outcome of a pod that has finished.
type Result struct {
	// Pod is the name of the pod followed.
	Pod string
	// Phase is the pod's final phase, Succeeded or Failed.
	Phase corev1.PodPhase
	// ExitCodes maps the name of each container and init container that has
	// terminated to its exit code. A container that never ran is missing.
	ExitCodes map[string]int32
	// Containers lists the names of the init containers and then of the
	// containers of the pod, in spec order.
	Containers []string
	// Reason is the pod's status reason or, when it has none, the reason of
	// the first container (init containers first) that exited with a
	// non-zero code, such as "Error" or "OOMKilled". Empty when neither
	// exists.
	Reason string
	// Message is the pod's status message, if any.
	Message string
	// TakenAway is true when Kubernetes ended the pod through no fault of
	// its own: evicted, or disrupted by taint eviction, preemption or pod
	// garbage collection (liveness.Judge). Its end is then not its job's: the
	// job's reconciler creates the pod again.
	TakenAway bool
}

// Succeeded reports whether the pod Succeeded and every container and init
// container terminated with exit code 0 (SPEC §3: a Succeeded pod whose
// containers did not all finish is not a success).
func (r Result) Succeeded() bool {
	if r.Phase != corev1.PodSucceeded || len(r.Containers) == 0 {
		return false
	}
	for _, name := range r.Containers {
		code, ok := r.ExitCodes[name]
		if !ok || code != 0 {
			return false
		}
	}
	return true
}

// Follower follows one pod. Make it with New or NewForSelector.
type Follower struct {
	clock     clock.Clock
	logs      LogOpener
	pods      kube.PodsGetter
	namespace string
	name      string
	selector  labels.Selector
	log       *slog.Logger // without the pod, which following names
}

// Options configure a Follower. The zero value is usable.
type Options struct {
	// Clock provides time for event stamps, log re-open delays and the
	// drain timeout; nil means clock.RealClock{}.
	Clock clock.Clock
	// Logs opens log streams; nil means PodLogs on the Follower's client.
	Logs LogOpener
	// Log receives what the Follower logs, each entry naming the pod
	// ("pod"); nil means it is discarded.
	Log *slog.Logger
}

// New returns a Follower for the pod called name in namespace.
func New(pods kube.PodsGetter, namespace, name string, o Options) *Follower {
	return newFollower(pods, namespace, name, nil, o)
}

// NewForSelector returns a Follower for the one pod in namespace that
// matches selector. Follow fails with ErrAmbiguousSelector when more than
// one pod matches.
func NewForSelector(pods kube.PodsGetter, namespace string, selector labels.Selector, o Options) *Follower {
	if selector == nil {
		selector = labels.Everything()
	}
	return newFollower(pods, namespace, "", selector, o)
}

func newFollower(pods kube.PodsGetter, namespace, name string, selector labels.Selector, o Options) *Follower {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.Logs == nil {
		o.Logs = PodLogs(pods)
	}
	f := &Follower{
		clock:     o.Clock,
		logs:      o.Logs,
		pods:      pods,
		namespace: namespace,
		name:      name,
		selector:  selector,
		log:       logutil.OrDiscard(o.Log),
	}
	return f
}

// Describe identifies the pod followed, as "namespace/name" or
// "namespace/{selector}".
func (f *Follower) Describe() string {
	if f.name != "" {
		return f.namespace + "/" + f.name
	}
	return f.namespace + "/{" + f.selector.String() + "}"
}

// Follow watches the pod until it is Succeeded or Failed, reporting changes
// through opts.OnEvent and streaming logs to opts.Out, and returns its
// Result once the log streams have drained (see FollowFollowOptions.DrainTimeout).
//
// It returns an error wrapping ErrPodDeleted when the pod is deleted first,
// ErrPodNotFound or ErrAmbiguousSelector as documented on FollowOptions and
// NewForSelector, and ctx.Err() wrapped when ctx is done. Log errors never
// make Follow fail.
func (f *Follower) Follow(ctx context.Context, opts FollowOptions) (Result, error) {
	if opts.DrainTimeout <= 0 {
		opts.DrainTimeout = DefaultDrainTimeout
	}
	if opts.RetryDelay <= 0 {
		opts.RetryDelay = DefaultRetryDelay
	}
	logCtx, cancelLogs := context.WithCancel(ctx)
	r := &following{
		f:        f,
		stopLogs: cancelLogs,
		opts:     opts,
		clock:    f.clock,
		logs:     f.logs,
		name:     f.name,
		log:      f.log.With("pod", f.Describe()),
		state:    newPodState(),
	}
	if opts.Out != nil {
		r.out = &lineWriter{w: opts.Out, log: r.log}
	}
	r.touch()
	defer func() {
		// NOTE: streams still open at this point are abandoned: cancelling
		// closes them, and closing the writer and the emitter guarantees that
		// nothing reaches Out or OnEvent after Follow has returned.
		cancelLogs()
		r.out.close()
		r.closeEvents()
	}()

	_, err := watchtools.UntilWithSync(ctx, f.listWatch(), &corev1.Pod{}, r.precondition,
		func(ev watch.Event) (bool, error) { return r.handle(logCtx, ev) })
	if ctx.Err() != nil {
		return Result{}, fmt.Errorf("follow pod %q: %w", r.describe(), ctx.Err())
	}
	if err != nil {
		return Result{}, err
	}
	if err := r.drain(ctx); err != nil {
		return Result{}, fmt.Errorf("follow pod %q: %w", r.describe(), err)
	}
	return r.result, nil
}

// listWatch lists and watches the pod by name (a field selector) or by the
// label selector.
func (f *Follower) listWatch() cache.ListerWatcher {
	restrict := func(o *metav1.ListOptions) {
		if f.name != "" {
			o.FieldSelector = fields.OneTermEqualSelector("metadata.name", f.name).String()
		} else {
			o.LabelSelector = f.selector.String()
		}
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			restrict(&o)
			return f.pods.Pods(f.namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			restrict(&o)
			return f.pods.Pods(f.namespace).Watch(ctx, o)
		},
	}
	// NOTE: passing the client lets the reflector skip streaming lists
	// (WatchList) for clients that declare they cannot serve them, such as
	// client-go's fakes.
	return cache.ToListWatcherWithWatchListSemantics(lw, f.pods)
}

// following is the state of one Follow call.
type following struct {
	f        *Follower
	stopLogs context.CancelFunc // stops the log streams
	opts     FollowOptions
	clock    clock.Clock
	logs     LogOpener
	log      *slog.Logger

	// name is the pod followed; with a selector it is set by the first event.
	name   string
	prev   *corev1.Pod
	result Result

	state *podState
	out   *lineWriter // nil when logs are not streamed

	streamsDone chan struct{} // nil until the streams are started
	lastActive  atomic.Int64  // unix nanoseconds of the last log activity
	finishedAt  atomic.Int64  // unix nanoseconds when the pod was seen finished

	eventsMu     sync.Mutex
	eventsClosed bool
}

func (r *following) describe() string {
	if r.name != "" {
		return r.f.namespace + "/" + r.name
	}
	return r.f.Describe()
}

// precondition runs once the initial list is in the cache.
func (r *following) precondition(store cache.Store) (bool, error) {
	n := len(store.List())
	switch {
	case n > 1 && r.f.name == "":
		return false, fmt.Errorf("follow pod %q: %w", r.describe(), ErrAmbiguousSelector)
	case n == 0 && r.opts.RequireExisting:
		return false, fmt.Errorf("follow pod %q: %w", r.describe(), ErrPodNotFound)
	case n == 0:
		r.emit(Event{Kind: EventPodMissing, Pod: r.name})
	}
	return false, nil
}

// handle is the watch condition: it reports what changed and is done when
// the pod has finished.
func (r *following) handle(ctx context.Context, ev watch.Event) (bool, error) {
	switch ev.Type {
	case watch.Added, watch.Modified:
	case watch.Deleted:
	default:
		// NOTE: the informer behind UntilWithSync handles watch errors and
		// bookmarks itself; nothing else is expected here.
		r.log.Debug("ignoring watch event", "event", ev.Type)
		return false, nil
	}
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok {
		r.log.Debug("ignoring unexpected object", "object", fmt.Sprintf("%T", ev.Object))
		return false, nil
	}
	if r.name == "" && ev.Type != watch.Deleted {
		r.name = pod.Name
		r.log = r.f.log.With("pod", r.describe())
	}
	if pod.Name != r.name {
		if r.f.name == "" && ev.Type != watch.Deleted {
			return false, fmt.Errorf("follow pod %q: %w (%q and %q)", r.f.Describe(), ErrAmbiguousSelector, r.name, pod.Name)
		}
		return false, nil
	}

	// NOTE: a pod deleted and created again under the same name between
	// two lists reaches us as a mere update; its new UID gives it away.
	replaced := r.prev != nil && r.prev.UID != "" && pod.UID != r.prev.UID
	if ev.Type == watch.Deleted || replaced {
		deleted := pod
		if replaced {
			deleted = r.prev
		}
		r.stopLogs()
		r.emit(Event{Kind: EventDeleted, Pod: deleted.Name, Phase: deleted.Status.Phase})
		return false, fmt.Errorf("follow pod %q: %w", r.describe(), ErrPodDeleted)
	}

	if r.prev == nil && r.out != nil {
		r.startStreams(ctx, pod)
	}
	for _, e := range changes(r.prev, pod) {
		r.emit(e)
	}
	r.prev = pod
	if finished(pod) {
		r.result = resultOf(pod)
		// NOTE: the drain timeout counts from here, so touch before the
		// streams see the final state.
		r.touch()
		r.finishedAt.Store(r.clock.Now().UnixNano())
	}
	r.state.set(pod)
	return finished(pod), nil
}

// emit stamps e and hands it to OnEvent.
func (r *following) emit(e Event) {
	e.Time = r.clock.Now()
	r.eventsMu.Lock()
	defer r.eventsMu.Unlock()
	if r.eventsClosed {
		return
	}
	r.log.Debug(e.String(), "event", string(e.Kind), "container", e.Container)
	if r.opts.OnEvent != nil {
		r.opts.OnEvent(e)
	}
}

func (r *following) closeEvents() {
	r.eventsMu.Lock()
	defer r.eventsMu.Unlock()
	r.eventsClosed = true
}

// touch records log activity for the drain timeout.
func (r *following) touch() {
	r.lastActive.Store(r.clock.Now().UnixNano())
}

// drain waits for the log streams to finish after the pod has, abandoning
// them once they have been idle for the drain timeout.
func (r *following) drain(ctx context.Context) error {
	if r.streamsDone == nil {
		return nil
	}
	for {
		idle := r.clock.Since(time.Unix(0, r.lastActive.Load()))
		if idle >= r.opts.DrainTimeout {
			r.log.Warn("log streams still open after the pod finished; giving up on them", "timeout", r.opts.DrainTimeout)
			r.emit(Event{Kind: EventLogError, Pod: r.name, Phase: r.result.Phase,
				Message: fmt.Sprintf("log streams idle for %s after the pod finished; output may be incomplete", r.opts.DrainTimeout)})
			return nil
		}
		timer := r.clock.NewTimer(r.opts.DrainTimeout - idle)
		select {
		case <-r.streamsDone:
			timer.Stop()
			return nil
		case <-ctx.Done():
			timer.Stop()
			return ctx.Err()
		case <-timer.C():
		}
	}
}

// podState shares the latest pod with the log streams and wakes them when it
// changes.
type podState struct {
	mu      sync.Mutex
	pod     *corev1.Pod
	changed chan struct{}
}

func newPodState() *podState {
	return &podState{changed: make(chan struct{})}
}

// get returns the latest pod and a channel closed at the next change.
func (s *podState) get() (*corev1.Pod, <-chan struct{}) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.pod, s.changed
}

func (s *podState) set(pod *corev1.Pod) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pod = pod
	close(s.changed)
	s.changed = make(chan struct{})
}

// finished reports whether the pod has reached a terminal phase.
func finished(pod *corev1.Pod) bool {
	return pod != nil && (pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed)
}

// resultOf summarises a finished pod.
func resultOf(pod *corev1.Pod) Result {
	res := Result{
		Pod:       pod.Name,
		Phase:     pod.Status.Phase,
		ExitCodes: map[string]int32{},
		Reason:    pod.Status.Reason,
		Message:   pod.Status.Message,
	}
	if v := liveness.Judge(pod, nil, time.Time{}, liveness.Options{}); v.Evicted || v.Disrupted {
		res.TakenAway = true
	}
	var failedReason string
	for _, c := range allContainers(pod) {
		res.Containers = append(res.Containers, c.name)
		st := containerStatus(pod, c.name, c.init)
		if st == nil {
			continue
		}
		t := st.State.Terminated
		if t == nil {
			t = st.LastTerminationState.Terminated
		}
		if t == nil {
			continue
		}
		res.ExitCodes[c.name] = t.ExitCode
		if t.ExitCode != 0 && failedReason == "" {
			failedReason = t.Reason
		}
	}
	if res.Reason == "" {
		res.Reason = failedReason
	}
	return res
}

// containerRef names a container of the pod spec.
type containerRef struct {
	name    string
	init    bool
	sidecar bool // an init container with restartPolicy Always
}

// allContainers lists the init containers and then the containers of the
// pod, in spec order. Ephemeral containers are left out.
func allContainers(pod *corev1.Pod) []containerRef {
	refs := make([]containerRef, 0, len(pod.Spec.InitContainers)+len(pod.Spec.Containers))
	for _, c := range pod.Spec.InitContainers {
		sidecar := c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways
		refs = append(refs, containerRef{name: c.Name, init: true, sidecar: sidecar})
	}
	for _, c := range pod.Spec.Containers {
		refs = append(refs, containerRef{name: c.Name})
	}
	return refs
}

// containerStatus returns the status of the named container, or nil.
func containerStatus(pod *corev1.Pod, name string, init bool) *corev1.ContainerStatus {
	if pod == nil {
		return nil
	}
	statuses := pod.Status.ContainerStatuses
	if init {
		statuses = pod.Status.InitContainerStatuses
	}
	for i := range statuses {
		if statuses[i].Name == name {
			return &statuses[i]
		}
	}
	return nil
}
