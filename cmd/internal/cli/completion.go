package cli

import (
	"io"

	"github.com/spf13/cobra"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/completion"
	"github.com/lockctl/lockctl/job"
)

// Completing reports whether args are a shell asking for completions
// (lockctl __complete …, as the scripts of lockctl completion call it):
// only then are the completion functions registered, which walks every
// command's flags (about 90 KB of allocations, at every start otherwise).
func Completing(args []string) bool {
	return len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd)
}

// CompletionScript writes the completion script of root for shell (bash,
// zsh, fish or powershell) to out.
func CompletionScript(root *cobra.Command, shell string, out io.Writer) error {
	switch shell {
	case "bash":
		return root.GenBashCompletionV2(out, true)
	case "zsh":
		return root.GenZshCompletion(out)
	case "fish":
		return root.GenFishCompletion(out, true)
	case "powershell":
		return root.GenPowerShellCompletionWithDesc(out)
	}
	return cmdutil.FlagErrorf("unsupported shell %q: use bash, zsh, fish or powershell", shell)
}

// RegisterCompletions gives every command of root dynamic completion of
// its arguments and flag values (completion.Register): namespaces for -n,
// --lock-namespace and --pod-namespace, contexts for --context and
// --build-cluster, lock targets and job names for the commands that take
// them, the values of -o, --policy, --priority and --progress, job files
// for -f.
func RegisterCompletions(root *cobra.Command, f *Factory) {
	cp := &completion.Lister{
		Clientset: f.Clientset,
		RawConfig: func() (clientcmdapi.Config, error) { return f.ConfigFlags.ToRawKubeConfigLoader().RawConfig() },
		LockNamespace: func(flag string) (string, error) {
			return (&LockFlags{LockNamespace: flag}).ResolveLockNamespace(f)
		},
		JobStore: func() (*job.Store, error) { return f.JobStore() },
		Prepare:  func(c *cobra.Command) { _, _ = FlagsFromEnv(c.Flags(), f.Getenv) },
	}
	completion.Register(root, map[string]cobra.CompletionFunc{
		"acquire":  completion.ManyArgs(cp.TargetsOrNamespaces),
		"release":  completion.ManyArgs(cp.LockTargets),
		"freeze":   completion.OneArg(cp.TargetsOrNamespaces),
		"unfreeze": completion.OneArg(cp.LockTargets),
		"status":   completion.OneArg(cp.LockTargets),
		"abort":    completion.OneArg(cp.ActiveJobs),
		"logs":     completion.OneArg(cp.Jobs),
		"get jobs": completion.ManyArgs(cp.Jobs),
		"wait":     completion.ManyArgs(cp.Jobs),
	}, map[string]cobra.CompletionFunc{
		"namespace":      cp.Namespaces,
		"lock-namespace": cp.Namespaces,
		"pod-namespace":  cp.Namespaces,
		"context":        cp.Contexts,
		"build-cluster":  cp.BuildClusters,
		"lock":           cp.TargetsOrNamespaces,
		"job":            cp.JobNames,
		"reconcile/job":  cp.Jobs,
		"progress":       cobra.FixedCompletions(ProgressModes, cobra.ShellCompDirectiveNoFileComp),
		"filename":       completion.JobFiles,
		"config":         completion.YAMLFiles,
		"kubeconfig":     completion.AnyFile,
	})
}
