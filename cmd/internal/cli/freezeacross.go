package cli

import (
	"context"
	"fmt"
	"strings"
	"sync"

	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// FreezeAcross freezes the lock of req.Target in every cluster of s (one
// freeze set in several contexts at once), each asking its own cluster
// for the caller's user (req.LookupUser), says on f's ErrOut how each
// lock is frozen and prints the Locks with output (json, yaml): the
// object of one lock, a List of several. A cluster where it fails leaves
// the others frozen: the error names the clusters done and those not; a
// freeze replaces a freeze, so the same command run again completes it.
func FreezeAcross(ctx context.Context, f *Factory, s Sites, req record.FreezeRequest, output string) error {
	views := make([]*lock.LockView, len(s.Locks))
	err := eachSiteReporting(s, "freeze", req.Target, func(i int, c *lock.Client) error {
		req := req
		req.LookupUser = s.users[i]
		l, err := c.Freeze(ctx, req)
		if err != nil {
			return fmt.Errorf("freeze lock %q: %w", lock.Where(c.Context(), req.Target), err)
		}
		views[i] = l
		return nil
	})
	var items []lock.LockView
	for i, l := range views {
		if l != nil {
			c := s.Locks[i]
			fmt.Fprintf(f.IOStreams.ErrOut, "lock %q %s (%s)\n", lock.Where(c.Context(), req.Target), l.Status.Freeze.Describe(), c.Describe(req.Target))
			items = append(items, *l)
		}
	}
	switch {
	case err != nil || output == "":
		return err
	case len(items) == 1 && !s.Across():
		return printers.Object(f.IOStreams.Out, output, items[0])
	}
	return printers.Object(f.IOStreams.Out, output, printers.ListOf(items))
}

// UnfreezeAcross lifts the freeze of target's lock in every cluster of s,
// saying on f's ErrOut what became of each, as FreezeAcross sets one.
func UnfreezeAcross(ctx context.Context, f *Factory, s Sites, target string) error {
	results := make([]*record.Unfrozen, len(s.Locks))
	err := eachSiteReporting(s, "unfreeze", target, func(i int, c *lock.Client) error {
		res, err := c.Unfreeze(ctx, target)
		if err != nil {
			return fmt.Errorf("unfreeze lock %q: %w", lock.Where(c.Context(), target), err)
		}
		results[i] = res
		return nil
	})
	for i, res := range results {
		if res != nil {
			c := s.Locks[i]
			printers.Unfrozen(f.IOStreams.ErrOut, lock.Where(c.Context(), target), res, c.Describe(target))
		}
	}
	return err
}

// eachSiteReporting calls fn for every cluster of s at once (EachSite);
// with several, a failure in some is an error naming the clusters where
// verb was done and those where it was not, and saying that the same
// command run again completes it.
func eachSiteReporting(s Sites, verb, target string, fn func(i int, c *lock.Client) error) error {
	var mu sync.Mutex
	var done, failed []string
	errs := make([]error, len(s.Locks))
	var wg sync.WaitGroup
	for i, c := range s.Locks {
		wg.Go(func() {
			errs[i] = fn(i, c)
			mu.Lock()
			defer mu.Unlock()
			if errs[i] != nil {
				failed = append(failed, c.Context())
			} else {
				done = append(done, c.Context())
			}
		})
	}
	wg.Wait()
	if !s.Across() || len(failed) == 0 {
		return errs[0]
	}
	var msgs []string
	for _, err := range errs {
		if err != nil {
			msgs = append(msgs, err.Error())
		}
	}
	return fmt.Errorf("%s lock %q done in contexts %q, not in %q (run the same command again to complete it): %s",
		verb, target, done, failed, strings.Join(msgs, "; "))
}

// HistoryAcross prints the history of target's lock in every cluster of
// s, read at once: the object forms a List of the LockHistory objects,
// each with its context; the table one row per hold, CONTEXT first, each
// cluster's newest first, the clusters in the order of s.
func HistoryAcross(ctx context.Context, f *Factory, s Sites, target string, out *printers.OutputFlags) error {
	hs := make([]*record.History, len(s.Locks))
	err := EachSite(s, func(c *lock.Client) error {
		h, err := c.History(ctx, target)
		for i := range s.Locks {
			if s.Locks[i] == c {
				hs[i] = h
			}
		}
		return err
	})
	if err != nil {
		return err
	}
	if !out.IsTable() {
		return (&printers.Printer[*record.History]{W: f.IOStreams.Out, Flags: out}).PrintAll(hs, true)
	}
	var rows []printers.ContextHold
	for i, h := range hs {
		for _, e := range printers.Holds(h) {
			rows = append(rows, printers.ContextHold{Context: s.Locks[i].Context(), HistoryEntry: e})
		}
	}
	if len(rows) == 0 {
		fmt.Fprintf(f.IOStreams.ErrOut, "lock %q has no history in contexts %q\n", target, s.Contexts())
		return nil
	}
	return printers.NewContextHoldPrinter(f.IOStreams.Out, out, printers.Options{Clock: f.Clock}).PrintAll(rows, true)
}
