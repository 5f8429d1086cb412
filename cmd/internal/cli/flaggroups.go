package cli

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/lock/record"
)

// The flag groups of the commands that share flags, as kubectl's
// genericclioptions.PrintFlags group -o and its kin: each group holds its
// values, binds them with AddFlags and checks them with Validate; a command
// embeds the groups it takes in its options. printers.PrintFlags is the
// reading commands' -o group.

// WatchFlags are a reading command's -w/--watch and --timeout, as kubectl
// get -w has them.
type WatchFlags struct {
	// Watch prints every change after the objects shown (-w).
	Watch bool
	// Timeout ends -w after this long, without error; 0 means until
	// interrupted.
	Timeout time.Duration
}

// AddFlags binds -w/--watch and --timeout; what names what the command
// prints first ("the locks").
func (w *WatchFlags) AddFlags(fs *pflag.FlagSet, what string) {
	fs.BoolVarP(&w.Watch, "watch", "w", w.Watch, "after "+what+", print every change until interrupted")
	fs.DurationVar(&w.Timeout, "timeout", w.Timeout, "with -w, stop watching after this long (0 means until interrupted)")
}

// Validate refuses a negative --timeout.
func (w *WatchFlags) Validate() error {
	if w.Timeout < 0 {
		return cmdutil.FlagErrorf("invalid --timeout %s: it cannot be negative", w.Timeout)
	}
	return nil
}

// Until runs watch (a -w) until its context ends; --timeout, when set,
// ends it without error, as its end by design.
func (w *WatchFlags) Until(ctx context.Context, watch func(context.Context) error) error {
	if w.Timeout <= 0 {
		return watch(ctx)
	}
	wctx, cancel := context.WithTimeout(ctx, w.Timeout)
	defer cancel()
	err := watch(wctx)
	if err != nil && ctx.Err() == nil && errors.Is(wctx.Err(), context.DeadlineExceeded) {
		return nil
	}
	return err
}

// ValidateRead checks a reading command's -w group (nil when it has
// none) and its -o group, which it returns parsed (PrintFlags.ToPrinter).
func ValidateRead(w *WatchFlags, p *printers.PrintFlags) (*printers.OutputFlags, error) {
	out, err := p.ToPrinter()
	if err != nil {
		return nil, cmdutil.FlagErrorf("%v", err)
	}
	if w == nil {
		return out, nil
	}
	return out, w.Validate()
}

// ProgressModes are the values of --progress.
var ProgressModes = []string{"auto", "tty", "plain"}

// ContenderFlags are the flags of a command that waits for locks and holds
// them, as acquire and run do: --ttl, --timeout, --policy, --priority,
// --ignore-freeze and --progress.
type ContenderFlags struct {
	// TTL is how long a hold lasts without renewal (--ttl).
	TTL time.Duration
	// Timeout gives up waiting after this long (--timeout); 0 waits for
	// ever.
	Timeout time.Duration
	// TimeoutAuto makes the timeout a budget from the locks' history
	// (--timeout auto, ResolveTimeout); Timeout is then 0.
	TimeoutAuto bool
	// Policy and Priority order the queue (--policy, --priority).
	Policy   record.Policy
	Priority record.Priority
	// IgnoreFreeze takes a frozen lock (an emergency); the freeze records
	// it. An override: taken only from the command line.
	IgnoreFreeze bool
	// Progress is the display while waiting, one of ProgressModes.
	Progress string
	// Apps are the GitOps applications the hold deploys (--app), recorded
	// with the claim; none names none.
	Apps []record.App
}

// NewContenderFlags returns the group with its defaults: a hold of ttl,
// newest-wins, normal priority, progress auto.
func NewContenderFlags(ttl time.Duration) ContenderFlags {
	return ContenderFlags{TTL: ttl, Policy: record.PolicyNewest, Priority: record.PriorityNormal, Progress: "auto"}
}

// ContenderUsage is the help of the contender flags whose meaning differs
// between commands.
type ContenderUsage struct {
	TTL, Timeout, Progress string
}

// AddFlags binds the group, marking --ignore-freeze as an override.
func (c *ContenderFlags) AddFlags(fs *pflag.FlagSet, usage ContenderUsage) {
	fs.DurationVar(&c.TTL, "ttl", c.TTL, usage.TTL)
	fs.Var(timeoutFlag{d: &c.Timeout, auto: &c.TimeoutAuto}, "timeout", usage.Timeout)
	AddPolicyFlag(fs, &c.Policy)
	AddPriorityFlag(fs, &c.Priority)
	fs.BoolVar(&c.IgnoreFreeze, "ignore-freeze", c.IgnoreFreeze, "emergency: take the lock even while it is frozen (recorded in the freeze with your identity)")
	fs.StringVar(&c.Progress, "progress", c.Progress, usage.Progress)
	AddAppFlag(fs, &c.Apps)
	MarkOverride(fs, "ignore-freeze")
}

// Validate checks --ttl positive, --timeout not negative and --progress
// one of ProgressModes.
func (c *ContenderFlags) Validate() error {
	switch {
	case c.TTL <= 0:
		return cmdutil.FlagErrorf("--ttl must be positive, got %s", c.TTL)
	case c.Timeout < 0:
		return cmdutil.FlagErrorf("--timeout must not be negative, got %s", c.Timeout)
	case !slices.Contains(ProgressModes, c.Progress):
		return cmdutil.FlagErrorf("--progress must be auto, tty or plain, got %q", c.Progress)
	}
	return nil
}

// GlobalFlags are the flags of every command: -v/--verbosity, -q/--quiet
// and the hidden --timestamps.
type GlobalFlags struct {
	// Verbosity is the log detail: 0 status, 1 debug, 2 detail, 3+ trace.
	Verbosity int
	// Quiet prints nothing but results and errors.
	Quiet bool
	// Timestamps is auto, true or false: whether stderr lines outside a
	// terminal start with the UTC time.
	Timestamps string
}

// NewGlobalFlags returns the group with its defaults.
func NewGlobalFlags() GlobalFlags { return GlobalFlags{Timestamps: "auto"} }

// AddFlags binds the group to the root's persistent flags.
func (g *GlobalFlags) AddFlags(fs *pflag.FlagSet) {
	fs.IntVarP(&g.Verbosity, "verbosity", "v", g.Verbosity, "log detail: 0 status, 1 debug, 2 detail, 3+ trace")
	fs.BoolVarP(&g.Quiet, "quiet", "q", g.Quiet, "print nothing but results and errors")
	fs.Var(EnumFlag(&g.Timestamps, "auto", "true", "false"), "timestamps",
		"start stderr lines outside a terminal with the UTC time: auto (yes, except in GitHub Actions and GitLab CI logs, which time each line), true or false")
	// NOTE: hidden, as the rarely needed override of auto; docs/output.md
	// has it. Shown, it would be in the help of every command.
	_ = fs.MarkHidden("timestamps")
}

// Apply sets f's logging and console up from the flags, once they are
// parsed (Factory.SetupLogging).
func (g *GlobalFlags) Apply(f *Factory) {
	f.SetupLogging(g.Verbosity, g.Quiet)
	if g.Timestamps != "auto" {
		f.Console().SetTimestamps(g.Timestamps == "true")
	}
}

// EndFlags say when something ends: --for DURATION from now or --until
// TIME (RFC 3339), one of the two, as lockctl freeze takes them.
type EndFlags struct {
	// For is how long from now; 0 means not given.
	For time.Duration
	// Until is the end as given; "" means not given.
	Until string
}

// AddFlags binds --for and --until; what names what ends ("the freeze").
func (e *EndFlags) AddFlags(fs *pflag.FlagSet, what string) {
	fs.DurationVar(&e.For, "for", e.For, "how long "+what+" lasts from now")
	fs.StringVar(&e.Until, "until", e.Until, "when "+what+" ends, RFC 3339 (2026-12-24T08:00:00Z)")
}

// Validate requires one of --for (positive) and --until (RFC 3339);
// what names what ends ("the freeze").
func (e *EndFlags) Validate(what string) error {
	switch {
	case e.For == 0 && e.Until == "":
		return cmdutil.FlagErrorf("say how long %s lasts with --for DURATION or --until TIME", what)
	case e.For != 0 && e.Until != "":
		return cmdutil.FlagErrorf("give either --for or --until, not both")
	case e.For < 0:
		return cmdutil.FlagErrorf("--for must be positive, got %s", e.For)
	}
	if _, err := e.End(time.Time{}); err != nil {
		return cmdutil.FlagErrorf("invalid --until %q: want an RFC 3339 time such as 2026-12-24T08:00:00Z", e.Until)
	}
	return nil
}

// End is when it ends: --until, or --for after now.
func (e *EndFlags) End(now time.Time) (time.Time, error) {
	if e.Until != "" {
		return time.Parse(time.RFC3339, e.Until)
	}
	return now.Add(e.For), nil
}
