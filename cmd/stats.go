package cmd

import (
	"cmp"
	"context"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
)

// statsOptions configure `lockctl stats`: its flag groups and -o parsed.
type statsOptions struct {
	f *Factory
	cli.LockFlags
	cli.StatsFlags
	printers.PrintFlags
	out *printers.OutputFlags
}

func newStatsCmd(f *Factory, runF func(*statsOptions) error) *cobra.Command {
	o := &statsOptions{f: f, PrintFlags: printers.PrintFlags{Forms: printers.Forms{Table: true, Wide: true}}}
	c := &cobra.Command{
		Use:   "stats [NAMESPACE...]",
		Short: "Show how long deploy locks are waited for and held, and how holds end",
		Long:  cli.StatsHelp() + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# How long do we wait for production, and how long does a deploy hold it
			lockctl stats production

			# Every lock of the lock namespace over the last week, for a script
			lockctl stats --since 168h -o json | jq '.items[] | {target: .spec.target, p90: .status.wait.p90}'
		`),
		RunE: runE(o, runF, runStats, func(_ *cobra.Command, args []string) { o.Targets = args }),
	}
	o.AddLockNamespaceFlag(c.Flags())
	o.StatsFlags.AddFlags(c.Flags())
	o.PrintFlags.AddFlags(c.Flags())
	return c
}

func (o *statsOptions) validate() (err error) {
	o.out, err = cli.ValidateRead(nil, &o.PrintFlags)
	return cmp.Or(err, o.StatsFlags.Validate())
}

func runStats(ctx context.Context, o *statsOptions) error {
	return o.Print(ctx, o.f, &o.LockFlags, printers.NewStatsPrinter(o.f.IOStreams.Out, o.out))
}
