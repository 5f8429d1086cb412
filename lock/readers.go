package lock

import (
	"context"
	"time"

	corev1 "k8s.io/api/core/v1"
)

// What a reader that keeps its own copy of the lock ConfigMaps (an
// informer, as lockctl dashboard has) needs to show them as status and
// history do, without reading them again.

// ViewOf returns cm as `lockctl status` shows it, judged at the client's
// clock with its FreezeWindows. show is false when cm is no lock, or a free
// lock kept only for its history, which status does not list. A holder in
// a pod costs a read of that pod (and of its node, with Nodes set).
func (c *Client) ViewOf(ctx context.Context, cm *corev1.ConfigMap) (l LockView, show bool) {
	if !isLock(cm) || isFree(cm) {
		return LockView{}, false
	}
	return c.view(ctx, cm), true
}

// HistoryOf returns the history of the lock cm is, as Client.History reads
// it: the current holder and the past holds, newest first.
func HistoryOf(cm *corev1.ConfigMap) (*History, error) {
	out := &History{Target: cm.Labels[TargetLabel], Entries: []HistoryEntry{}}
	rec, err := Decode(cm)
	if err != nil {
		return nil, err
	}
	out.Target = rec.Target
	if !rec.IsFree() {
		h := rec.Holder
		out.Holder = &CurrentHold{Identity: h.Identity, Pod: h.Pod, Since: h.Since, Expires: h.Expires}
	}
	for i := len(rec.History) - 1; i >= 0; i-- {
		out.Entries = append(out.Entries, rec.History[i])
	}
	return out, nil
}

// Applies reports whether w freezes target's lock: w names it, or names no
// target at all.
func (w *FreezeWindow) Applies(target string) bool { return w.applies(target) }

// Next returns the next freeze w makes that is not over at now: the one in
// force, or else the next to start; nil when the schedule never fires again
// (or w was not parsed by ParseFreezeWindows).
func (w *FreezeWindow) Next(now time.Time) *Freeze {
	if f := w.activeAt(now); f != nil {
		return f
	}
	if w.sched == nil {
		return nil
	}
	start := w.sched.Next(now.UTC())
	if start.IsZero() {
		return nil
	}
	return w.activeAt(start)
}
