package cmd

import (
	"github.com/spf13/cobra"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/completion"
	"github.com/lockctl/lockctl/job"
)

func newCompletionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: cli.Doc(`
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
		Example: cli.Examples(`
			# bash, current shell / permanently
			source <(lockctl completion bash)
			lockctl completion bash > /etc/bash_completion.d/lockctl

			# zsh (run compinit in ~/.zshrc)
			lockctl completion zsh > "${fpath[1]}/_lockctl"

			# fish
			lockctl completion fish > ~/.config/fish/completions/lockctl.fish
		`),
		Args:      cli.ExactArgs(1),
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

// registerCompletions gives every command of root dynamic completion of
// its arguments and flag values (completion.Register): namespaces for -n,
// --lock-namespace and --pod-namespace, contexts for --context and
// --build-cluster, lock targets and job names for the commands that take
// them, the values of -o, --policy, --priority and --progress, job files
// for -f.
func registerCompletions(root *cobra.Command, f *Factory) {
	cp := &completion.Lister{
		Clientset: f.Clientset,
		RawConfig: func() (clientcmdapi.Config, error) { return f.ConfigFlags.ToRawKubeConfigLoader().RawConfig() },
		LockNamespace: func(flag string) (string, error) {
			return (&cli.LockFlags{LockNamespace: flag}).ResolveLockNamespace(f)
		},
		JobStore: func() (*job.Store, error) { return f.JobStore() },
		Prepare:  func(c *cobra.Command) { _, _ = cli.FlagsFromEnv(c.Flags(), f.Getenv) },
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
		"progress":       cobra.FixedCompletions(cli.ProgressModes, cobra.ShellCompDirectiveNoFileComp),
		"filename":       completion.JobFiles,
		"config":         completion.YAMLFiles,
		"kubeconfig":     completion.AnyFile,
	})
}
