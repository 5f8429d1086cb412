package podwatch

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// fakeKubelet serves container logs the way the kubelet does, for the
// LogOpener seam: lines carry RFC 3339 timestamps, SinceTime has the
// precision of a second (as on the wire), Previous reads the instance before
// the current one, and a followed stream ends when its instance ends. It can
// cut followed streams short, hang them, or fail every open.
type fakeKubelet struct {
	mu        sync.Mutex
	changed   chan struct{} // closed and replaced on every change
	next      time.Time     // timestamp of the next line
	instances map[string][]*fakeInstance
	opens     []corev1.PodLogOptions
	cutNext   map[string]int // the next followed stream of a container ends after n lines
	cuts      int            // streams cut short so far
	hang      bool           // followed streams never end
	hangAll   bool           // no stream ever ends, followed or not
	fail      error          // every open fails with it
}

type fakeInstance struct {
	id    string
	lines []fakeLine
	ended bool
}

type fakeLine struct {
	ts   time.Time
	text string
}

var _ LogOpener = (*fakeKubelet)(nil)

func newFakeKubelet() *fakeKubelet {
	return &fakeKubelet{
		changed:   make(chan struct{}),
		next:      time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC),
		instances: map[string][]*fakeInstance{},
		cutNext:   map[string]int{},
	}
}

// notify must be called with mu held.
func (k *fakeKubelet) notify() {
	close(k.changed)
	k.changed = make(chan struct{})
}

// start starts a new instance of container.
func (k *fakeKubelet) start(container, id string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.instances[container] = append(k.instances[container], &fakeInstance{id: id})
	k.notify()
}

// write appends lines to the current instance of container, 250ms apart, so
// that several lines share a second.
func (k *fakeKubelet) write(container string, texts ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	inst := k.current(container)
	for _, text := range texts {
		inst.lines = append(inst.lines, fakeLine{ts: k.next, text: text})
		k.next = k.next.Add(250 * time.Millisecond)
	}
	k.notify()
}

// writeSameTime appends lines that all carry the same timestamp.
func (k *fakeKubelet) writeSameTime(container string, texts ...string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	inst := k.current(container)
	for _, text := range texts {
		inst.lines = append(inst.lines, fakeLine{ts: k.next, text: text})
	}
	k.next = k.next.Add(250 * time.Millisecond)
	k.notify()
}

// end ends the current instance of container.
func (k *fakeKubelet) end(container string) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.current(container).ended = true
	k.notify()
}

func (k *fakeKubelet) current(container string) *fakeInstance {
	list := k.instances[container]
	if len(list) == 0 {
		panic(fmt.Sprintf("fake kubelet: container %q not started", container))
	}
	return list[len(list)-1]
}

func (k *fakeKubelet) cutNextStream(container string, afterLines int) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.cutNext[container] = afterLines
}

func (k *fakeKubelet) setHang() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.hang = true
}

func (k *fakeKubelet) setHangAll() {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.hang, k.hangAll = true, true
}

func (k *fakeKubelet) setFail(err error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	k.fail = err
}

// recorded returns the options of every open so far.
func (k *fakeKubelet) recorded() []corev1.PodLogOptions {
	k.mu.Lock()
	defer k.mu.Unlock()
	return append([]corev1.PodLogOptions(nil), k.opens...)
}

// waitFor waits until cond, evaluated with mu held, is true.
func (k *fakeKubelet) waitFor(t *testing.T, what string, cond func(k *fakeKubelet) bool) {
	t.Helper()
	// NOTE: a real-time safety net only, so that a broken test fails instead
	// of hanging; nothing here depends on it.
	deadline := time.After(10 * time.Second)
	for {
		k.mu.Lock()
		ok, changed := cond(k), k.changed
		k.mu.Unlock()
		if ok {
			return
		}
		select {
		case <-changed:
		case <-deadline:
			t.Errorf("fake kubelet: timed out waiting for %s", what)
			return
		}
	}
}

func (k *fakeKubelet) OpenLogs(ctx context.Context, _, _ string, opts *corev1.PodLogOptions) (io.ReadCloser, error) {
	k.mu.Lock()
	defer k.mu.Unlock()
	o := *opts
	if o.SinceTime != nil {
		since := *o.SinceTime
		o.SinceTime = &since
	}
	k.opens = append(k.opens, o)
	k.notify()
	if k.fail != nil {
		return nil, k.fail
	}
	list := k.instances[o.Container]
	var inst *fakeInstance
	switch {
	case o.Previous && len(list) >= 2:
		inst = list[len(list)-2]
	case o.Previous:
		return nil, fmt.Errorf("previous terminated container %q not found", o.Container)
	case len(list) == 0:
		return nil, fmt.Errorf("container %q is waiting to start", o.Container)
	default:
		inst = list[len(list)-1]
	}
	cut := 0
	if o.Follow {
		cut = k.cutNext[o.Container]
		delete(k.cutNext, o.Container)
	}
	pr, pw := io.Pipe()
	go k.serve(ctx, inst, o, cut, pw)
	return pr, nil
}

// serve writes the lines of inst to pw, as the kubelet would.
func (k *fakeKubelet) serve(ctx context.Context, inst *fakeInstance, o corev1.PodLogOptions, cut int, pw *io.PipeWriter) {
	var since time.Time
	if o.SinceTime != nil {
		// NOTE: sinceTime travels as RFC 3339 with whole seconds.
		since = o.SinceTime.Time.Truncate(time.Second)
	}
	next, sent := 0, 0
	for {
		k.mu.Lock()
		var batch []fakeLine
		for ; next < len(inst.lines); next++ {
			if l := inst.lines[next]; !l.ts.Before(since) {
				batch = append(batch, l)
			}
		}
		ended, hang, hangAll, changed := inst.ended, k.hang, k.hangAll, k.changed
		k.mu.Unlock()

		for _, l := range batch {
			if _, err := fmt.Fprintf(pw, "%s %s\n", l.ts.Format(time.RFC3339Nano), l.text); err != nil {
				return
			}
			sent++
			if cut > 0 && sent == cut {
				k.mu.Lock()
				k.cuts++
				k.notify()
				k.mu.Unlock()
				_ = pw.Close()
				return
			}
		}
		if !hangAll && (!o.Follow || (ended && !hang)) {
			_ = pw.Close()
			return
		}
		select {
		case <-changed:
		case <-ctx.Done():
			_ = pw.CloseWithError(ctx.Err())
			return
		}
	}
}

var errConnRefused = errors.New("dial tcp 127.0.0.1:10250: connect: connection refused")
