package cli

import (
	"context"
	"io"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/term"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
)

// againKey is the context key of the channel of the signals after the
// first (Again).
type againKey struct{}

// NotifyInterrupt returns a context that the first SIGINT or SIGTERM
// cancels with a *cmdutil.InterruptedError as its cause
// (cmdutil.InterruptedCode). stop stops the notification; cancel cancels
// the context.
//
// What a second signal does depends on in, the command's stdin. On a
// terminal (a person pressing Ctrl-C twice) it gets the default action:
// the process ends at once. Elsewhere (a CI runner's cancel: SIGINT, then
// SIGTERM a few seconds later, then SIGKILL) it is handed to whoever
// receives from Again(ctx) at that moment, so that lockctl run can stop
// its command at once and release its lock in the runner's remaining
// grace; when nobody does, the process ends at once as on a terminal.
// Once interrupted there, a write to a closed pipe (the runner no longer
// reading the step's output) is an error, not SIGPIPE.
func NotifyInterrupt(parent context.Context, in io.Reader) (ctx context.Context, stop func(), cancel context.CancelCauseFunc) {
	f, ok := in.(*os.File)
	onTerminal := ok && term.IsTerminal(int(f.Fd()))
	again := make(chan os.Signal)
	if !onTerminal {
		parent = context.WithValue(parent, againKey{}, (<-chan os.Signal)(again))
	}
	ctx, cancel = context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s, ok := <-sigs
		if !ok {
			return
		}
		if onTerminal {
			// The next signal gets the default action: the process ends now.
			signal.Stop(sigs)
		}
		cancel(&cmdutil.InterruptedError{Sig: s})
		if onTerminal {
			return
		}
		// NOTE: a CI runner stops reading a cancelled step's output (its
		// node process killed, its shell gone); a write to that pipe must
		// not end lockctl before it has stopped its command and released.
		signal.Ignore(syscall.SIGPIPE)
		for s := range sigs {
			select {
			case again <- s:
			default:
				// Nobody stops anything at once: end now, as on a terminal.
				signal.Stop(sigs)
				if sig, ok := s.(syscall.Signal); ok {
					_ = syscall.Kill(os.Getpid(), sig)
				}
				return
			}
		}
	}()
	return ctx, func() { signal.Stop(sigs) }, cancel
}

// Again is the channel on which NotifyInterrupt hands over a signal after
// the first when the command is not on a terminal; nil (never) on a
// terminal, and for a context NotifyInterrupt did not make. Only a
// receiver waiting when the signal comes gets it.
func Again(ctx context.Context) <-chan os.Signal {
	ch, _ := ctx.Value(againKey{}).(<-chan os.Signal)
	return ch
}
