package cmd

import (
	"context"
	"fmt"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/job"
)

// getJobsOptions configure `lockctl get jobs`.
type getJobsOptions struct {
	f *Factory

	Names         []string
	Job           string
	Selector      string
	AllNamespaces bool
	cli.WatchFlags
	printers.PrintFlags

	out *printers.OutputFlags // PrintFlags parsed
}

// getClustersOptions configure `lockctl get clusters`.
type getClustersOptions struct {
	f *Factory

	printers.PrintFlags

	out *printers.OutputFlags // PrintFlags parsed
}

func newGetCmd(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "get",
		Short: "Show job records or build-cluster reachability",
		Long: cli.Doc(`
			Show lockctl's objects in the job namespace: the jobs, or the
			reachability of the build clusters as the reconcile loop last
			recorded it.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			lockctl get jobs
			lockctl get jobs deploy-web-42 -o yaml
			lockctl get clusters
		`),
		// NOTE: without RunE cobra prints help and exits 0 for `get jbos`;
		// an unknown resource is a usage error (exit 2) with a suggestion.
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			status := fmt.Sprintf("locks are shown by %q", c.Root().Name()+" status")
			return cli.ResourceArgs(c, args, "jobs or clusters", map[string]string{"locks": status, "lock": status})
		},
	}
	c.SuggestionsMinimumDistance = 2
	c.AddCommand(newGetJobsCmd(f, nil), newGetClustersCmd(f, nil))
	return c
}

func newGetJobsCmd(f *Factory, runF func(*getJobsOptions) error) *cobra.Command {
	o := &getJobsOptions{f: f, PrintFlags: printers.PrintFlags{Forms: printers.Forms{Wide: true, Table: true}}}
	c := &cobra.Command{
		Use:     "jobs [NAME...]",
		Aliases: []string{"job"},
		Short:   "Show jobs: state, age, pod and description",
		Long: cli.Doc(`
			Show the jobs of the job namespace, oldest first, or the jobs named
			(job/NAME, as -o name prints it, works too). The table has each
			job's state, age, pod and description; -o wide adds its build
			cluster, refs, queue and reason; -o name prints job/NAME, one a
			line; -o json and -o yaml print Kubernetes-style objects
			(metadata, spec, status); -o jsonpath=…, -o go-template=… and
			-o custom-columns=… work as in kubectl get, and --sort-by orders
			the rows.

			-l selects jobs by label, set-based selectors included: the job's
			own labels (metadata.labels of its file) and those lockctl keeps on
			each record: lockctl.dev/job, lockctl.dev/type, lockctl.dev/state,
			lockctl.dev/queue and lockctl.dev/complete. -A shows the jobs of
			every namespace.

			-w prints the jobs, then a line (or an object) for every change
			until interrupted or --timeout, as kubectl get -w does.

			No jobs is not a failure: get says so on stderr and exits 0. A NAME
			that does not exist is an error, after the jobs that do.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			# Every job in the namespace
			lockctl get jobs -n ci

			# The runs of one job name, and the jobs that failed
			lockctl get jobs --job deploy-web
			lockctl get jobs -l lockctl.dev/state=failure

			# Jobs of every namespace, with their clusters and refs
			lockctl get jobs -A -o wide

			# Two jobs as YAML
			lockctl get jobs deploy-web-42 deploy-api-7 -o yaml

			# Follow the jobs as the reconcile loop drives them
			lockctl get jobs -w

			# Names and states only, oldest first (--sort-by sorts ascending, as kubectl does)
			lockctl get jobs -o custom-columns=NAME:.metadata.name,STATE:.status.state --sort-by=.metadata.creationTimestamp

			# Wait for every job that has not ended
			lockctl get jobs -l '!lockctl.dev/complete' -o name | xargs -r lockctl wait
		`),
		Args: cobra.ArbitraryArgs,
		RunE: runE(o, runF, runGetJobs, func(_ *cobra.Command, args []string) { o.Names = args }),
	}
	fs := c.Flags()
	fs.StringVar(&o.Job, "job", o.Job, "show only runs of this job name (spec.job)")
	fs.StringVarP(&o.Selector, "selector", "l", o.Selector, "label selector: key=value, key!=value, 'key in (a,b)', key, !key, comma-separated")
	fs.BoolVarP(&o.AllNamespaces, "all-namespaces", "A", o.AllNamespaces, "show the jobs of every namespace (-n is then ignored)")
	o.WatchFlags.AddFlags(fs, "the jobs")
	o.PrintFlags.AddFlags(fs)
	return c
}

func (o *getJobsOptions) validate() error {
	var err error
	if o.out, err = cli.ValidateRead(&o.WatchFlags, &o.PrintFlags); err != nil {
		return err
	}
	if _, err := labels.Parse(o.Selector); err != nil {
		return cmdutil.FlagErrorf("invalid --selector %q: %v", o.Selector, err)
	}
	cli.JobNames(o.Names)
	switch {
	case len(o.Names) > 0 && (o.Selector != "" || o.Job != ""):
		return cmdutil.FlagErrorf("name jobs, or select them with --selector or --job, not both")
	case len(o.Names) > 0 && o.AllNamespaces:
		return cmdutil.FlagErrorf("a job cannot be shown by name across all namespaces: drop -A, or the names to list every job")
	}
	return nil
}

func runGetJobs(ctx context.Context, o *getJobsOptions) error {
	sel := job.ListOptions{JobName: o.Job, Selector: o.Selector}
	store, jobs, lookupErr := cli.JobsToShow(ctx, o.f, o.Names, sel, o.AllNamespaces)
	if jobs == nil {
		return lookupErr
	}
	p := printers.NewJobPrinter(o.f.IOStreams.Out, o.out, printers.Options{AllNamespaces: o.AllNamespaces, Clock: o.f.Clock})
	// NOTE: as kubectl does, one name gives the object, anything else a List.
	if err := p.PrintAll(jobs, !o.Watch && len(o.Names) != 1); err != nil {
		return err
	}
	if lookupErr != nil || !o.Watch {
		return lookupErr
	}
	return o.Until(ctx, func(ctx context.Context) error { return store.WatchAfter(ctx, sel, o.Names, jobs, p.Print) })
}

func newGetClustersCmd(f *Factory, runF func(*getClustersOptions) error) *cobra.Command {
	o := &getClustersOptions{f: f, PrintFlags: printers.PrintFlags{Forms: printers.Forms{Table: true}}}
	c := &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"cluster"},
		Short:   "Show whether each build cluster is reachable",
		Long: cli.Doc(`
			Show the reachability of each build cluster as the reconcile loop
			last recorded it: reachable, unreachable or missing-permissions
			(lockctl may not list or create pods there), and since when.

			Nothing recorded yet is not a failure: get says so on stderr and
			exits 0.
		`) + "\n" + cmdutil.ExitCodeHelp,
		Example: cli.Examples(`
			lockctl get clusters -n ci

			# The clusters lockctl cannot reach (-o json prints the states by alias)
			lockctl get clusters -o go-template='{{range $alias, $c := .}}{{if ne $c.state "reachable"}}{{$alias}}: {{$c.state}}{{"\n"}}{{end}}{{end}}'

			# One cluster's state
			lockctl get clusters -o jsonpath='{.default.state}{"\n"}'
		`),
		Args: cli.NoArgs(),
		RunE: runE(o, runF, runGetClusters, nil),
	}
	o.PrintFlags.AddFlags(c.Flags())
	return c
}

func (o *getClustersOptions) validate() error {
	var err error
	o.out, err = cli.ValidateRead(nil, &o.PrintFlags)
	return err
}

func runGetClusters(ctx context.Context, o *getClustersOptions) error {
	st, err := cli.ClusterStatus(ctx, o.f)
	if err != nil || (len(st) == 0 && o.Output == "") {
		return err
	}
	return printers.PrintClusters(o.f.IOStreams.Out, o.out, st, printers.Options{Clock: o.f.Clock})
}
