package cli

import (
	"slices"
	"strings"
	"time"

	"github.com/MakeNowJust/heredoc"
	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lockctl/lockctl/internal/cli/cmdutil"
)

// Examples indents an Example block the way kubectl prints it.
func Examples(s string) string {
	lines := strings.Split(strings.TrimRight(heredoc.Doc(s), "\n"), "\n")
	for i, l := range lines {
		if l != "" {
			lines[i] = "  " + l
		}
	}
	return strings.Join(lines, "\n")
}

// ExactArgs is cobra.ExactArgs reporting a usage error (exit 2).
//
//nolint:unparam // every command takes one argument today; n keeps cobra's shape.
func ExactArgs(n int) cobra.PositionalArgs {
	return WrapArgs(cobra.ExactArgs(n))
}

// MinArgs is cobra.MinimumNArgs reporting a usage error (exit 2).
func MinArgs(n int) cobra.PositionalArgs {
	return WrapArgs(cobra.MinimumNArgs(n))
}

// MaxArgs is cobra.MaximumNArgs reporting a usage error (exit 2).
func MaxArgs(n int) cobra.PositionalArgs {
	return WrapArgs(cobra.MaximumNArgs(n))
}

// NoArgs is cobra.NoArgs reporting a usage error (exit 2).
func NoArgs() cobra.PositionalArgs { return WrapArgs(cobra.NoArgs) }

// WrapArgs makes the error of check a usage error (exit 2).
func WrapArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		if err := check(c, args); err != nil {
			return &cmdutil.FlagError{Err: err}
		}
		return nil
	}
}

// ValidateTarget checks that a lock target is a namespace name.
func ValidateTarget(target string) error {
	if errs := validation.IsDNS1123Label(target); len(errs) > 0 {
		return cmdutil.FlagErrorf("invalid namespace %q: %s", target, errs[0])
	}
	return nil
}

// ValidateTargets checks the namespaces of several locks: each valid, none
// named twice.
func ValidateTargets(targets []string) error {
	seen := map[string]bool{}
	for _, t := range targets {
		if err := ValidateTarget(t); err != nil {
			return err
		}
		if seen[t] {
			return cmdutil.FlagErrorf("namespace %q is named twice", t)
		}
		seen[t] = true
	}
	return nil
}

// ProgressModes are the values of --progress.
var ProgressModes = []string{"auto", "tty", "plain"}

// ValidateWait checks the flags of a command that waits for locks and
// holds them, as acquire and run do: --ttl positive, --timeout not
// negative, --progress one of ProgressModes.
func ValidateWait(ttl, timeout time.Duration, progress string) error {
	switch {
	case ttl <= 0:
		return cmdutil.FlagErrorf("--ttl must be positive, got %s", ttl)
	case timeout < 0:
		return cmdutil.FlagErrorf("--timeout must not be negative, got %s", timeout)
	case !slices.Contains(ProgressModes, progress):
		return cmdutil.FlagErrorf("--progress must be auto, tty or plain, got %q", progress)
	}
	return nil
}
