package cli

import (
	"fmt"
	"sort"
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
)

// SetupLogging maps -v and -q onto the logger and the status stream, and
// sends both through the console, so status lines, log entries and the
// live line share one form on stderr.
func (f *Factory) SetupLogging(verbosity int, quiet bool) {
	f.Verbosity = verbosity
	c := f.Console()
	c.SetQuiet(quiet)
	f.IOStreams.ErrOut = c.StatusWriter()
	f.Log.Logger.SetOutput(c.LogWriter())
	f.Log.Logger.SetFormatter(c.LogFormatter())
	level := logrus.InfoLevel
	switch {
	case quiet:
		level = logrus.WarnLevel
	case verbosity == 1:
		level = logrus.DebugLevel
	case verbosity >= 2:
		level = logrus.TraceLevel
	case f.Getenv("JX_LOG_LEVEL") != "":
		return // jx-logging already applied it
	}
	f.Log.Logger.SetLevel(level)
}

// EnvPrefix prefixes the environment variables that set flags:
// LOCKCTL_LOCK_NAMESPACE sets --lock-namespace.
const EnvPrefix = "LOCKCTL_"

// OverrideAnnotation marks a flag, through pflag's annotations, as an
// override that breaks a promise of the lock (--force breaks another's
// hold, --ignore-freeze takes a frozen lock, --token releases whatever the
// caller's identity): it is taken only from the command line, never from
// the environment, so that a variable set once for one step (a pipeline-
// level LOCKCTL_FORCE=true left behind) never applies to every step after
// it. See MarkOverride.
const OverrideAnnotation = "lockctl.dev/override"

// overrideUsage ends the usage line of every override flag.
const overrideUsage = " (command line only: never read from " + EnvPrefix + "*)"

// MarkOverride marks the flags named as overrides (OverrideAnnotation) and
// says so in their usage line. It panics if a flag is not defined: a
// programming error.
func MarkOverride(fs *pflag.FlagSet, names ...string) {
	for _, name := range names {
		fl := fs.Lookup(name)
		if fl == nil {
			panic("cli.MarkOverride: no flag --" + name)
		}
		if err := fs.SetAnnotation(name, OverrideAnnotation, []string{"true"}); err != nil {
			panic(err)
		}
		if !strings.HasSuffix(fl.Usage, overrideUsage) {
			fl.Usage += overrideUsage
		}
	}
}

// IsOverride reports whether fl is marked as an override (MarkOverride).
func IsOverride(fl *pflag.Flag) bool {
	return len(fl.Annotations[OverrideAnnotation]) > 0
}

// EnvVar returns the environment variable of a flag: LOCKCTL_LOCK_NAMESPACE
// for --lock-namespace.
func EnvVar(flag string) string {
	return EnvPrefix + strings.ToUpper(strings.ReplaceAll(flag, "-", "_"))
}

// FlagsFromEnv sets every flag not given on the command line from its
// LOCKCTL_* environment variable, except overrides (MarkOverride): their
// variables, when set, are left alone and returned, in flag order, so that
// the caller says once that they were ignored (IgnoredWarning).
func FlagsFromEnv(fs *pflag.FlagSet, getenv func(string) string) (ignored []string, err error) {
	fs.VisitAll(func(fl *pflag.Flag) {
		if err != nil || fl.Changed {
			return
		}
		name := EnvVar(fl.Name)
		v := getenv(name)
		if v == "" {
			return
		}
		if IsOverride(fl) {
			ignored = append(ignored, name)
			return
		}
		if serr := fs.Set(fl.Name, v); serr != nil {
			err = cmdutil.FlagErrorf("invalid value %q in %s for --%s: %v", v, name, fl.Name, serr)
		}
	})
	return ignored, err
}

// IgnoredWarning is the line that reports an override's variable as
// ignored: "warning: LOCKCTL_FORCE is ignored: --force is taken only from
// the command line; pass --force to mean it".
func IgnoredWarning(variable string) string {
	flag := "--" + strings.ReplaceAll(strings.ToLower(strings.TrimPrefix(variable, EnvPrefix)), "_", "-")
	return fmt.Sprintf("warning: %s is ignored: %s is taken only from the command line; pass %s to mean it", variable, flag, flag)
}

// Overrides returns the names of the override flags of c and its
// subcommands (MarkOverride), sorted and without repeats: what the help and
// docs/environment.md list as never read from the environment.
func Overrides(c *cobra.Command) []string {
	seen := map[string]bool{}
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		c.Flags().VisitAll(func(fl *pflag.Flag) {
			if IsOverride(fl) {
				seen[fl.Name] = true
			}
		})
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	walk(c)
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}
