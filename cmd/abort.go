package cmd

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/identity"
	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/job"
)

// abortOptions configure `lockctl abort`.
type abortOptions struct {
	f *Factory

	Name   string
	Reason string
}

func newAbortCmd(f *Factory, runF func(*abortOptions) error) *cobra.Command {
	o := &abortOptions{f: f}
	c := &cobra.Command{
		Use:   "abort JOB",
		Short: "Abort a job: its pod is deleted and the job completes as aborted",
		Long: cli.Doc(`
			Mark JOB aborted. The reconcile loop then deletes its pod, gives back
			its namespace lock and completes it; a job that was still waiting
			never starts.

			Like rm -f, aborting is idempotent: aborting an aborted job, or one
			that has already finished, changes nothing, says so on stderr and
			exits 0.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			lockctl abort deploy-web-42 --reason "bad commit"
		`),
		Args: cli.ExactArgs(1),
		RunE: runE(o, runF, runAbort, func(_ *cobra.Command, args []string) { o.Name = args[0] }),
	}
	c.Flags().StringVar(&o.Reason, "reason", o.Reason, "why, recorded as the job's description (default: aborted by USER)")
	return c
}

func runAbort(ctx context.Context, o *abortOptions) error {
	store, err := o.f.JobStore()
	if err != nil {
		return err
	}
	reason := o.Reason
	if reason == "" {
		reason = "aborted by " + identity.LocalUser(o.f.Getenv)
	}
	j, err := store.Abort(ctx, o.Name, job.ReasonAbortRequested, reason)
	switch {
	case errors.Is(err, job.ErrTerminal):
		o.f.Console().Statusf(term.StyleNone, nil, "job %q already finished: %s", o.Name, j.Status.State)
		return nil
	case errors.Is(err, job.ErrAborted):
		o.f.Console().Statusf(term.StyleNone, nil, "job %q already aborted: %s", o.Name, j.Status.Description)
		return nil
	case err != nil:
		return cmdutil.JobLookupError(err, o.Name, store.Namespace())
	}
	_, err = fmt.Fprintf(o.f.IOStreams.Out, "job %q aborted: %s\n", j.Name, j.Status.Description)
	return err
}
