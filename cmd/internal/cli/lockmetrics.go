package cli

import (
	"context"
	"sync"

	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/metrics"
	"github.com/lockctl/lockctl/stats"
)

// ObserveLocks keeps the observers told of the lock ConfigMaps of namespace
// (every namespace for metav1.NamespaceAll) in the current context's
// cluster, in the background, until stop; the locks' metrics are one such
// observer (NewLockExporter), notifications another.
func ObserveLocks(ctx context.Context, f *Factory, namespace string, observers ...stats.Observer) (stop func(), err error) {
	cs, err := f.Clientset()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		stats.WatchLocks(ctx, kube.CoreV1(cs), namespace, f.Logger(), nil, observers...)
	}()
	return func() { cancel(); wg.Wait() }, nil
}

// NewLockExporter registers the locks' metrics on reg (stats.Exporter),
// judged on the lock clock.
func NewLockExporter(f *Factory, reg *metrics.Registry) (*stats.Exporter, error) {
	return stats.NewExporter(reg, stats.ExporterOptions{Clock: f.LockClock()})
}
