package cli

import (
	"strings"

	"github.com/sirupsen/logrus"
	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/internal/cmdutil"
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

// FlagsFromEnv sets every flag not given on the command line from its
// LOCKCTL_* environment variable.
func FlagsFromEnv(fs *pflag.FlagSet, getenv func(string) string) error {
	var err error
	fs.VisitAll(func(fl *pflag.Flag) {
		if err != nil || fl.Changed {
			return
		}
		name := EnvPrefix + strings.ToUpper(strings.ReplaceAll(fl.Name, "-", "_"))
		v := getenv(name)
		if v == "" {
			return
		}
		if serr := fs.Set(fl.Name, v); serr != nil {
			err = cmdutil.FlagErrorf("invalid value %q in %s for --%s: %v", v, name, fl.Name, serr)
		}
	})
	return err
}
