package cmd

import (
	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"
)

func newCompletionCmd(f *Factory) *cobra.Command {
	return &cobra.Command{
		Use:   "completion bash|zsh|fish|powershell",
		Short: "Print a shell completion script",
		Long: heredoc.Doc(`
			Print the completion script for a shell. Load it in the current shell,
			or install it where your shell reads completions.
		`),
		Example: examples(`
			# bash, current shell / permanently
			source <(lockctl completion bash)
			lockctl completion bash > /etc/bash_completion.d/lockctl

			# zsh
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
			return flagErrorf("unsupported shell %q: use bash, zsh, fish or powershell", args[0])
		},
	}
}
