package lock

import (
	"context"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/utils/clock"
)

// catchUp bounds how long a release whose write was lost waits for the
// watch of the lock to bring the version that beat it, before it reads
// the lock instead. A lost write means a newer version exists, so the
// watch brings it as soon as the API server sends it; the bound only
// matters when the watch is broken.
const catchUp = 500 * time.Millisecond

// heldWatch is the watch of a held lock, remembering every version it
// brings (see Acquire).
type heldWatch struct {
	w        watch.Interface
	stop     chan struct{}
	done     chan struct{}
	stopOnce sync.Once
}

// keep follows w, a watch of h's lock, remembering every version of the
// lock it brings, until StopWatching. A nil w is no watch.
func (h *Held) keep(w watch.Interface) {
	if w == nil || h.last == nil {
		return
	}
	hw := &heldWatch{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	h.watching = hw
	go func() {
		defer close(hw.done)
		for {
			select {
			case <-hw.stop:
				return
			case ev, ok := <-w.ResultChan():
				if !ok {
					return
				}
				cm, isCM := ev.Object.(*corev1.ConfigMap)
				if isCM && ev.Type != watch.Deleted && cm.Name == h.Name {
					h.remember(cm)
				}
			}
		}
	}()
}

// StopWatching stops the watch of the lock kept while it is held
// (see Acquire); ReleaseHeld does so itself. It may be called
// more than once, and on a Held without a watch.
func (h *Held) StopWatching() {
	if h == nil || h.watching == nil {
		return
	}
	hw := h.watching
	hw.stopOnce.Do(func() {
		close(hw.stop)
		hw.w.Stop()
	})
}

// awaitNewer waits until the watch of h's lock has brought a version newer
// than cm, and reports whether it did: false without a watch, once the
// watch ended, after catchUp or when ctx ends.
func (h *Held) awaitNewer(ctx context.Context, clk clock.WithTicker, cm *corev1.ConfigMap) bool {
	if h.watching == nil {
		return false
	}
	t := clk.NewTimer(catchUp)
	defer t.Stop()
	for {
		h.last.mu.Lock()
		cur := h.last.cm
		if cur != nil && cur.UID == cm.UID && rvOlder(cm.ResourceVersion, cur.ResourceVersion) {
			h.last.mu.Unlock()
			return true
		}
		if h.last.changed == nil {
			h.last.changed = make(chan struct{})
		}
		changed := h.last.changed
		h.last.mu.Unlock()
		select {
		case <-changed:
		case <-h.watching.done:
			return false
		case <-t.C():
			return false
		case <-ctx.Done():
			return false
		}
	}
}

// watchFrom watches the lock cm is a version of, from that version on: the
// changes after it, and none before. nil when the watch cannot be started.
func (c *Client) watchFrom(ctx context.Context, cm *corev1.ConfigMap) watch.Interface {
	w, err := c.cms.ConfigMaps(c.namespace).Watch(ctx, metav1.ListOptions{
		FieldSelector:   fields.OneTermEqualSelector("metadata.name", cm.Name).String(),
		ResourceVersion: cm.ResourceVersion,
	})
	if err != nil {
		c.log.Debug("cannot watch the lock while releasing it; reading it instead", "lock", cm.Namespace+"/"+cm.Name, "err", err)
		return nil
	}
	return w
}
