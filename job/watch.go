package job

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

// Watch calls fn with every job record that opts selects, first each one
// there is (as watch.Added, in no particular order), then each change as
// it happens: watch.Added, watch.Modified or watch.Deleted with the record
// as it was last. Like Wait it rides out watch and API server restarts,
// and it runs until ctx ends, returning an error wrapping ctx.Err(), or
// until fn returns an error, which it returns. A record that cannot be
// decoded is skipped.
func (s *Store) Watch(ctx context.Context, opts ListOptions, fn func(watch.EventType, *Job) error) error {
	sel := opts.selector()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector = sel
			return s.cms.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector = sel
			return s.cms.Watch(ctx, o)
		},
	}
	var fnErr error
	_, err := watchtools.UntilWithSync(ctx, cache.ToListWatcherWithWatchListSemantics(lw, noWatchList(s.noWatchList)), &corev1.ConfigMap{}, nil,
		func(ev watch.Event) (bool, error) {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok {
				return false, nil
			}
			j, err := FromConfigMap(cm)
			if err != nil {
				return false, nil
			}
			if fnErr = fn(ev.Type, j); fnErr != nil {
				return true, nil
			}
			return false, nil
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
		return fmt.Errorf("watch jobs in namespace %q: %w", s.namespace, err)
	}
	return nil
}

// WatchAfter is Watch for a caller that has shown the records shown, as
// listed: fn gets every change after them, not the records of the
// informer's first list again. With names, only the records named are
// watched.
func (s *Store) WatchAfter(ctx context.Context, opts ListOptions, names []string, shown []*Job, fn func(*Job) error) error {
	seen := make(map[string]string, len(shown))
	for _, j := range shown {
		seen[j.Namespace+"/"+j.Name] = j.ResourceVersion
	}
	named := make(map[string]bool, len(names))
	for _, n := range names {
		named[n] = true
	}
	return s.Watch(ctx, opts, func(ev watch.EventType, j *Job) error {
		if len(named) > 0 && !named[j.Name] {
			return nil
		}
		key := j.Namespace + "/" + j.Name
		if ev != watch.Deleted && seen[key] == j.ResourceVersion {
			return nil // the informer's first list: shown already
		}
		seen[key] = j.ResourceVersion
		return fn(j)
	})
}
