package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/stats"
)

// StatsHelp returns lockctl stats' Long help, before its exit codes.
func StatsHelp() string {
	return Doc(fmt.Sprintf(`
	Show, for the deploy lock of each NAMESPACE (every lock of the lock
	namespace when none is named), how many holds ended, how long they
	lasted and how long their holders had waited for them (median, 90th
	percentile and longest), how they ended (released, expired or lost
	with their pod, superseded by a newer build, forced with release
	--force), the break-glass grants made, how long the lock was frozen,
	and the hours of the day (UTC) in which most holds began.

	The figures come from the lock's record, which keeps its last %d
	holds with their waits: --since 24h sums up the holds that ended in
	the last day (-o wide says when the record's history begins). A hold
	ended by a lockctl before record version 1.9 does not say how long it
	was waited for: WAIT then says of how many holds it is made.

	-o json and -o yaml print LockStats objects (a List for several);
	docs/statistics.md has the fields, the Prometheus metrics the long-running
	processes export, alerts and notifications. Reading changes nothing;
	no lock, or no history, is not an error: stats says so on stderr and
	exits 0.
`, record.MaxHistory))
}

// StatsFlags are lockctl stats' locks and window.
type StatsFlags struct {
	// Targets are the namespaces whose locks to sum up; none means every
	// lock of the lock namespace.
	Targets []string
	// Since is the window: the holds that ended in the last Since; 0
	// means every hold recorded (--since).
	Since time.Duration
}

// AddFlags binds --since.
func (s *StatsFlags) AddFlags(fs *pflag.FlagSet) {
	fs.DurationVar(&s.Since, "since", s.Since, "sum up the holds that ended in the last duration, such as 24h (0: every hold the record keeps)")
}

// Validate checks the targets and that --since is not negative.
func (s *StatsFlags) Validate() error {
	if s.Since < 0 {
		return cmdutil.FlagErrorf("--since must not be negative, got %s", s.Since)
	}
	return ValidateTargets(s.Targets)
}

// Print reads the records of s's locks in l's lock namespace and prints
// their statistics with p, at the lock clock's now: one object or row
// each, several as a List. No lock is said on f's ErrOut.
func (s *StatsFlags) Print(ctx context.Context, f *Factory, l *LockFlags, p *printers.Printer[*stats.LockStats]) error {
	locks, err := NewLockClient(f, l, LockClientOptions{})
	if err != nil {
		return err
	}
	recs, err := locks.Records(ctx, s.Targets...)
	if err != nil {
		return err
	}
	now := f.LockClock().Now()
	var since time.Time
	if s.Since > 0 {
		since = now.Add(-s.Since)
	}
	items := make([]*stats.LockStats, 0, len(recs))
	for _, rec := range recs {
		items = append(items, stats.Summarize(locks.Namespace(), rec, since, now))
	}
	switch {
	case len(items) == 0 && len(s.Targets) == 1:
		fmt.Fprintf(f.IOStreams.ErrOut, "lock %q has no history (%s)\n", s.Targets[0], locks.Describe(s.Targets[0]))
	case len(items) == 0:
		fmt.Fprintf(f.IOStreams.ErrOut, "no locks in namespace %q\n", locks.Namespace())
	}
	if len(s.Targets) == 1 && len(items) == 1 && !p.Flags.IsTable() {
		return p.Print(items[0])
	}
	return p.PrintAll(items, true)
}
