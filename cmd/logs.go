package cmd

import (
	"context"
	"errors"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/progress"
	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/podwatch"
	"github.com/lockctl/lockctl/run"
)

// logsOptions configure `lockctl logs`.
type logsOptions struct {
	f *Factory

	cli.ClusterFlags
	Name      string
	Follow    bool
	Container string
}

func newLogsCmd(f *Factory, runF func(*logsOptions) error) *cobra.Command {
	o := &logsOptions{f: f}
	c := &cobra.Command{
		Use:   "logs JOB",
		Short: "Print the logs of a job's pod from its build cluster",
		Long: cli.Doc(`
			Print the logs of the containers of JOB's pod, read from the job's
			build cluster (its alias is mapped to a kubeconfig context by
			--build-cluster or the --config file; alias "default" is the
			current context). Lines get a "[container] " prefix when the pod
			has more than one container.

			With -f, wait for the pod if the job has not started yet, stream
			its logs until it finishes, then wait for the job's final state and
			exit with it, with the codes lockctl run and lockctl wait use: 0
			succeeded, 5 failed or ended in error, 4 timed out, 3 superseded,
			1 aborted. Without -f, logs exits 0 whatever the job's state.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Logs so far
			lockctl logs deploy-web-42

			# Follow a job and fail the pipeline step when the job fails
			lockctl submit -f deploy.yaml && lockctl logs deploy-web-42 -f

			# Follow a job running in another cluster
			lockctl logs deploy-web-42 -f --build-cluster gpu=gpu-context
		`),
		Args: cli.ExactArgs(1),
		RunE: runE(o, runF, runLogs, func(_ *cobra.Command, args []string) { o.Name = args[0] }),
	}
	fs := c.Flags()
	fs.BoolVarP(&o.Follow, "follow", "f", o.Follow, "stream the logs until the pod finishes")
	fs.StringVarP(&o.Container, "container", "c", o.Container, "only this container (default: all)")
	o.AddClusterFlags(fs)
	return c
}

func (o *logsOptions) validate() error { return o.ValidateClusters() }

func runLogs(ctx context.Context, o *logsOptions) error {
	store, err := o.f.JobStore()
	if err != nil {
		return err
	}
	j, err := store.Get(ctx, o.Name)
	if err != nil {
		return cmdutil.JobLookupError(err, o.Name, store.Namespace())
	}
	pods, podNS, err := o.JobPods(o.f, j, store.Namespace())
	if err != nil {
		return err
	}
	if o.Follow {
		// NOTE: across the pod's replacement, said on the console.
		err := run.FollowJob(ctx, store, pods, podNS, job.PodName(j), run.FollowOptions{
			Out: o.f.IOStreams.Out, Clock: o.f.Clock, Log: o.f.Logger(),
			OnReplace: func(r run.Replacement) { o.f.Console().Statusf(term.StyleNone, nil, "%s", r) },
		})
		if err != nil {
			return err
		}
		return progress.JobEnd(ctx, o.f.Console(), o.f.Clock, store, j.Name)
	}
	err = run.PrintJobLogs(ctx, o.f.IOStreams.Out, pods, podNS, j, o.Container)
	if errors.As(err, new(*podwatch.NoContainerError)) {
		return &cmdutil.UsageError{Err: err}
	}
	return err
}
