package cli

import (
	"errors"
	"strings"
	"time"
	"unicode"

	"github.com/spf13/cobra"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/run"
)

// Doc returns the text of a raw string literal written indented with the
// code around it: without the newline it starts with, and without the
// indentation common to its lines (the first line's, when text follows the
// opening quote on it, is not counted, nor are blank lines'; a last line of
// blanks is emptied). It reads the text once and allocates its lines and
// the result, which matters at every start: the commands' help is built
// with them.
func Doc(raw string) string {
	skipFirst := !strings.HasPrefix(raw, "\n")
	if !skipFirst {
		raw = raw[1:]
	}
	lines := strings.Split(raw, "\n")
	indent := -1
	for i, line := range lines {
		if i == 0 && skipFirst {
			continue
		}
		n := leadingSpace(line)
		switch {
		case n == len(line) && i == len(lines)-1 && (indent < 0 || n < indent):
			lines[i] = ""
		case n < len(line) && (indent < 0 || n < indent):
			indent = n
		}
	}
	if indent > 0 {
		for i, line := range lines {
			if (i > 0 || !skipFirst) && len(line) >= indent {
				lines[i] = line[indent:]
			}
		}
	}
	return strings.Join(lines, "\n")
}

// leadingSpace is the number of white-space runes line starts with.
func leadingSpace(line string) int {
	n := 0
	for _, r := range line {
		if !unicode.IsSpace(r) {
			break
		}
		n++
	}
	return n
}

// Examples indents an Example block the way kubectl prints it.
func Examples(s string) string {
	lines := strings.Split(strings.TrimRight(Doc(s), "\n"), "\n")
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

// ValidateKillGrace checks that --ttl leaves time to renew the lock before
// the renew deadline (run.HoldTimings).
func ValidateKillGrace(ttl, grace time.Duration) error {
	if grace < 0 {
		return cmdutil.FlagErrorf("--kill-grace must not be negative, got %s", grace)
	}
	_, err := run.HoldTimings(ttl, grace)
	var te *run.TimingsError
	if !errors.As(err, &te) {
		return err
	}
	least := (3*(te.KillGrace+run.ClockMargin)/2 + 100*time.Millisecond).Truncate(100 * time.Millisecond)
	return cmdutil.FlagErrorf("--ttl %s is too short for a kill grace of %s: run stops the command %s (kill grace) + %s (clock margin) before the lock can expire, "+
		"which leaves no time to renew it first (at a third of --ttl); give --ttl %s or more, or a shorter --kill-grace", ttl, te.KillGrace, te.KillGrace, run.ClockMargin, least)
}

// JobNames strips names, jobs named on the command line, of the job/
// before them (as get jobs -o name prints them), in place, and returns
// the first name given twice, which a command may refuse; "" when none is.
func JobNames(names []string) (twice string) {
	seen := map[string]bool{}
	for i, n := range names {
		n = strings.TrimPrefix(n, "job/")
		names[i] = n
		if seen[n] && twice == "" {
			twice = n
		}
		seen[n] = true
	}
	return twice
}

// ResourceArgs checks the arguments of a parent command whose
// subcommands name resources, as kubectl get's do (lockctl get jobs): it
// runs only when none matched, so no argument, or one that names no
// resource, is a usage error, with a suggestion when one is close. use
// lists the resources ("jobs or clusters"); elsewhere maps a resource
// another command shows to what to say ("locks are shown by \"lockctl
// status\"").
func ResourceArgs(c *cobra.Command, args []string, use string, elsewhere map[string]string) error {
	switch {
	case len(args) == 0:
		return cmdutil.FlagErrorf("name a resource to %s: %s", c.Name(), use)
	case elsewhere[args[0]] != "":
		return cmdutil.FlagErrorf("unknown resource %q for %q: %s", args[0], c.CommandPath(), elsewhere[args[0]])
	}
	if s := c.SuggestionsFor(args[0]); len(s) > 0 {
		return cmdutil.FlagErrorf("unknown resource %q for %q: did you mean %q?", args[0], c.CommandPath(), s[0])
	}
	return cmdutil.FlagErrorf("unknown resource %q for %q: use %s", args[0], c.CommandPath(), use)
}
