package cmd

import (
	"context"
	"fmt"
	"io"
	"sort"
	"text/tabwriter"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/scheduler"
)

// getJobsOptions configure `lockctl get jobs`.
type getJobsOptions struct {
	f *Factory

	Name   string
	Job    string
	Output string
}

// getClustersOptions configure `lockctl get clusters`.
type getClustersOptions struct {
	f *Factory

	Output string
}

func newGetCmd(f *Factory) *cobra.Command {
	c := &cobra.Command{
		Use:   "get",
		Short: "Show job records or build-cluster reachability",
		Long: heredoc.Doc(`
			Show lockctl's objects in the job namespace: the jobs, or the
			reachability of the build clusters as the reconcile loop last
			recorded it.
		`) + "\n" + exitCodeHelp,
		Example: examples(`
			lockctl get jobs
			lockctl get jobs deploy-web-42 -o yaml
			lockctl get clusters
		`),
		// NOTE: without RunE cobra prints help and exits 0 for `get jbos`;
		// an unknown resource is a usage error (exit 2) with a suggestion.
		Args: cobra.ArbitraryArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 0 {
				return flagErrorf("name a resource to get: jobs or clusters")
			}
			if args[0] == "locks" || args[0] == "lock" {
				return flagErrorf("unknown resource %q for %q: locks are shown by %q", args[0], c.CommandPath(), c.Root().Name()+" status")
			}
			msg := fmt.Sprintf("unknown resource %q for %q: use jobs or clusters", args[0], c.CommandPath())
			if s := c.SuggestionsFor(args[0]); len(s) > 0 {
				msg = fmt.Sprintf("unknown resource %q for %q: did you mean %q?", args[0], c.CommandPath(), s[0])
			}
			return flagErrorf("%s", msg)
		},
	}
	c.SuggestionsMinimumDistance = 2
	c.AddCommand(newGetJobsCmd(f, nil), newGetClustersCmd(f, nil))
	return c
}

func newGetJobsCmd(f *Factory, runF func(*getJobsOptions) error) *cobra.Command {
	o := &getJobsOptions{f: f}
	c := &cobra.Command{
		Use:     "jobs [NAME]",
		Aliases: []string{"job"},
		Short:   "Show jobs: state, age, pod and description",
		Long: heredoc.Doc(`
			Show the jobs of the job namespace, oldest first, or the job NAME.
			The table has each job's state, age, pod and description; -o json
			and -o yaml print Kubernetes-style objects (metadata, spec, status).

			No jobs is not a failure: get says so on stderr and exits 0. A NAME
			that does not exist is an error.
		`) + "\n" + exitCodeHelp,
		Example: examples(`
			# Every job in the namespace
			lockctl get jobs -n ci

			# The runs of one job name
			lockctl get jobs --job deploy-web

			# One job as YAML
			lockctl get jobs deploy-web-42 -o yaml
		`),
		Args: maxArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Name = args[0]
			}
			if runF != nil {
				return runF(o)
			}
			return runGetJobs(c.Context(), o)
		},
	}
	c.Flags().StringVar(&o.Job, "job", o.Job, "show only runs of this job name (spec.job)")
	addOutputFlag(c.Flags(), &o.Output, "json", "yaml")
	return c
}

func runGetJobs(ctx context.Context, o *getJobsOptions) error {
	store, err := jobStore(o.f)
	if err != nil {
		return err
	}
	if o.Name != "" {
		j, err := store.Get(ctx, o.Name)
		if err != nil {
			return jobLookupError(err, o.Name, store.Namespace())
		}
		if o.Output != "" {
			return printObject(o.f.IOStreams.Out, o.Output, j)
		}
		printJobTable(o.f.IOStreams.Out, []*job.Job{j}, o.f.Clock.Now())
		return nil
	}
	jobs, err := store.List(ctx, job.ListOptions{JobName: o.Job})
	if err != nil && jobs == nil {
		return err
	}
	if err != nil {
		fmt.Fprintf(o.f.IOStreams.ErrOut, "warning: %v\n", err)
	}
	if len(jobs) == 0 {
		if o.Job != "" {
			fmt.Fprintf(o.f.IOStreams.ErrOut, "no job named %q in namespace %q\n", o.Job, store.Namespace())
		} else {
			fmt.Fprintf(o.f.IOStreams.ErrOut, "no jobs in namespace %q\n", store.Namespace())
		}
		if o.Output == "" {
			return nil
		}
	}
	if o.Output != "" {
		return printObject(o.f.IOStreams.Out, o.Output, listOf(jobs))
	}
	printJobTable(o.f.IOStreams.Out, jobs, o.f.Clock.Now())
	return nil
}

// printJobTable prints jobs as kubectl prints resources.
func printJobTable(w io.Writer, jobs []*job.Job, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "NAME\tJOB\tTYPE\tSTATE\tAGE\tPOD\tBUILD\tDESCRIPTION")
	for _, j := range jobs {
		age := "-"
		if st := j.Status.StartTime; st != nil {
			age = humanDuration(now.Sub(st.Time))
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", j.Name, j.Spec.Job, j.Spec.Type, j.Status.State, age,
			orDash(j.Status.PodName), orDash(j.Status.BuildID), orDash(j.Status.Description))
	}
	tw.Flush()
}

func newGetClustersCmd(f *Factory, runF func(*getClustersOptions) error) *cobra.Command {
	o := &getClustersOptions{f: f}
	c := &cobra.Command{
		Use:     "clusters",
		Aliases: []string{"cluster"},
		Short:   "Show whether each build cluster is reachable",
		Long: heredoc.Doc(`
			Show the reachability of each build cluster as the reconcile loop
			last recorded it: reachable, unreachable or missing-permissions
			(lockctl may not list or create pods there), and since when.

			Nothing recorded yet is not a failure: get says so on stderr and
			exits 0.
		`) + "\n" + exitCodeHelp,
		Example: examples(`
			lockctl get clusters -n ci
		`),
		Args: noArgs(),
		RunE: func(c *cobra.Command, args []string) error {
			if runF != nil {
				return runF(o)
			}
			return runGetClusters(c.Context(), o)
		},
	}
	addOutputFlag(c.Flags(), &o.Output, "json", "yaml")
	return c
}

func runGetClusters(ctx context.Context, o *getClustersOptions) error {
	ns, err := o.f.Namespace()
	if err != nil {
		return err
	}
	cs, err := o.f.Clientset()
	if err != nil {
		return err
	}
	st, err := scheduler.ReadClusterStatus(ctx, cs.CoreV1().ConfigMaps(ns))
	if err != nil {
		return err
	}
	if len(st) == 0 {
		fmt.Fprintf(o.f.IOStreams.ErrOut, "no cluster status recorded in namespace %q: lockctl reconcile records it\n", ns)
		if o.Output == "" {
			return nil
		}
	}
	if o.Output != "" {
		return printObject(o.f.IOStreams.Out, o.Output, st)
	}
	aliases := make([]string, 0, len(st))
	for a := range st {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	tw := tabwriter.NewWriter(o.f.IOStreams.Out, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tSTATE\tSINCE\tPOD NAMESPACE\tMESSAGE")
	now := o.f.Clock.Now()
	for _, a := range aliases {
		s := st[a]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a, s.State, humanDuration(now.Sub(s.Since.Time)), s.Namespace, orDash(s.Message))
	}
	return tw.Flush()
}
