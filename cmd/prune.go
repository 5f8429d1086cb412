package cmd

import (
	"context"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/scheduler"
)

// pruneOptions configure `lockctl prune`.
type pruneOptions struct {
	f *Factory

	cli.ClusterFlags
	OlderThan    time.Duration
	PodOlderThan time.Duration
	DryRun       bool

	// changed reports whether a flag was given, so it overrides --config.
	changed func(name string) bool
}

func newPruneCmd(f *Factory, runF func(*pruneOptions) error) *cobra.Command {
	o := &pruneOptions{
		f:            f,
		OlderThan:    scheduler.DefaultJobRetention,
		PodOlderThan: scheduler.DefaultPodRetention,
	}
	c := &cobra.Command{
		Use:   "prune",
		Short: "Delete finished jobs and their pods once they are old enough",
		Long: cli.Doc(`
			Delete the job records of the job namespace (-n, in --context) that
			finished more than --older-than ago (default a week), and the pods of
			jobs that finished more than --pod-older-than ago (default a day), as
			Prow's sinker does. The newest run of each periodic job is kept, and
			jobs that have not finished are never touched. Pods whose job record
			is gone are deleted once they have finished.

			Every delete names the UID and resourceVersion that were read, so a
			record or pod that changed or was re-created in between is left
			alone. Like rm -f, pruning is idempotent: a second run finds nothing
			and exits 0. The reconcile loop prunes the same way every hour.

			With --config, the ages not given as flags come from the file's
			retention (jobs, pods), as for lockctl reconcile.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# What would go?
			lockctl prune --dry-run

			# Daily from cron: records after 30 days, pods after 6 hours
			lockctl prune -n ci --older-than 720h --pod-older-than 6h
		`),
		Args: cli.NoArgs(),
		RunE: runE(o, runF, runPrune, func(c *cobra.Command, _ []string) { o.changed = c.Flags().Changed }),
	}
	fs := c.Flags()
	fs.DurationVar(&o.OlderThan, "older-than", o.OlderThan, "delete job records that finished longer ago than this")
	fs.DurationVar(&o.PodOlderThan, "pod-older-than", o.PodOlderThan, "delete the pods of jobs that finished longer ago than this")
	fs.BoolVar(&o.DryRun, "dry-run", o.DryRun, "print what would be deleted, delete nothing")
	o.AddClusterFlags(fs)
	return c
}

func (o *pruneOptions) validate() error {
	if o.OlderThan <= 0 || o.PodOlderThan <= 0 {
		return cmdutil.FlagErrorf("--older-than and --pod-older-than must be more than 0")
	}
	return o.ValidateClusters()
}

func runPrune(ctx context.Context, o *pruneOptions) error {
	opts := scheduler.PruneOptions{DryRun: o.DryRun}
	if o.changed("older-than") {
		opts.JobRetention = o.OlderThan
	}
	if o.changed("pod-older-than") {
		opts.PodRetention = o.PodOlderThan
	}
	s, err := o.Pruner(o.f, opts)
	if err != nil {
		return err
	}
	res, err := s.Prune(ctx)
	if res != nil {
		printers.Pruned(o.f.IOStreams.Out, o.f.IOStreams.ErrOut, res, o.DryRun)
	}
	return err
}
