package cli

import (
	"context"
	"fmt"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/scheduler"
)

// JobsToShow returns the store of the job namespace (of every namespace
// with all, -A) and the jobs a reading command shows: those named, in the
// order given, or those opts selects, oldest first (grouped by namespace
// with all), saying on f's ErrOut when none is. With names, the error
// names those that do not exist; jobs is nil only when there is nothing
// to show for an error. Records that cannot be decoded are left out of a
// list with a warning.
func JobsToShow(ctx context.Context, f *Factory, names []string, opts job.ListOptions, all bool) (store *job.Store, jobs []*job.Job, err error) {
	if all {
		store, err = f.JobStoreIn(metav1.NamespaceAll)
	} else {
		store, err = f.JobStore()
	}
	if err != nil {
		return nil, nil, err
	}
	if len(names) == 0 {
		jobs, err := store.List(ctx, opts)
		if err != nil && jobs == nil {
			return store, nil, err
		}
		if err != nil {
			fmt.Fprintf(f.IOStreams.ErrOut, "warning: %v\n", err)
		}
		if all {
			sort.SliceStable(jobs, func(i, k int) bool { return jobs[i].Namespace < jobs[k].Namespace })
		}
		if len(jobs) == 0 {
			printers.NoJobs(f.IOStreams.ErrOut, store.Namespace(), opts.JobName, opts.Selector, all)
		}
		return store, jobs, nil
	}
	jobs, missing, err := store.GetAll(ctx, names)
	if err != nil {
		return store, nil, err
	}
	err = cmdutil.JobsNotFound(missing, store.Namespace())
	if len(jobs) == 0 {
		return store, nil, err
	}
	return store, jobs, err
}

// ClusterStatus returns the reachability of each build cluster as the
// reconcile loop of the job namespace last recorded it
// (scheduler.ReadClusterStatus), saying on f's ErrOut when it has
// recorded none.
func ClusterStatus(ctx context.Context, f *Factory) (map[string]scheduler.ClusterStatus, error) {
	ns, err := f.Namespace()
	if err != nil {
		return nil, err
	}
	cs, err := f.Clientset()
	if err != nil {
		return nil, err
	}
	st, err := scheduler.ReadClusterStatus(ctx, cs.CoreV1().ConfigMaps(ns))
	if err == nil && len(st) == 0 {
		fmt.Fprintf(f.IOStreams.ErrOut, "no cluster status recorded in namespace %q: lockctl reconcile records it\n", ns)
	}
	return st, err
}
