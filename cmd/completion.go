package cmd

import (
	"context"
	"sort"
	"strings"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/lockctl/lockctl/internal/cmdutil"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
)

func newCompletionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: heredoc.Doc(`
			Print the completion script for a shell. Load it in the current shell,
			or install it where your shell reads completions.

			Completion offers what lockctl works with, as kubectl does: namespaces
			(-n, --lock-namespace), kubeconfig contexts (--context), lock targets
			(acquire, release, status), job records (logs, abort, get jobs), and
			the values of -o, --policy and --progress. Names are read from the
			cluster with a 3s timeout; when it cannot be reached, nothing is
			offered and nothing is printed.

			bash needs the bash-completion package (version 2), which most
			distributions install with bash; on macOS: brew install
			bash-completion@2.
		`),
		Example: examples(`
			# bash, current shell / permanently
			source <(lockctl completion bash)
			lockctl completion bash > /etc/bash_completion.d/lockctl

			# zsh (run compinit in ~/.zshrc)
			lockctl completion zsh > "${fpath[1]}/_lockctl"

			# fish
			lockctl completion fish > ~/.config/fish/completions/lockctl.fish
		`),
		Args:      exactArgs(1),
		ValidArgs: []string{"bash", "zsh", "fish", "powershell"},
		RunE: func(c *cobra.Command, args []string) error {
			out := f.IOStreams.Out
			root := c.Root()
			switch args[0] {
			case "bash":
				return root.GenBashCompletionV2(out, true)
			case "zsh":
				return root.GenZshCompletion(out)
			case "fish":
				return root.GenFishCompletion(out, true)
			case "powershell":
				return root.GenPowerShellCompletionWithDesc(out)
			}
			return cmdutil.FlagErrorf("unsupported shell %q: use bash, zsh, fish or powershell", args[0])
		},
	}
}

// completionTimeout bounds the API calls of one shell completion: a
// completion never hangs on an unreachable or slow API server; it offers
// nothing instead.
const completionTimeout = 3 * time.Second

// flagValues are the values offered for enum flags, by flag name.
var flagValues = map[string][]string{
	"policy":   {"newest", "fifo"},
	"progress": {"auto", "tty", "plain"},
	"priority": {"high", "normal", "low"},
}

// completer offers the shell the names lockctl works with, read from the
// cluster (namespaces, locks, jobs) or the kubeconfig (contexts). Errors
// are never shown: a shell completion prints nothing but candidates, so a
// failed lookup offers nothing.
type completer struct{ f *Factory }

// registerCompletions gives every command of root dynamic completion of
// its arguments and flag values, as kubectl does: namespaces for -n,
// --lock-namespace and --pod-namespace, contexts for --context and
// --build-cluster, lock targets and job names for the commands that take
// them, the values of -o, --policy and --progress, job files for -f.
// Flags that take free text offer nothing rather than file names. A command
// or flag that already has a completion function keeps it.
func registerCompletions(root *cobra.Command, f *Factory) {
	cp := &completer{f: f}
	args := map[string]cobra.CompletionFunc{
		"acquire":  cp.manyArgs(cp.targetsOrNamespaces),
		"release":  cp.manyArgs(cp.lockTargets),
		"freeze":   cp.oneArg(cp.targetsOrNamespaces),
		"unfreeze": cp.oneArg(cp.lockTargets),
		"status":   cp.oneArg(cp.lockTargets),
		"abort":    cp.oneArg(cp.activeJobs),
		"logs":     cp.oneArg(cp.jobs),
		"get jobs": cp.manyArgs(cp.jobs),
		"wait":     cp.manyArgs(cp.jobs),
	}
	flags := map[string]cobra.CompletionFunc{
		"namespace":      cp.namespaces,
		"lock-namespace": cp.namespaces,
		"pod-namespace":  cp.namespaces,
		"context":        cp.contexts,
		"build-cluster":  cp.buildClusters,
		"lock":           cp.targetsOrNamespaces,
		"job":            cp.jobNames,
		"reconcile/job":  cp.jobs,
		"filename":       jobFiles,
		"config":         yamlFiles,
		"kubeconfig":     anyFile,
	}
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
	if v, ok := fl.Value.(outputFlag); ok {
		return cobra.FixedCompletions(v.allowed, cobra.ShellCompDirectiveNoFileComp)
	}
	if vals, ok := flagValues[fl.Name]; ok {
		return cobra.FixedCompletions(vals, cobra.ShellCompDirectiveNoFileComp)
	}
	return cobra.NoFileCompletions
}

func jobFiles(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return []cobra.Completion{"yaml", "yml", "json"}, cobra.ShellCompDirectiveFilterFileExt
}

func yamlFiles(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return []cobra.Completion{"yaml", "yml"}, cobra.ShellCompDirectiveFilterFileExt
}

func anyFile(*cobra.Command, []string, string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return nil, cobra.ShellCompDirectiveDefault
}

// oneArg completes the first argument with list, and nothing after it.
func (cp *completer) oneArg(list cobra.CompletionFunc) cobra.CompletionFunc {
	return func(c *cobra.Command, args []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
		if len(args) > 0 {
			return nil, cobra.ShellCompDirectiveNoFileComp
		}
		return list(c, args, toComplete)
	}
}

// manyArgs completes every argument with list, leaving out those given.
func (cp *completer) manyArgs(list cobra.CompletionFunc) cobra.CompletionFunc {
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
// completionTimeout, with the LOCKCTL_* environment applied to c's flags
// (no PersistentPreRun runs for a completion).
func (cp *completer) context(c *cobra.Command) (context.Context, context.CancelFunc) {
	_ = flagsFromEnv(c.Flags(), cp.f.Getenv)
	ctx := c.Context()
	if ctx == nil {
		ctx = context.Background()
	}
	return context.WithTimeout(ctx, completionTimeout)
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

func (cp *completer) namespaces(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := cp.context(c)
	defer cancel()
	return matching(cp.namespaceNames(ctx), toComplete), cobra.ShellCompDirectiveNoFileComp
}

func (cp *completer) namespaceNames(ctx context.Context) map[string]string {
	names := map[string]string{}
	cs, err := cp.f.Clientset()
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

func (cp *completer) contexts(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return matching(cp.contextNames(c), toComplete), cobra.ShellCompDirectiveNoFileComp
}

func (cp *completer) contextNames(c *cobra.Command) map[string]string {
	_ = flagsFromEnv(c.Flags(), cp.f.Getenv)
	names := map[string]string{}
	raw, err := cp.f.ConfigFlags.ToRawKubeConfigLoader().RawConfig()
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

// buildClusters completes --build-cluster ALIAS=CONTEXT: the context after
// the "=".
func (cp *completer) buildClusters(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
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

func (cp *completer) lockTargets(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	ctx, cancel := cp.context(c)
	defer cancel()
	return matching(cp.lockNames(ctx, c), toComplete), cobra.ShellCompDirectiveNoFileComp
}

// targetsOrNamespaces offers what can be locked: the targets of existing
// locks and the cluster's namespaces.
func (cp *completer) targetsOrNamespaces(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
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
func (cp *completer) lockNames(ctx context.Context, c *cobra.Command) map[string]string {
	names := map[string]string{}
	var lf lockFlags
	if fl := c.Flags().Lookup("lock-namespace"); fl != nil {
		lf.LockNamespace = fl.Value.String()
	}
	ns, err := lf.lockNamespace(cp.f)
	if err != nil {
		return names
	}
	cs, err := cp.f.Clientset()
	if err != nil {
		return names
	}
	sel := labels.SelectorFromSet(labels.Set{lock.ManagedByLabel: lock.ManagedByValue, lock.KindLabel: lock.KindValue}).String()
	list, err := cs.CoreV1().ConfigMaps(ns).List(ctx, metav1.ListOptions{LabelSelector: sel})
	if err != nil {
		return names
	}
	for i := range list.Items {
		rec, err := lock.Decode(&list.Items[i])
		if err != nil || rec.Target == "" {
			continue
		}
		names[rec.Target] = "held by " + rec.Holder.Identity.String()
	}
	return names
}

func (cp *completer) jobs(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return cp.jobRecords(c, toComplete, false, recordName), cobra.ShellCompDirectiveNoFileComp
}

// recordName is a job record's name, described by its state.
func recordName(j *job.Job) (string, string) { return j.Name, string(j.Status.State) }

func (cp *completer) activeJobs(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return cp.jobRecords(c, toComplete, true, recordName), cobra.ShellCompDirectiveNoFileComp
}

// jobNames offers the job names (spec.job) of the records, for --job.
func (cp *completer) jobNames(c *cobra.Command, _ []string, toComplete string) ([]cobra.Completion, cobra.ShellCompDirective) {
	return cp.jobRecords(c, toComplete, false, func(j *job.Job) (string, string) { return j.Spec.Job, "" }), cobra.ShellCompDirectiveNoFileComp
}

// jobRecords offers key(j), a name and its description, of the job
// records in the job namespace.
func (cp *completer) jobRecords(c *cobra.Command, toComplete string, activeOnly bool, key func(*job.Job) (string, string)) []cobra.Completion {
	ctx, cancel := cp.context(c)
	defer cancel()
	store, err := jobStore(cp.f)
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
