package job

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// Wait watches the record of the job called name until the job is
// terminal, and returns it. onChange, when set, is called with every version
// of the record seen before, the terminal one included. Wait rides out
// watch and API server restarts (it lists again), and fails when the record
// is deleted or ctx ends.
func (s *Store) Wait(ctx context.Context, name string, onChange func(*Job)) (*Job, error) {
	byName := func(o *metav1.ListOptions) {
		o.FieldSelector = fields.OneTermEqualSelector("metadata.name", name).String()
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			byName(&o)
			return s.cms.List(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			byName(&o)
			return s.cms.Watch(ctx, o)
		},
	}
	var last *Job
	_, err := watchtools.UntilWithSync(ctx, cache.ToListWatcherWithWatchListSemantics(lw, noWatchList(s.noWatchList)), &corev1.ConfigMap{}, nil,
		func(ev watch.Event) (bool, error) {
			cm, ok := ev.Object.(*corev1.ConfigMap)
			if !ok || cm.Name != name {
				return false, nil
			}
			if ev.Type == watch.Deleted {
				return false, fmt.Errorf("job %q: its record was deleted", name)
			}
			j, err := FromConfigMap(cm)
			if err != nil {
				return false, err
			}
			if onChange != nil {
				onChange(j)
			}
			last = j
			return j.IsTerminal(), nil
		})
	if err != nil {
		return nil, fmt.Errorf("follow job %q: %w", name, err)
	}
	return last, nil
}

// noWatchList tells an informer whether the store's client cannot serve
// streaming lists.
type noWatchList bool

func (n noWatchList) IsWatchListSemanticsUnSupported() bool { return bool(n) }
