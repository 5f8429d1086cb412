package podwatch

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strconv"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/kube"
)

// LogOpener opens a stream of the logs of one container of a pod.
//
// Follow always asks for Timestamps and relies on them, and on SinceTime, to
// re-open a stream without repeating lines: an implementation must prefix
// every line with its RFC 3339 timestamp and a space, as the kubelet does.
// Lines without a parsable timestamp are written as they are, but may then be
// repeated after a re-open.
type LogOpener interface {
	OpenLogs(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error)
}

// LogOpenerFunc adapts a function to a LogOpener.
type LogOpenerFunc func(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error)

// OpenLogs calls f.
func (f LogOpenerFunc) OpenLogs(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return f(ctx, namespace, pod, opts)
}

var (
	_ LogOpener = LogOpenerFunc(nil)
	_ LogOpener = podLogs{}
)

// PodLogs returns the LogOpener that reads logs from the pods/log
// subresource through the API server. It is the default of New.
func PodLogs(pods kube.PodsGetter) LogOpener {
	return podLogs{pods: pods}
}

type podLogs struct {
	pods kube.PodsGetter
}

func (p podLogs) OpenLogs(ctx context.Context, namespace, pod string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	return p.pods.Pods(namespace).GetLogs(pod, opts).Stream(ctx)
}

// startStreams starts one log stream per container of pod. Regular init
// containers are chained in spec order; the main containers wait for all of
// them; sidecars wait for the regular init containers before them only.
func (r *following) startStreams(ctx context.Context, pod *corev1.Pod) {
	refs := allContainers(pod)
	prefixed := r.opts.Prefix == PrefixAlways || (r.opts.Prefix == PrefixAuto && len(refs) > 1)
	var (
		wg    sync.WaitGroup
		after []<-chan struct{}
	)
	for _, c := range refs {
		s := &streamer{
			r:     r,
			ref:   c,
			after: after,
			done:  make(chan struct{}),
			log:   r.log.With("container", c.name),
		}
		if prefixed {
			s.prefix = "[" + c.name + "] "
		}
		if c.init && !c.sidecar {
			after = append(after[:len(after):len(after)], s.done)
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			s.run(ctx)
		}()
	}
	r.streamsDone = make(chan struct{})
	go func() {
		wg.Wait()
		close(r.streamsDone)
	}()
}

// streamer follows the logs of one container across re-opens and restarts.
type streamer struct {
	r      *following
	ref    containerRef
	prefix string
	after  []<-chan struct{} // streams to finish before this one starts
	done   chan struct{}
	log    *slog.Logger

	// lastTS is the timestamp of the last line written and atLast how many
	// lines with exactly that timestamp were written: a re-opened stream
	// starts at the second of lastTS, and those lines are skipped.
	lastTS time.Time
	atLast int

	// instance identifies the container instance streamed last, and
	// complete says that it has been read to its end.
	instance string
	complete bool
	reported bool

	// active is when this stream last read a line (unix nanoseconds).
	active atomic.Int64
}

// settleTimeout is how long a followed stream may stay idle once the pod has
// finished before it is closed and read once more without following. A
// kubelet ends the stream itself within about a second of the container's
// end; some (kwok) never do. The second read starts where the first one
// stopped, so closing early loses nothing.
const settleTimeout = time.Second

// errSettled stops a followed stream that outlived its pod.
var errSettled = errors.New("log stream outlived the pod")

func (s *streamer) run(ctx context.Context) {
	defer close(s.done)
	for _, ch := range s.after {
		select {
		case <-ch:
		case <-ctx.Done():
			return
		}
	}
	delay := s.r.opts.RetryDelay
	for ctx.Err() == nil {
		pod, changed := s.r.state.get()
		st := containerStatus(pod, s.ref.name, s.ref.init)
		final := finished(pod)
		current, started, terminated := instanceOf(st)
		retry, pause := false, time.Duration(0)

		// The instance streamed so far stopped or was replaced before its
		// stream was read to the end: read the rest as the previous instance.
		//
		// NOTE: the kubelet keeps one previous instance only. When that is
		// not the one streamed, the container restarted more than once in
		// between: the previous instance is still read (its lines are newer
		// than the last one seen, so nothing repeats), but lines of the
		// instances in between are lost.
		if s.instance != "" && !s.complete && (!started || current != s.instance) {
			if prev := previousOf(st); prev != "" {
				if prev != s.instance {
					s.log.Warn("container restarted more than once while its logs were not read; some lines are missing", "instance", prev)
				}
				if _, err := s.read(ctx, true, false); err != nil {
					s.report(ctx, err)
				}
			} else {
				s.log.Warn("container instance replaced before its logs were read to the end; some lines may be missing")
			}
			s.complete = true
		}

		// Stream the current instance, following it while it runs.
		if started && (current != s.instance || !s.complete) {
			if current != s.instance {
				s.instance, s.complete = current, false
			}
			follow := !terminated && !final
			n, err := s.read(ctx, false, follow)
			if err != nil {
				s.report(ctx, err)
			}
			switch {
			case ctx.Err() != nil:
				return
			case !follow:
				// NOTE: one attempt only for an instance that has ended, so
				// that a broken log endpoint cannot hold up the streams
				// chained after this one.
				s.complete = true
			default:
				// The stream ended or broke while the container ran, or
				// before its status caught up with its end.
				retry = true
				if n > 0 && err == nil {
					delay = s.r.opts.RetryDelay
				}
				pause = delay
				delay = min(2*delay, maxRetryDelay)
			}
		}

		if final || (s.ended(pod, st) && (s.instance == "" || s.complete)) {
			return
		}

		if !s.wait(ctx, changed, retry, pause) {
			return
		}
	}
}

// wait waits for the pod to change or, with retry, for delay to pass. It
// returns false when ctx is done.
func (s *streamer) wait(ctx context.Context, changed <-chan struct{}, retry bool, delay time.Duration) bool {
	var timeout <-chan time.Time
	if retry {
		t := s.r.clock.NewTimer(delay)
		defer t.Stop()
		timeout = t.C()
	}
	select {
	case <-changed:
	case <-timeout:
	case <-ctx.Done():
		return false
	}
	return true
}

// ended reports whether the container has ended for good: terminated and not
// going to be restarted.
func (s *streamer) ended(pod *corev1.Pod, st *corev1.ContainerStatus) bool {
	if st == nil || st.State.Terminated == nil || s.ref.sidecar {
		return false
	}
	ok := st.State.Terminated.ExitCode == 0
	switch {
	case s.ref.init:
		return ok || pod.Spec.RestartPolicy == corev1.RestartPolicyNever
	case pod.Spec.RestartPolicy == corev1.RestartPolicyNever:
		return true
	case pod.Spec.RestartPolicy == corev1.RestartPolicyOnFailure:
		return ok
	}
	return false
}

// instanceOf identifies the container's current instance and says whether
// it has started and whether it has terminated.
func instanceOf(st *corev1.ContainerStatus) (id string, started, terminated bool) {
	if st == nil {
		return "", false, false
	}
	switch {
	case st.State.Terminated != nil:
		id = st.State.Terminated.ContainerID
		terminated = true
	case st.State.Running != nil:
		id = st.ContainerID
	default:
		return "", false, false
	}
	if id == "" {
		id = st.ContainerID
	}
	if id == "" {
		// NOTE: some fakes (kwok) leave container IDs empty.
		id = "#" + strconv.Itoa(int(st.RestartCount))
	}
	return id, true, terminated
}

// previousOf identifies the instance the kubelet serves with Previous.
func previousOf(st *corev1.ContainerStatus) string {
	if st == nil || st.LastTerminationState.Terminated == nil {
		return ""
	}
	if id := st.LastTerminationState.Terminated.ContainerID; id != "" {
		return id
	}
	return "#" + strconv.Itoa(int(st.RestartCount)-1)
}

// report logs a log error; only the first one of a container becomes an
// event and a warning.
func (s *streamer) report(ctx context.Context, err error) {
	if ctx.Err() != nil {
		return
	}
	if s.reported {
		s.log.Debug("log stream failed again", "err", err)
		return
	}
	s.reported = true
	s.log.Warn("cannot stream container logs; following the pod without them", "err", err)
	pod, _ := s.r.state.get()
	e := Event{Kind: EventLogError, Pod: s.r.name, Container: s.ref.name, InitContainer: s.ref.init, Message: err.Error()}
	if pod != nil {
		e.Phase = pod.Status.Phase
	}
	s.r.emit(e)
}

// read opens one stream and writes the lines not written before. A line cut
// short by the end of a followed stream is left for the next read, which
// starts at its second. It returns how many lines were written.
func (s *streamer) read(ctx context.Context, previous, follow bool) (int, error) {
	if follow {
		var cancel context.CancelCauseFunc
		ctx, cancel = context.WithCancelCause(ctx)
		defer cancel(nil)
		go s.closeWhenSettled(ctx, cancel)
	}
	opts := &corev1.PodLogOptions{Container: s.ref.name, Follow: follow, Previous: previous, Timestamps: true}
	if !s.lastTS.IsZero() {
		since := metav1.NewTime(s.lastTS)
		opts.SinceTime = &since
	}
	s.r.touch()
	rc, err := s.r.logs.OpenLogs(ctx, s.r.f.namespace, s.r.name, opts)
	if err != nil {
		return 0, fmt.Errorf("open log stream: %w", err)
	}
	// NOTE: closing on cancel unblocks a Read that ignores ctx.
	stop := context.AfterFunc(ctx, func() { _ = rc.Close() })
	defer func() {
		stop()
		_ = rc.Close()
	}()

	br := bufio.NewReaderSize(rc, 64*1024)
	skip := s.atLast
	n := 0
	for {
		line, err := br.ReadBytes('\n')
		if len(line) > 0 {
			s.r.touch()
			s.active.Store(s.r.clock.Now().UnixNano())
			if err == nil || !follow {
				if s.write(line, &skip) {
					n++
				}
			}
		}
		switch {
		case err == nil:
		case errors.Is(err, io.EOF):
			return n, nil
		case errors.Is(context.Cause(ctx), errSettled):
			return n, nil
		case ctx.Err() != nil:
			return n, ctx.Err()
		default:
			return n, fmt.Errorf("read log stream: %w", err)
		}
	}
}

// closeWhenSettled stops a followed read (cancel) once the pod has finished
// and the stream has been idle for settleTimeout since then.
func (s *streamer) closeWhenSettled(ctx context.Context, cancel context.CancelCauseFunc) {
	for {
		pod, changed := s.r.state.get()
		if finished(pod) {
			break
		}
		select {
		case <-changed:
		case <-ctx.Done():
			return
		}
	}
	finishedAt := time.Unix(0, s.r.finishedAt.Load())
	for {
		since := finishedAt
		if last := time.Unix(0, s.active.Load()); last.After(since) {
			since = last
		}
		idle := s.r.clock.Since(since)
		if idle >= settleTimeout {
			s.log.Debug("log stream still open after the pod finished; reading the rest without following")
			cancel(errSettled)
			return
		}
		t := s.r.clock.NewTimer(settleTimeout - idle)
		select {
		case <-t.C():
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
}

// write strips the timestamp from line and writes it, unless it was written
// before. skip counts the lines at exactly lastTS still to be skipped.
func (s *streamer) write(line []byte, skip *int) bool {
	text := line
	if ts, rest, ok := splitTimestamp(line); ok {
		switch {
		case ts.Before(s.lastTS):
			return false
		case ts.Equal(s.lastTS):
			if *skip > 0 {
				*skip--
				return false
			}
			s.atLast++
		default:
			s.lastTS, s.atLast, *skip = ts, 1, 0
		}
		text = rest
	}
	s.r.out.writeLine(s.prefix, text)
	return true
}

// splitTimestamp splits a kubelet log line "2006-01-02T15:04:05.999999999Z text".
func splitTimestamp(line []byte) (time.Time, []byte, bool) {
	i := bytes.IndexByte(line, ' ')
	if i <= 0 {
		return time.Time{}, line, false
	}
	ts, err := time.Parse(time.RFC3339Nano, string(line[:i]))
	if err != nil {
		return time.Time{}, line, false
	}
	return ts, line[i+1:], true
}

// lineWriter writes whole lines to the caller's writer, one at a time, and
// drops them once closed.
type lineWriter struct {
	mu     sync.Mutex
	w      io.Writer
	log    *slog.Logger
	closed bool
	failed bool
	buf    []byte
}

func (lw *lineWriter) writeLine(prefix string, text []byte) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.closed || lw.failed {
		return
	}
	lw.buf = append(append(lw.buf[:0], prefix...), text...)
	if len(lw.buf) == 0 || lw.buf[len(lw.buf)-1] != '\n' {
		lw.buf = append(lw.buf, '\n')
	}
	if _, err := lw.w.Write(lw.buf); err != nil {
		// NOTE: a broken Out (a closed pipe) must not stop the follow; the
		// pod's outcome still matters.
		lw.failed = true
		lw.log.Warn("cannot write container logs; dropping them", "err", err)
	}
}

func (lw *lineWriter) close() {
	if lw == nil {
		return
	}
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.closed = true
}

// NoContainerError is PrintLogs's error for a container the pod does not
// have.
type NoContainerError struct{ Pod, Container string }

func (e *NoContainerError) Error() string {
	return fmt.Sprintf("pod %q has no container %q", e.Pod, e.Container)
}

// PrintLogs writes to w the logs so far of each container of pod that
// started, init containers first, or of the container called only when
// only is set. Lines get a "[container] " prefix when there are several.
func PrintLogs(ctx context.Context, w io.Writer, pods kube.PodsGetter, pod *corev1.Pod, only string) error {
	var names []string
	for _, c := range append(append([]corev1.Container{}, pod.Spec.InitContainers...), pod.Spec.Containers...) {
		if only == "" || c.Name == only {
			names = append(names, c.Name)
		}
	}
	if len(names) == 0 {
		return &NoContainerError{Pod: pod.Name, Container: only}
	}
	var errs []error
	for _, name := range names {
		prefix := ""
		if len(names) > 1 {
			prefix = "[" + name + "] "
		}
		if err := copyLogs(ctx, w, pods, pod, name, prefix); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

func copyLogs(ctx context.Context, w io.Writer, pods kube.PodsGetter, pod *corev1.Pod, container, prefix string) error {
	rc, err := pods.Pods(pod.Namespace).GetLogs(pod.Name, &corev1.PodLogOptions{Container: container}).Stream(ctx)
	if apierrors.IsBadRequest(err) {
		return nil // the container has not started
	}
	if err != nil {
		return fmt.Errorf("logs of container %q: %w", container, err)
	}
	defer rc.Close()
	sc := bufio.NewScanner(rc)
	sc.Buffer(make([]byte, 64*1024), 1024*1024)
	for sc.Scan() {
		fmt.Fprintf(w, "%s%s\n", prefix, sc.Text())
	}
	return sc.Err()
}
