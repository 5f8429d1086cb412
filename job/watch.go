package job

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/watch"

	"github.com/lockctl/lockctl/kube"
)

// Watch calls fn with every job record that opts selects, first each one
// there is (as watch.Added, in no particular order), then each change as
// it happens: watch.Added, watch.Modified or watch.Deleted with the record
// as it was last. Like Wait it rides out watch and API server restarts,
// and it runs until ctx ends, returning an error wrapping ctx.Err(), or
// until fn returns an error, which it returns. A record that cannot be
// decoded is skipped.
func (s *Store) Watch(ctx context.Context, opts ListOptions, fn func(watch.EventType, *Job) error) error {
	w := kube.ConfigMapWatch{
		LabelSelector: opts.selector(),
		NoWatchList:   s.noWatchList,
		What:          fmt.Sprintf("jobs in namespace %q", s.namespace),
	}
	return kube.WatchConfigMaps(ctx, s.cms, w, func(t watch.EventType, cm *corev1.ConfigMap) error {
		j, err := FromConfigMap(cm)
		if err != nil {
			return nil
		}
		return fn(t, j)
	})
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
