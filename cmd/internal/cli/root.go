package cli

import (
	"fmt"
	"strings"

	"github.com/spf13/cobra"
)

// kubectlPluginPrefix starts the name of a kubectl plugin's executable.
const kubectlPluginPrefix = "kubectl-"

// PreRun is the root's PersistentPreRunE: the flags not given take their
// LOCKCTL_* variables (FlagsFromEnv), then g applies to f (Apply), then a
// warning is printed for each variable ignored (an override's).
func (g *GlobalFlags) PreRun(f *Factory) func(*cobra.Command, []string) error {
	return func(c *cobra.Command, _ []string) error {
		ignored, err := FlagsFromEnv(c.Flags(), f.Getenv)
		if err != nil {
			return err
		}
		g.Apply(f)
		for _, v := range ignored {
			fmt.Fprintln(f.IOStreams.ErrOut, IgnoredWarning(v))
		}
		return nil
	}
}

// NameRoot names root as the user typed it: kubectl runs kubectl-lockctl
// (executable) for `kubectl lockctl`, and usage lines and hints then name
// "kubectl lockctl".
func NameRoot(root *cobra.Command, executable string) {
	if name, ok := strings.CutPrefix(executable, kubectlPluginPrefix); ok {
		root.Annotations = map[string]string{cobra.CommandDisplayNameAnnotation: "kubectl " + name}
	}
}

// ListOverrides puts in the %s of root's Long the flags marked as
// overrides (MarkOverride) of its commands, as --name, comma-separated,
// once every command is added: the help names them from the marks, not
// from a list of their own.
func ListOverrides(root *cobra.Command) {
	var overrides []string
	for _, name := range Overrides(root) {
		overrides = append(overrides, "--"+name)
	}
	root.Long = strings.Replace(root.Long, "%s", strings.Join(overrides, ", "), 1)
}
