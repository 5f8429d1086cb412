package printers

import (
	"fmt"
	"io"

	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/scheduler"
)

// Released says on out what the release of the lock of target did: id is
// the caller's identity, token the fencing token given to release by ("":
// none).
func Released(out io.Writer, target string, id record.Identity, res *lock.Released, token string) {
	switch {
	case res.Invalid != nil:
		fmt.Fprintf(out, "deleted corrupt lock %q: %v\n", target, res.Invalid)
	case res.LeftQueue:
		fmt.Fprintf(out, "lock %q was not held by %s; left the queue\n", target, id)
	case res.Previous == nil:
		fmt.Fprintf(out, "lock %q is not held; nothing to release\n", target)
	case res.Forced:
		fmt.Fprintf(out, "broke lock %q held by %s since %s\n", target, res.Previous.Identity, res.Previous.Since.UTC().Format("2006-01-02T15:04:05Z"))
	case token != "":
		fmt.Fprintf(out, "lock %q released (held by %s under fencing token %s)\n", target, res.Previous.Identity, token)
	default:
		fmt.Fprintf(out, "lock %q released\n", target)
	}
	if res.HandedTo != nil {
		fmt.Fprintf(out, "lock %q now held by %s\n", target, res.HandedTo.Identity)
	}
}

// Pruned prints one line per object deleted (or, with dry, that would be)
// on out, and a count, or "nothing to prune", on errOut.
func Pruned(out, errOut io.Writer, res *scheduler.PruneResult, dry bool) {
	verb := "deleted"
	if dry {
		verb = "would delete"
	}
	for _, p := range res.Deleted {
		fmt.Fprintf(out, "%s %s\n", verb, p)
	}
	if len(res.Deleted) == 0 {
		fmt.Fprintln(errOut, "nothing to prune")
		return
	}
	fmt.Fprintf(errOut, "%s %d job records and %d pods\n", verb, res.Count("job"), res.Count("pod"))
}

// Pass prints on out what lockctl reconcile --once --dry-run (dry) would
// do: the plan of the pass (a dry run's), then what pruning would delete.
func Pass(out io.Writer, res scheduler.OnceResult, dry bool) {
	for _, line := range res.Plan {
		fmt.Fprintln(out, line)
	}
	if res.Pruned != nil && dry {
		for _, p := range res.Pruned.Deleted {
			fmt.Fprintf(out, "would delete %s\n", p)
		}
	}
}

// Free says on out that the lock of target is free, and frozen when the
// view free says so; desc names the lock (lock.Client.Describe).
func Free(out io.Writer, target string, free lock.LockView, desc string) {
	if f := free.Status.Freeze; f != nil {
		fmt.Fprintf(out, "lock %q is free; %s (%s)\n", target, f.Describe(), desc)
		return
	}
	fmt.Fprintf(out, "lock %q is free (%s)\n", target, desc)
}

// NoLocks says on out that there are no locks in namespace ns, or in any
// namespace with all.
func NoLocks(out io.Writer, ns string, all bool) {
	where := fmt.Sprintf("in namespace %q", ns)
	if all {
		where = "in any namespace"
	}
	fmt.Fprintln(out, "no locks "+where)
}

// NoJobs says on out that no job matches in namespace ns: none of the
// name jobName, none matching selector, none in any namespace with all.
func NoJobs(out io.Writer, ns, jobName, selector string, all bool) {
	switch {
	case jobName != "":
		fmt.Fprintf(out, "no job named %q in namespace %q\n", jobName, ns)
	case all:
		fmt.Fprintf(out, "no jobs in any namespace\n")
	case selector != "":
		fmt.Fprintf(out, "no jobs matching %q in namespace %q\n", selector, ns)
	default:
		fmt.Fprintf(out, "no jobs in namespace %q\n", ns)
	}
}

// Unfrozen says on out what lifting the freeze of the lock of target did;
// desc names the lock (lock.Client.Describe).
func Unfrozen(out io.Writer, target string, res *record.Unfrozen, desc string) {
	switch {
	case res.Previous == nil:
		fmt.Fprintf(out, "lock %q is not frozen; nothing to do (%s)\n", target, desc)
	case res.HandedTo != nil:
		fmt.Fprintf(out, "lock %q unfrozen (was %s); now held by %s\n", target, res.Previous.Describe(), res.HandedTo.Identity)
	default:
		fmt.Fprintf(out, "lock %q unfrozen (was %s)\n", target, res.Previous.Describe())
	}
}

// ReleasedAll says on out what the release of each of targets did, as
// Released does; a nil result (a release that failed) says nothing.
func ReleasedAll(out io.Writer, targets []string, id record.Identity, all []*lock.Released, token string) {
	for i, res := range all {
		if res != nil {
			Released(out, targets[i], id, res, token)
		}
	}
}
