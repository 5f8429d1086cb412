// Package completion offers the shell the names lockctl works with, as
// kubectl's completion does: namespaces, kubeconfig contexts, lock targets
// and job records, read from the cluster or the kubeconfig within Timeout.
// Errors are never shown: a shell completion prints nothing but
// candidates, so a failed lookup offers nothing.
package completion

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock/record"
)

// Timeout bounds the API calls of one shell completion: a
// completion never hangs on an unreachable or slow API server; it offers
// nothing instead.
const Timeout = 3 * time.Second

// Lister offers the names read from the cluster (namespaces, locks, jobs)
// or the kubeconfig (contexts), through the functions it is given.
type Lister struct {
	// Clientset returns the client of the current context.
	Clientset func() (kube.Interface, error)
	// RawConfig returns the kubeconfig, for its contexts.
	RawConfig func() (clientcmdapi.Config, error)
	// LockNamespace resolves the lock namespace from the command's
	// --lock-namespace ("" when not given or not a flag of the command).
	LockNamespace func(lockNamespace string) (string, error)
	// JobStore returns the store of the job records of the job namespace.
	JobStore func() (*job.Store, error)
	// Prepare applies to c's flags what no PersistentPreRun applies
	// during a completion (the LOCKCTL_* environment); nil does nothing.
	Prepare func(c *cobra.Command)
}

// Register gives every command of root dynamic completion of its
// arguments and flag values, as kubectl does: args by command path
// ("get jobs"), flags by "path/name" or by name. A flag of free text
// offers nothing rather than file names; the values of an enum flag (a
// pflag.Value with an Allowed method) are offered when flags names none. A
// command or flag that already has a completion function keeps it.
func Register(root *cobra.Command, args, flags map[string]cobra.CompletionFunc) {
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		path := strings.TrimPrefix(strings.TrimPrefix(c.CommandPath(), root.CommandPath()), " ")
		if fn, ok := args[path]; ok && c.ValidArgsFunction == nil {
			c.ValidArgsFunction = fn
		}
		register := func(fl *pflag.Flag) {
			if _, ok := c.GetFlagCompletionFunc(fl.Name); ok {
				return
			}
			_ = c.RegisterFlagCompletionFunc(fl.Name, flagCompletion(flags, path, fl))
		}
		c.LocalNonPersistentFlags().VisitAll(register)
		c.PersistentFlags().VisitAll(register)
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(root)
}

// flagCompletion is what a flag of the command at path offers: its
// function in flags (by "path/name", else by name), the values of an enum
// flag, or nothing (no file names) for a flag of free text.
func flagCompletion(flags map[string]cobra.CompletionFunc, path string, fl *pflag.Flag) cobra.CompletionFunc {
	if fn, ok := flags[path+"/"+fl.Name]; ok {
		return fn
	}
	if fn, ok := flags[fl.Name]; ok {
		return fn
	}
	if v, ok := fl.Value.(interface{ Allowed() []string }); ok {
		return cobra.FixedCompletions(v.Allowed(), cobra.ShellCompDirectiveNoFileComp)
	}
	return cobra.NoFileCompletions
}

// JobFiles offers job files: YAML and JSON.
func JobFiles(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return []cobra.Completion{"yaml", "yml", "json"}, cobra.ShellCompDirectiveFilterFileExt
}

// YAMLFiles offers YAML files.
func YAMLFiles(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return []cobra.Completion{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

// AnyFile offers every file.
func AnyFile(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveDefault
}

// OneArg completes the first argument with list, and nothing after it.
func OneArg(list cobra.CompletionFunc) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return list(c, args, toComplete)
	}
}

// ManyArgs completes every argument with list, leaving out those given.
func ManyArgs(list cobra.CompletionFunc) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		all, dir := list(c, args, toComplete)
		given := map[string]bool{}
		for _, a := range args {
			given[a] = true
		}
		out := all[:0]
		for _, s := range all {
			if name, _, _ := strings.Cut(s, "\t"); !given[name] {
				out = append(out, s)
			}
		}
		return out, dir
	}
}

// context returns the context of one completion's API calls, bounded by
// Timeout, with the LOCKCTL_* environment applied to c's flags
// (no PersistentPreRun runs for a completion).
func (cp *Lister) context(c *cobra.Command) (context.Context, context.CancelFunc) {
	cp.prepare(c)
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, Timeout)
}

// matching keeps the names that start with prefix, sorted, each with its
// description after a tab when it has one.
func matching(names map[string]string, prefix string) []cobra.Completion {
	out := make([]cobra.Completion, 0, len(names))
	for name, desc := range names {
		if strings.HasPrefix(name, prefix) {
			out = append(out, cobra.CompletionWithDesc(name, desc))
		}
	}
	sort.Strings(out)
	return out
}

// Namespaces offers the cluster's namespaces.
func (cp *Lister) Namespaces(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := cp.context(c)
	defer cancel()
	return matching(cp.namespaceNames(ctx), toComplete), cobra.ShellCompDirectiveNoFileComp
}

func (cp *Lister) namespaceNames(ctx context.Context) map[string]string {
	names := map[string]string{}
	cs, err := cp.Clientset()
	if err != nil {
		return names
	}
	list, err := cs.CoreV1().Namespaces().List(ctx, metav1.ListOptions{})
	if err != nil {
		return names
	}
	for _, ns := range list.Items {
		names[ns.Name] = ""
	}
	return names
}

// Contexts offers the kubeconfig's contexts, each with its cluster and
// namespace.
func (cp *Lister) Contexts(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return matching(cp.contextNames(c), toComplete), cobra.ShellCompDirectiveNoFileComp
}

func (cp *Lister) contextNames(c *cobra.Command) map[string]string {
	cp.prepare(c)
	names := map[string]string{}
	raw, err := cp.RawConfig()
	if err != nil {
		return names
	}
	for name, ctx := range raw.Contexts {
		names[name] = "cluster " + ctx.Cluster
		if ctx.Namespace != "" {
			names[name] += ", namespace " + ctx.Namespace
		}
	}
	return names
}

// BuildClusters completes --build-cluster ALIAS=CONTEXT: the context after
// the "=".
func (cp *Lister) BuildClusters(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	alias, partial, ok := strings.Cut(toComplete, "=")
	if !ok {
		return nil, cobra.ShellCompDirectiveNoFileComp | cobra.ShellCompDirectiveNoSpace
	}
	out := matching(cp.contextNames(c), partial)
	for i, s := range out {
		out[i] = alias + "=" + s
	}
	return out, cobra.ShellCompDirectiveNoFileComp
}

// LockTargets offers the targets of the locks in the lock namespace.
func (cp *Lister) LockTargets(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := cp.context(c)
	defer cancel()
	return matching(cp.lockNames(ctx, c), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// TargetsOrNamespaces offers what can be locked: the targets of existing
// locks and the cluster's namespaces.
func (cp *Lister) TargetsOrNamespaces(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := cp.context(c)
	defer cancel()
	names := cp.namespaceNames(ctx)
	for name, desc := range cp.lockNames(ctx, c) {
		names[name] = desc
	}
	return matching(names, toComplete), cobra.ShellCompDirectiveNoFileComp
}

// lockNames are the targets of the locks in the lock namespace, each
// described by its holder. Only the ConfigMaps are read: no liveness.
func (cp *Lister) lockNames(ctx context.Context, c *cobra.Command) map[string]string {
	names := map[string]string{}
	flag := ""
	if fl := c.Flags().Lookup("lock-namespace"); fl != nil {
		flag = fl.Value.String()
	}
	ns, err := cp.LockNamespace(flag)
	if err != nil {
		return names
	}
	cs, err := cp.Clientset()
	if err != nil {
		return names
	}
	sel := labels.SelectorFromSet(labels.Set{record.ManagedByLabel: record.ManagedByValue, record.KindLabel: record.KindValue}).String()
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return names
	}
	for i := range list.Items {
		rec, err := record.Decode(&list.Items[i])
		if err != nil || rec.Target == "" {
			continue
		}
		names[rec.Target] = "held by " + rec.Holder.Identity.String()
	}
	return names
}

// Jobs offers the names of the job records, each with its state.
func (cp *Lister) Jobs(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return cp.jobRecords(c, toComplete, false, recordName), cobra.ShellCompDirectiveNoFileComp
}

// recordName is a job record's name, described by its state.
func recordName(j *job.Job) (string, string) { return j.Name, string(j.Status.State) }

// ActiveJobs offers the job records that have not finished.
func (cp *Lister) ActiveJobs(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return cp.jobRecords(c, toComplete, true, recordName), cobra.ShellCompDirectiveNoFileComp
}

// JobNames offers the job names (spec.job) of the records, for --job.
func (cp *Lister) JobNames(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return cp.jobRecords(c, toComplete, false, func(j *job.Job) (string, string) { return j.Spec.Job, "" }), cobra.ShellCompDirectiveNoFileComp
}

// jobRecords offers key(j), a name and its description, of the job
// records in the job namespace.
func (cp *Lister) jobRecords(c *cobra.Command, toComplete string, activeOnly bool, key func(*job.Job) (string, string)) []cobra.Completion {
	ctx, cancel := cp.context(c)
	defer cancel()
	store, err := cp.JobStore()
	if err != nil {
		return nil
	}
	// NOTE: records that cannot be decoded come with an error beside the
	// good ones; the good ones are offered.
	jobs, _ := store.List(ctx, job.ListOptions{ActiveOnly: activeOnly})
	names := map[string]string{}
	for _, j := range jobs {
		if name, desc := key(j); name != "" {
			names[name] = desc
		}
	}
	return matching(names, toComplete)
}

func (cp *Lister) prepare(c *cobra.Command) {
	if cp.Prepare != nil {
		cp.Prepare(c)
	}
}
