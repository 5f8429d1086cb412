package cmd

import (
	"strings"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lockctl/lockctl/internal/cmdutil"
)

// examples indents an Example block the way kubectl prints it.
func examples(s string) string {
	lines := strings.Split(strings.TrimRight(heredoc.Doc(s), "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}

// exactArgs is cobra.ExactArgs reporting a usage error (exit 2).
//
//nolint:unparam // every command takes one argument today; n keeps cobra's shape.
func exactArgs(n int) cobra.PositionalArgs {
	return wrapArgs(cobra.ExactArgs(n))
}

// minArgs is cobra.MinimumNArgs reporting a usage error (exit 2).
func minArgs(n int) cobra.PositionalArgs {
	return wrapArgs(cobra.MinimumNArgs(n))
}

// maxArgs is cobra.MaximumNArgs reporting a usage error (exit 2).
func maxArgs(n int) cobra.PositionalArgs {
	return wrapArgs(cobra.MaximumNArgs(n))
}

// noArgs is cobra.NoArgs reporting a usage error (exit 2).
func noArgs() cobra.PositionalArgs { return wrapArgs(cobra.NoArgs) }

func wrapArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return &cmdutil.FlagError{Err: err}
		}
		return nil
	}
}

// validateTarget checks that a lock target is a namespace name.
func validateTarget(target string) error {
	if errs := validation.IsDNS1123Label(target); len(errs) > 0 {
		return cmdutil.FlagErrorf("invalid namespace %q: %s", target, errs[0])
	}
	return nil
}

// validateTargets checks the namespaces of several locks: each valid, none
// named twice.
func validateTargets(targets []string) error {
	seen := map[string]bool{}
	for _, t := range targets {
		if err := validateTarget(t); err != nil {
			return err
		}
		if seen[t] {
			return cmdutil.FlagErrorf("namespace %q is named twice", t)
		}
		seen[t] = true
	}
	return nil
}
