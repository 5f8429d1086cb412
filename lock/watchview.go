package lock

import (
	"context"
	"fmt"

	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/watch"
)

// WatchOptions say which locks Watch follows and what the caller has
// shown already.
type WatchOptions struct {
	// Target is the namespace whose lock to follow; "" follows every lock
	// of the client's namespace (of every namespace for a client made for
	// metav1.NamespaceAll).
	Target string
	// Shown are the resourceVersions of the locks the caller has shown,
	// by namespace/name: the versions the watch's first list brings
	// again are not passed on.
	Shown map[string]string
}

// Watch calls fn with the view of a lock (as Get and List make it) each
// time it changes, until ctx ends (it then returns an error wrapping
// ctx.Err()) or fn returns an error, which it returns. A lock deleted, or
// released and kept for its history, is passed on in state free. Like a
// wait it rides out watch and API server restarts.
func (c *Client) Watch(ctx context.Context, opts WatchOptions, fn func(LockView) error) error {
	return c.watchLocks(ctx, opts, func(ev watch.EventType, cm *corev1.ConfigMap) error {
		if ev == watch.Deleted {
			return fn(c.freeView(cm))
		}
		return fn(c.view(ctx, cm))
	})
}

// WatchHistory calls fn with the history of target's lock (as History
// reads it) each time the lock changes, until ctx ends or fn returns an
// error, as Watch does. A deleted lock has an empty history.
func (c *Client) WatchHistory(ctx context.Context, target string, fn func(*record.History) error) error {
	return c.watchLocks(ctx, WatchOptions{Target: target}, func(ev watch.EventType, cm *corev1.ConfigMap) error {
		h := c.newHistory(target)
		if ev != watch.Deleted {
			rec, err := c.decode(cm, target)
			if err != nil {
				return err
			}
			h.Fill(rec)
		}
		return fn(h)
	})
}

// watchLocks calls fn with every change to the locks opts selects after
// those shown.
func (c *Client) watchLocks(ctx context.Context, opts WatchOptions, fn func(watch.EventType, *corev1.ConfigMap) error) error {
	sel := labels.SelectorFromSet(labels.Set{record.ManagedByLabel: record.ManagedByValue, record.KindLabel: record.KindValue}).String()
	var fieldSel string
	if opts.Target != "" {
		fieldSel = fields.OneTermEqualSelector("metadata.name", record.Name(opts.Target)).String()
	}
	seen := make(map[string]string, len(opts.Shown))
	for k, v := range opts.Shown {
		seen[k] = v
	}
	w := kube.ConfigMapWatch{
		LabelSelector: sel,
		FieldSelector: fieldSel,
		// NOTE: a plain LIST then WATCH, not a streaming list: a lock
		// namespace has few locks, and the clients the lock package is
		// given (wrapped, or fakes) do not all say whether they can stream.
		NoWatchList: true,
		What:        fmt.Sprintf("locks in namespace %q", c.namespace),
	}
	return kube.WatchConfigMaps(ctx, c.cms.ConfigMaps(c.namespace), w, func(t watch.EventType, cm *corev1.ConfigMap) error {
		if !record.IsLock(cm) {
			return nil
		}
		key := cm.Namespace + "/" + cm.Name
		if t != watch.Deleted && seen[key] == cm.ResourceVersion {
			return nil // the first list: shown already
		}
		seen[key] = cm.ResourceVersion
		return fn(t, cm)
	})
}

// freeView is the view of the lock cm was once: deleted, so free.
func (c *Client) freeView(cm *corev1.ConfigMap) LockView {
	target := cm.Labels[record.TargetLabel]
	if rec, err := record.Decode(cm); err == nil {
		target = rec.Target
	}
	return LockView{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: kindLock},
		ObjectMeta: metav1.ObjectMeta{Name: cm.Name, Namespace: cm.Namespace, UID: cm.UID},
		Spec:       LockViewSpec{Context: c.opts.Context, Target: target},
		Status:     LockViewStatus{State: StateFree, Liveness: "free"},
	}
}
