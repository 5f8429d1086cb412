package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/cmd/internal/cli/term"
)

// submitOptions configure `lockctl submit`.
type submitOptions struct {
	f *Factory

	Filename string
	Output   string
}

func newSubmitCmd(f *Factory, runF func(*submitOptions) error) *cobra.Command {
	o := &submitOptions{f: f}
	c := &cobra.Command{
		Use:   "submit -f FILE",
		Short: "Store a job in the cluster for the reconcile loop to run",
		Long: cli.Doc(`
			Validate the job in FILE (YAML or JSON, "-" for stdin) and store it
			in the job namespace as triggered. lockctl reconcile then creates
			its pod when the concurrency limits allow and drives it to a final
			state.

			FILE holds one job, in at most 1 MiB: what a job record (a
			ConfigMap) can hold. A bad job file is refused before anything is
			written, with every field at fault and why (exit status 2); so are
			a larger file and a second job after "---". Submitting a job whose
			name exists already fails; use metadata.generateName for a new name
			on every submit. The job's name is printed on stdout.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Submit, then follow the job's logs
			JOB=$(lockctl submit -f deploy.yaml) && lockctl logs "$JOB" -f

			# From stdin
			generate-job | lockctl submit -f -
		`),
		Args: cli.NoArgs(),
		RunE: runE(o, runF, runSubmit, nil),
	}
	c.Flags().StringVarP(&o.Filename, "filename", "f", o.Filename, `job file, YAML or JSON; "-" reads stdin`)
	cli.AddOutputFlag(c.Flags(), &o.Output, "json", "yaml")
	return c
}

func (o *submitOptions) validate() error {
	if o.Filename == "" {
		return cmdutil.FlagErrorf("required flag -f/--filename not set")
	}
	return nil
}

func runSubmit(ctx context.Context, o *submitOptions) error {
	j, err := cli.ReadJob(o.f.IOStreams.In, o.Filename)
	if err != nil {
		return err
	}
	store, err := o.f.JobStore()
	if err != nil {
		return err
	}
	if j.Namespace != "" && j.Namespace != store.Namespace() {
		return &cmdutil.UsageError{Err: fmt.Errorf("the job's namespace %q does not match the namespace %q: pass -n %s", j.Namespace, store.Namespace(), j.Namespace)}
	}
	created, err := store.Create(ctx, j)
	if err != nil {
		return cmdutil.UsageIfInvalid(err)
	}
	o.f.Console().Statusf(term.StyleNone, nil, "job %q triggered in namespace %q", created.Name, created.Namespace)
	if o.Output != "" {
		return printers.Object(o.f.IOStreams.Out, o.Output, created)
	}
	_, err = fmt.Fprintln(o.f.IOStreams.Out, created.Name)
	return err
}
