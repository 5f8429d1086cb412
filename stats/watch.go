package stats

import (
	"context"
	"log/slog"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"

	"github.com/lockctl/lockctl/internal/base/logutil"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock/record"
)

// Observer is told of every version of the lock ConfigMaps WatchLocks
// watches, one at a time, in the order the API server wrote them.
type Observer interface {
	// ObserveLock is told of a lock as created or changed; initial is
	// true for the locks of the first list, which were there before.
	ObserveLock(cm *corev1.ConfigMap, initial bool)
	// ForgetLock is told of a lock deleted.
	ForgetLock(cm *corev1.ConfigMap)
}

// WatchLocks lists and watches the lock ConfigMaps of namespace
// (metav1.NamespaceAll: of every namespace) and tells the observers of
// each, until ctx ends; synced, when set, is called once the first list
// has been told. Errors of the watch are logged to log (nil discards) and
// the watch is made again, as an informer does.
func WatchLocks(ctx context.Context, cms kube.ConfigMapsGetter, namespace string, log *slog.Logger, synced func(), observers ...Observer) {
	log = logutil.OrDiscard(log)
	sel := labels.SelectorFromSet(labels.Set{record.ManagedByLabel: record.ManagedByValue, record.KindLabel: record.KindValue}).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return cms.ConfigMaps(namespace).List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return cms.ConfigMaps(namespace).Watch(ctx, o)
		},
	}
	inf := cache.NewSharedIndexInformerWithOptions(
		cache.ToListWatcherWithWatchListSemantics(lw, noWatchList(watchlist.DoesClientNotSupportWatchListSemantics(cms))),
		&corev1.ConfigMap{}, cache.SharedIndexInformerOptions{})
	_ = inf.SetTransform(func(obj any) (any, error) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.ManagedFields != nil {
			out := *cm
			out.ManagedFields = nil
			return &out, nil
		}
		return obj, nil
	})
	reg, _ := inf.AddEventHandler(cache.ResourceEventHandlerDetailedFuncs{
		AddFunc: func(obj any, initial bool) {
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				for _, o := range observers {
					o.ObserveLock(cm, initial)
				}
			}
		},
		UpdateFunc: func(_, obj any) {
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				for _, o := range observers {
					o.ObserveLock(cm, false)
				}
			}
		},
		DeleteFunc: func(obj any) {
			if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				for _, o := range observers {
					o.ForgetLock(cm)
				}
			}
		},
	})
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		log.Warn("watch of the locks failed; watching again", "error", err)
	})
	if synced != nil {
		go func() {
			// NOTE: the handler's HasSynced, not the informer's: true once
			// the observers were told of the first list.
			if cache.WaitForCacheSync(ctx.Done(), reg.HasSynced) {
				synced()
			}
		}()
	}
	inf.RunWithContext(ctx)
}

// noWatchList tells an informer whether the client cannot serve streaming
// lists (client-go's fakes cannot).
type noWatchList bool

func (n noWatchList) IsWatchListSemanticsUnSupported() bool { return bool(n) }
