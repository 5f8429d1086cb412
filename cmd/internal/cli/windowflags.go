package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/spf13/pflag"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/cmd/internal/cli/printers"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// WindowFlags describe a freeze window, as freeze-windows add takes it:
// --schedule, --duration, --reason and --target, each required but
// --target.
type WindowFlags struct {
	Schedule string
	Duration time.Duration
	Reason   string
	// Targets are the namespaces whose locks the window freezes; none
	// means every lock of the namespace.
	Targets []string
	// Force adds a window whose schedule never fires within a year, or
	// whose freezes cover all of the time (lock.CheckFreezeWindowSchedule).
	Force bool
}

// AddFlags binds the group.
func (w *WindowFlags) AddFlags(fs *pflag.FlagSet) {
	fs.StringVar(&w.Schedule, "schedule", w.Schedule, `when each freeze starts: a cron schedule such as "0 22 * * *" (required)`)
	fs.DurationVar(&w.Duration, "duration", w.Duration, "how long each freeze lasts, such as 8h (required)")
	fs.StringVar(&w.Reason, "reason", w.Reason, "why, shown to everyone who waits (required)")
	fs.StringArrayVar(&w.Targets, "target", w.Targets, "a namespace whose lock the window freezes; repeat for more; none means every lock")
	fs.BoolVar(&w.Force, "force", w.Force, "add a window that never fires within a year, or that freezes all of the time")
}

// Window is the window called name that the flags describe.
func (w *WindowFlags) Window(name string) record.FreezeWindow {
	return record.FreezeWindow{Name: name, Schedule: w.Schedule, Duration: metav1.Duration{Duration: w.Duration}, Reason: w.Reason, Targets: w.Targets}
}

// Validate checks the window called name as lock does
// (lock.ValidateFreezeWindow), and, unless Force is set, that from now on
// it fires within a year and does not freeze all of the time
// (lock.CheckFreezeWindowSchedule), naming the flag (or NAME) at fault.
func (w *WindowFlags) Validate(name string, now time.Time) error {
	err := lock.ValidateFreezeWindow(w.Window(name))
	if err == nil && !w.Force {
		if err = record.CheckFreezeWindowSchedule(w.Window(name), now); err != nil {
			return cmdutil.FlagErrorf("%s; add it anyway with --force", windowFlagError(err))
		}
	}
	return windowFlagError(err)
}

// windowFlagError words a *lock.WindowEntryError as an error of the flag
// (or NAME) at fault, a usage error; others as they are.
func windowFlagError(err error) error {
	var we *record.WindowEntryError
	if !errors.As(err, &we) {
		return err
	}
	flag := map[string]string{"name": "NAME", "schedule": "--schedule", "duration": "--duration", "reason": "--reason", "targets": "--target"}[we.Field]
	if we.Value == "" || we.Value == `""` {
		return cmdutil.FlagErrorf("%s is required", flag)
	}
	return cmdutil.FlagErrorf("invalid %s %s: %s", flag, we.Value, we.Reason)
}

// SayAdded says on w that the window called name was added to the
// windows ConfigMap of namespace ns.
func (w *WindowFlags) SayAdded(out io.Writer, name, ns string) {
	targets := "every lock"
	if len(w.Targets) > 0 {
		targets = strings.Join(w.Targets, ", ")
	}
	fmt.Fprintf(out, "freeze window %q added to configmap %s/%s: %s for %s, %s\n", name, ns, record.FreezeWindowsName, w.Schedule, w.Duration, targets)
}

// Add adds the window name made of w to the lock namespace of l, and says
// so on f's ErrOut (lockctl freeze-windows add).
func (w *WindowFlags) Add(ctx context.Context, f *Factory, l *LockFlags, name string) error {
	locks, err := NewLockClient(f, l, LockClientOptions{})
	if err != nil {
		return err
	}
	if err := locks.AddFreezeWindow(ctx, w.Window(name)); err != nil {
		return err
	}
	w.SayAdded(f.IOStreams.ErrOut, name, locks.Namespace())
	return nil
}

// ListFreezeWindows prints the freeze windows of l's lock namespace in
// output's form, broken ones included and warned of on f's ErrOut
// (lockctl freeze-windows list).
func ListFreezeWindows(ctx context.Context, f *Factory, l *LockFlags, output string) error {
	locks, err := NewLockClient(f, l, LockClientOptions{})
	if err != nil {
		return err
	}
	entries, err := locks.ListFreezeWindows(ctx)
	if err != nil {
		return err
	}
	items, broken := printers.WindowItems(entries, locks.Clock().Now())
	if len(items) == 0 {
		fmt.Fprintf(f.IOStreams.ErrOut, "no freeze windows in namespace %q\n", locks.Namespace())
	}
	if broken > 0 {
		fmt.Fprintf(f.IOStreams.ErrOut, "warning: %d of the freeze windows in configmap %s/%s cannot be read: acquire and release refuse the locks of namespace %q until they are fixed or removed\n",
			broken, locks.Namespace(), record.FreezeWindowsName, locks.Namespace())
	}
	return printers.PrintWindows(f.IOStreams.Out, output, items)
}

// RemoveFreezeWindow removes the window name from l's lock namespace
// (lockctl freeze-windows remove).
func RemoveFreezeWindow(ctx context.Context, f *Factory, l *LockFlags, name string) error {
	locks, err := NewLockClient(f, l, LockClientOptions{})
	if err != nil {
		return err
	}
	if err := locks.RemoveFreezeWindow(ctx, name); err != nil {
		return err
	}
	fmt.Fprintf(f.IOStreams.ErrOut, "freeze window %q removed from configmap %s/%s\n", name, locks.Namespace(), record.FreezeWindowsName)
	return nil
}
