package kube

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
)

// ListWatcher lists and watches one resource in one namespace (or all):
// what a resource client offers for it, such as CoreV1().Pods(ns).
type ListWatcher[L runtime.Object] interface {
	List(ctx context.Context, opts metav1.ListOptions) (L, error)
	Watch(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error)
}

// InformerOptions adjust what NewInformer builds. The zero value lists
// everything, never resyncs and caches objects as they come.
type InformerOptions struct {
	// Resync is the resync period; 0 means none.
	Resync time.Duration
	// Tweak changes the options of every list and watch (a selector); nil
	// changes nothing.
	Tweak func(*metav1.ListOptions)
	// Transform changes every object before it is cached; nil keeps them.
	Transform cache.TransformFunc
}

// NewInformer returns a shared informer of what lw lists and watches, as
// client-go's informer factory builds one for a resource: indexed by
// namespace, and passing on what client (the clientset lw comes from)
// declares about streaming lists (client-go's fakes do not serve them).
// The caller runs it (RunWithContext).
//
// NOTE: lockctl builds its informers here rather than with client-go's
// informers.SharedInformerFactory, which takes the clientset of every API
// group and keeps every group's informers and listers in the binary
// (docs/adr/0064).
func NewInformer[L runtime.Object](client any, lw ListWatcher[L], example runtime.Object, o InformerOptions) cache.SharedIndexInformer {
	tweak := func(opts *metav1.ListOptions) {
		if o.Tweak != nil {
			o.Tweak(opts)
		}
	}
	src := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			tweak(&opts)
			return lw.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			tweak(&opts)
			return lw.Watch(ctx, opts)
		},
	}
	inf := cache.NewSharedIndexInformerWithOptions(cache.ToListWatcherWithWatchListSemantics(src, client), example, cache.SharedIndexInformerOptions{
		ResyncPeriod: o.Resync,
		Indexers:     cache.Indexers{cache.NamespaceIndex: cache.MetaNamespaceIndexFunc},
	})
	if o.Transform != nil {
		// NOTE: SetTransform fails only on an informer already started.
		_ = inf.SetTransform(o.Transform)
	}
	return inf
}
