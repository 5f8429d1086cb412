package lock

import (
	"context"
	"fmt"

	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// What a reader that keeps its own copy of the lock ConfigMaps (an
// informer, as lockctl dashboard has) needs to show them as status and
// history do, without reading them again.

// ViewOf returns cm as `lockctl status` shows it, judged at the client's
// clock with its FreezeWindows. show is false when cm is no lock, or a free
// lock kept only for its history, which status does not list. A holder in
// a pod costs a read of that pod (and of its node, with Nodes set).
func (c *Client) ViewOf(ctx context.Context, cm *corev1.ConfigMap) (l LockView, show bool) {
	if !record.IsLock(cm) || record.IsFree(cm) {
		return LockView{}, false
	}
	return c.view(ctx, cm), true
}

// HistoryOf returns the history of the lock cm is, as Client.History reads
// it: the current holder and the past holds, newest first.
func HistoryOf(cm *corev1.ConfigMap) (*record.History, error) {
	out := &record.History{Target: cm.Labels[record.TargetLabel], Entries: []record.HistoryEntry{}}
	rec, err := record.Decode(cm)
	if err != nil {
		return nil, err
	}
	out.Target = rec.Target
	if !rec.IsFree() {
		h := rec.Holder
		out.Holder = &record.CurrentHold{Identity: h.Identity, Pod: h.Pod, Since: h.Since, Expires: h.Expires}
	}
	for i := len(rec.History) - 1; i >= 0; i-- {
		out.Entries = append(out.Entries, rec.History[i])
	}
	return out, nil
}

// Records returns the records of the locks of targets, in that order, a
// target without a lock left out; with no target, the records of every
// lock of the lock namespace (of every namespace for a Client made for
// metav1.NamespaceAll), free ones kept for their history included, by
// name, those that cannot be read left out. They are what statistics
// are made from (package stats): the history, the grants and the freezes.
func (c *Client) Records(ctx context.Context, targets ...string) ([]*record.Record, error) {
	var out []*record.Record
	if len(targets) > 0 {
		for _, t := range targets {
			cm, err := c.store.Get(ctx, t)
			if err != nil {
				return nil, err
			}
			if cm == nil {
				continue
			}
			rec, err := c.decode(cm, t)
			if err != nil {
				return nil, err
			}
			out = append(out, rec)
		}
		return out, nil
	}
	sel := labels.SelectorFromSet(labels.Set{record.ManagedByLabel: record.ManagedByValue, record.KindLabel: record.KindValue}).String()
	opts := metav1.ListOptions{LabelSelector: sel, Limit: listPageSize}
	for {
		list, err := c.cms.ConfigMaps(c.namespace).List(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("list locks in namespace %q: %w", c.namespace, err)
		}
		for i := range list.Items {
			if rec, err := record.Decode(&list.Items[i]); err == nil {
				out = append(out, rec)
			}
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}
