package kube

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// ConfigMapWatch says which ConfigMaps WatchConfigMaps follows and how.
type ConfigMapWatch struct {
	// LabelSelector and FieldSelector select the ConfigMaps; empty selects
	// all.
	LabelSelector, FieldSelector string
	// NoWatchList lists without streaming, for a client that cannot serve
	// streaming lists or does not say whether it can.
	NoWatchList bool
	// What names what is watched in an error: "watch <What>: …".
	What string
}

// WatchConfigMaps calls fn with every ConfigMap of cms that w selects, first
// each one there is (as watch.Added), then each change as it happens,
// riding out watch and API server restarts. It runs until ctx ends,
// returning an error naming w.What and wrapping ctx.Err(), or until fn
// returns an error, which it returns as it is.
func WatchConfigMaps(ctx context.Context, cms ListWatcher[*corev1.ConfigMapList], w ConfigMapWatch, fn func(watch.EventType, *corev1.ConfigMap) error) error {
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector, o.FieldSelector = w.LabelSelector, w.FieldSelector
			return cms.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector, o.FieldSelector = w.LabelSelector, w.FieldSelector
			return cms.Watch(ctx, o)
		},
	}
	var fnErr error
	_, err := watchtools.UntilWithSync(ctx, cache.ToListWatcherWithWatchListSemantics(lw, noWatchList(w.NoWatchList)), &corev1.ConfigMap{}, nil,
		func(ev watch.Event) (bool, error) {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				return false, nil
			}
			fnErr = fn(ev.Type, cm)
			return fnErr != nil, nil
		})
	if fnErr != nil {
		return fnErr
	}
	if ctx.Err() != nil {
		// NOTE: UntilWithSync says "timed out waiting for the condition"
		// whatever ended ctx.
		err = ctx.Err()
	}
	if err != nil {
		return fmt.Errorf("watch %s: %w", w.What, err)
	}
	return nil
}

// noWatchList tells an informer whether to list without streaming.
type noWatchList bool

func (n noWatchList) IsWatchListSemanticsUnSupported() bool { return bool(n) }
