package cli

import (
	"context"
	"fmt"
	"io"
	"sort"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/job"
)

// JobsToShow returns the jobs a reading command shows: those named, in the
// order given, or those opts selects, oldest first (grouped by namespace
// with all, -A). With names, the error names those that do not exist;
// jobs is nil only when there is nothing to show for an error. Records
// that cannot be decoded are left out of a list with a warning on errOut.
func JobsToShow(ctx context.Context, store *job.Store, names []string, opts job.ListOptions, all bool, errOut io.Writer) ([]*job.Job, error) {
	if len(names) == 0 {
		jobs, err := store.List(ctx, opts)
		if err != nil && jobs == nil {
			return nil, err
		}
		if err != nil {
			fmt.Fprintf(errOut, "warning: %v\n", err)
		}
		if all {
			sort.SliceStable(jobs, func(i, k int) bool { return jobs[i].Namespace < jobs[k].Namespace })
		}
		return jobs, nil
	}
	jobs, missing, err := store.GetAll(ctx, names)
	if err != nil {
		return nil, err
	}
	err = cmdutil.JobsNotFound(missing, store.Namespace())
	if len(jobs) == 0 {
		return nil, err
	}
	return jobs, err
}
