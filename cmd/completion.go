package cmd

import (
	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/cmd/internal/cli"
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
			return cli.CompletionScript(c.Root(), args[0], f.IOStreams.Out)
		},
	}
}
