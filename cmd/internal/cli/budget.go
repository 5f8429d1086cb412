package cli

import (
	"context"
	"fmt"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/stats"
)

// timeoutFlag is --timeout: a duration, or "auto" for a budget made from
// the lock's history when waiting starts (ContenderFlags.ResolveTimeout).
type timeoutFlag struct {
	d    *time.Duration
	auto *bool
}

func (t timeoutFlag) String() string {
	if t.auto != nil && *t.auto {
		return "auto"
	}
	if t.d == nil || *t.d == 0 {
		return "0" // what pflag takes for no default
	}
	return t.d.String()
}

func (t timeoutFlag) Set(s string) error {
	if s == "auto" {
		*t.auto, *t.d = true, 0
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil {
		return fmt.Errorf("%q is neither a duration (30m, 1h) nor auto", s)
	}
	*t.auto, *t.d = false, d
	return nil
}

func (t timeoutFlag) Type() string { return "duration|auto" }

// ResolveTimeout returns the wait's timeout for the locks of parts, each
// read with its own client at its clock's now (a hold across clusters
// sums every cluster's). With --timeout auto it is the sum of
// each lock's budget (stats.BudgetOf: the contender's place, the recorded
// holds, between a floor and a ceiling), each said on the console when
// the lock is taken or waited for; with a --timeout, it is that, and a
// lock whose expected wait is longer is warned of at once ("at position
// 4 with holds of ~19m, expected wait 57m exceeds --timeout 30m0s").
// Without --timeout (0, no limit) nothing is read. A lock that cannot be
// read gives the budget of no history; its error comes with the wait.
func (c *ContenderFlags) ResolveTimeout(ctx context.Context, f *Factory, parts []lock.Part) time.Duration {
	if !c.TimeoutAuto && c.Timeout == 0 {
		return 0
	}
	var total time.Duration
	for _, p := range parts {
		locks, target := p.Locks, p.Request.Target
		var rec *record.Record
		if recs, err := locks.Records(ctx, target); err == nil && len(recs) == 1 {
			rec = recs[0]
		}
		b := stats.BudgetOf(rec, locks.Clock().Now())
		name := lock.Where(locks.Context(), target)
		fields := logrus.Fields{"lock": name}
		switch {
		case c.TimeoutAuto:
			total += b.Timeout
			if b.Waits {
				f.Console().Statusf(term.StyleNone, fields, "waiting at most %s for lock %q (--timeout auto: %s)", b.Timeout, name, b.Describe())
			}
		default:
			if msg := b.Exceeds(c.Timeout, "--timeout "+c.Timeout.String()); msg != "" && b.Waits {
				f.Console().Statusf(term.StyleWarn, fields, "warning: lock %q: %s", name, msg)
			}
		}
	}
	if !c.TimeoutAuto {
		return c.Timeout
	}
	return min(total, stats.BudgetCeiling)
}
