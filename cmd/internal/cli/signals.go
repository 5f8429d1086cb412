package cli

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
)

// NotifyInterrupt returns a context that the first SIGINT or SIGTERM
// cancels with a *cmdutil.InterruptedError as its cause
// (cmdutil.InterruptedCode); the next signal gets the default action, and
// the process ends at once. stop stops the notification; cancel cancels
// the context.
func NotifyInterrupt(parent context.Context) (ctx context.Context, stop func(), cancel context.CancelCauseFunc) {
	ctx, cancel = context.WithCancelCause(parent)
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s, ok := <-sigs
		if !ok {
			return
		}
		// The next signal gets the default action: the process ends now.
		signal.Stop(sigs)
		cancel(&cmdutil.InterruptedError{Sig: s})
	}()
	return ctx, func() { signal.Stop(sigs) }, cancel
}
