package cmd

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/cmd/internal/cli/progress"
	"github.com/lockctl/lockctl/job"
)

// The conditions `lockctl wait --for` waits for.
const (
	// waitForSucceeded: every job ended in success.
	waitForSucceeded = "succeeded"
	// waitForFinished: every job ended, whatever its state.
	waitForFinished = "finished"
)

// waitOptions configure `lockctl wait`.
type waitOptions struct {
	f *Factory

	Names   []string
	For     string
	Timeout time.Duration
	Output  string
}

func newWaitCmd(f *Factory, runF func(*waitOptions) error) *cobra.Command {
	o := &waitOptions{f: f, For: waitForSucceeded}
	c := &cobra.Command{
		Use:   "wait JOB [JOB...]",
		Short: "Wait for jobs to end, and exit with their status",
		Long: cli.Doc(`
			Wait until each JOB (or job/JOB, as get jobs -o name prints it)
			has ended, as kubectl wait does, and print one line per job on
			stdout: its state, its build ID and how long it ran (with -o json or
			-o yaml, the jobs themselves). A job that has already ended is
			reported at once, so waiting again is harmless. While it waits,
			wait says so on stderr, with each state the job moves to (on a
			terminal, also a live line with the time waited).

			With --for succeeded (the default) the exit status is 0 when every
			job succeeded, otherwise that of the first job, in the order given,
			that did not, with the codes lockctl run uses: 5 failed or ended in
			error, 4 timed out, 3 superseded, 1 aborted. With --for finished it
			is 0 once every job has ended, whatever its state. When --timeout
			passes first the exit status is 4; a job that does not exist is an
			error (1) at once.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Submit, then wait for the job in a later pipeline step
			lockctl submit -f deploy.yaml && lockctl wait deploy-web-42 --timeout 30m

			# Wait for several jobs to end, whatever their state
			lockctl wait deploy-web-42 deploy-api-7 --for finished

			# The finished job as YAML
			lockctl wait deploy-web-42 -o yaml

			# Every job that has not ended yet
			lockctl get jobs -l '!lockctl.dev/complete' -o name | xargs -r lockctl wait --for finished
		`),
		Args: cli.WrapArgs(cobra.MinimumNArgs(1)),
		RunE: runE(o, runF, runWait, func(_ *cobra.Command, args []string) { o.Names = args }),
	}
	fs := c.Flags()
	fs.Var(cli.EnumFlag(&o.For, waitForSucceeded, waitForFinished), "for",
		"condition: succeeded (exit 0 only if every job succeeded) or finished (exit 0 once every job ended)")
	fs.DurationVar(&o.Timeout, "timeout", o.Timeout, "give up waiting after this long (exit 4); 0 waits forever")
	cli.AddOutputFlag(fs, &o.Output, "json", "yaml")
	return c
}

func (o *waitOptions) validate() error {
	if o.Timeout < 0 {
		return cmdutil.FlagErrorf("--timeout must not be negative, got %s", o.Timeout)
	}
	if n := cli.JobNames(o.Names); n != "" {
		return cmdutil.FlagErrorf("job %q is named twice", n)
	}
	return nil
}

func runWait(ctx context.Context, o *waitOptions) error {
	store, err := o.f.JobStore()
	if err != nil {
		return err
	}
	jobs := make([]*job.Job, 0, len(o.Names))
	var failed error
	err = progress.WaitJobs(ctx, o.f.Console(), o.f.Clock, store, o.Names, o.Timeout, func(j *job.Job, line string, outcome error) {
		jobs = append(jobs, j)
		if o.Output == "" {
			fmt.Fprintln(o.f.IOStreams.Out, line)
		}
		if failed == nil && o.For == waitForSucceeded {
			failed = outcome
		}
	})
	if err != nil {
		return err
	}
	if o.Output != "" {
		if err := printers.Items(o.f.IOStreams.Out, o.Output, jobs); err != nil {
			return err
		}
	}
	return failed
}
