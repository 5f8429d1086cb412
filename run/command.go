package run

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"syscall"

	"golang.org/x/term"
	"k8s.io/utils/clock"
)

// Exit statuses of a command that could not be started, as shells use them.
const (
	CodeCommandNotFound = 127
	CodeCannotExecute   = 126
)

// ExitError is the exit status a run ends with: a command's own, 128+n
// when signal n ended it, or 126 or 127 when it could not be started. Err,
// when set, says why.
type ExitError struct {
	Code int
	Err  error
}

func (e *ExitError) Error() string {
	if e.Err == nil {
		return fmt.Sprintf("exit status %d", e.Code)
	}
	return e.Err.Error()
}

// Unwrap returns why the command could not be started, or nil.
func (e *ExitError) Unwrap() error { return e.Err }

// TokenEnv is the environment variable in which a command run under a
// lock finds the hold's fencing token, for a deploy tool to stamp on what
// it writes (lockctl stamp) or to check.
const TokenEnv = "LOCKCTL_FENCING_TOKEN"

// CommandOptions are the streams of a local command.
type CommandOptions struct {
	// Stdin, Stdout and Stderr are passed to the command as they are. When
	// Stdin is a terminal the command shares this process's group (see
	// Command.Run).
	Stdin          io.Reader
	Stdout, Stderr io.Writer
}

// Command is a local command run while a lock is held.
type Command struct {
	argv        []string
	child       *exec.Cmd
	interactive bool
}

// NewCommand prepares argv. A command that cannot be found is an
// *ExitError with status 127.
func NewCommand(argv []string, o CommandOptions) (*Command, error) {
	if len(argv) == 0 {
		return nil, errors.New("no command to run")
	}
	child := exec.Command(argv[0], argv[1:]...)
	if child.Err != nil {
		return nil, &ExitError{Code: CodeCommandNotFound, Err: fmt.Errorf("run %q: %w", argv[0], child.Err)}
	}
	interactive := isTerminalReader(o.Stdin)
	child.Stdin, child.Stdout, child.Stderr = o.Stdin, o.Stdout, o.Stderr
	child.SysProcAttr = childProcAttr(!interactive)
	return &Command{argv: argv, child: child, interactive: interactive}, nil
}

// String renders the command as a person would type it.
func (c *Command) String() string { return QuoteCommand(c.argv) }

// Run runs the command while h is held and returns how it ended: nil for
// status 0, an *ExitError with its status otherwise. It never releases h.
//
// Signals: when stdin is a terminal the command shares this process's group,
// so it keeps the terminal (it may prompt, and Ctrl-C or a hang-up reach it
// straight from the terminal); a SIGTERM is passed on to it. Without a
// terminal it gets a process group of its own, and both SIGINT and SIGTERM
// are passed on to that group, so a shell script's children stop too. The
// signal is the one in ctx's cancel cause (an error with a Signal()
// os.Signal method), SIGTERM when there is none. On Linux the command also
// gets SIGTERM if this process dies without cleaning up (SIGKILL), so it
// never outlives the lock by more than it takes to stop.
//
// When ctx ends, h is lost, or a newer build asks h to stop
// (cancel-in-progress), Run signals the command, waits for it and returns
// an error wrapping ctx.Err(), lock.ErrLost or lock.ErrSuperseded. When h
// has not been renewed for its renew deadline (a partition, a silent API
// server), or is lost, the command gets SIGTERM and, if it has not exited
// Timings.KillGrace later, SIGKILL, so that it has ended before the lock
// can expire; the error then wraps ErrNotRenewed or lock.ErrLost.
func (c *Command) Run(ctx context.Context, h *Hold, obs Observer) error {
	_, err := c.run(ctx, h, obs, nil)
	return err
}

// run is Run, where a signal on again while the command stops after ctx
// ended (a CI runner's second signal) sends the command's group SIGKILL at
// once; urgent reports that it did.
func (c *Command) run(ctx context.Context, h *Hold, obs Observer, again <-chan os.Signal) (urgent bool, err error) {
	obs = observerOrNop(obs)
	cmdline := c.String()
	if ctx.Err() != nil {
		obs.Stopping(Stop{Command: c.argv, BeforeStart: true})
		return false, fmt.Errorf("run %s: %w", cmdline, ctx.Err())
	}
	// NOTE: said before the start, so it comes before anything the command
	// prints.
	obs.Started(c.argv)
	if len(h.held) > 0 && h.held[0].Token != "" {
		// NOTE: the environment is set here, not in NewCommand: the token
		// is known once the lock is held. With several locks it is the
		// first's, across clusters the composite token (docs/enforcement.md).
		c.child.Env = append(os.Environ(), TokenEnv+"="+h.Token())
	}
	if err := c.child.Start(); err != nil {
		return false, startError(c.argv[0], err)
	}
	exited := make(chan error, 1)
	go func() { exited <- c.child.Wait() }()

	select {
	case waitErr := <-exited:
		obs.Exited(c.child.ProcessState, waitErr)
		return false, commandExit(c.child.ProcessState, waitErr)
	case <-ctx.Done():
		sig := signalOf(ctx)
		stop := Stop{Command: c.argv, AgainStops: again != nil}
		if !c.interactive || sig != os.Interrupt {
			stop.Signal = sig
		}
		obs.Stopping(stop)
		if stop.Signal != nil {
			if err := signalChild(c.child.Process, sig, !c.interactive); err != nil {
				obs.SignalFailed(err)
			}
		}
		select {
		case err := <-exited:
			obs.Exited(c.child.ProcessState, err)
		case s := <-again:
			// Stop now: the time left is for the release.
			obs.Stopping(Stop{Command: c.argv, Again: s, Signal: syscall.SIGKILL})
			if err := signalChild(c.child.Process, syscall.SIGKILL, !c.interactive); err != nil {
				obs.SignalFailed(err)
			}
			obs.Exited(c.child.ProcessState, <-exited)
			urgent = true
		}
		return urgent, fmt.Errorf("run %s: %w", cmdline, ctx.Err())
	case lost := <-h.Lost():
		c.stop(obs, exited, Stop{Command: c.argv, Lost: lost, Signal: syscall.SIGTERM, KillAfter: h.Timings().KillGrace}, h.local)
		return false, fmt.Errorf("lock %q was lost while %s ran: %w", h.LostTarget(), cmdline, lost)
	case late := <-h.NotRenewed():
		c.stop(obs, exited, Stop{Command: c.argv, NotRenewed: late, Signal: syscall.SIGTERM, KillAfter: h.Timings().KillGrace}, h.local)
		return false, fmt.Errorf("%w; %s was stopped before the lock could expire", late, cmdline)
	case asked := <-h.Cancelled():
		obs.Stopping(Stop{Command: c.argv, Cancelled: asked, Signal: syscall.SIGTERM})
		if err := signalChild(c.child.Process, syscall.SIGTERM, !c.interactive); err != nil {
			obs.SignalFailed(err)
		}
		obs.Exited(c.child.ProcessState, <-exited)
		return false, fmt.Errorf("%s stopped: %w", cmdline, asked)
	}
}

// stop sends the command SIGTERM, and SIGKILL s.KillAfter later (on clk)
// if it has not exited by then, and waits for it: a command that runs
// without its lock must end, whether it handles SIGTERM or not.
func (c *Command) stop(obs Observer, exited <-chan error, s Stop, clk clock.Clock) {
	obs.Stopping(s)
	if err := signalChild(c.child.Process, syscall.SIGTERM, !c.interactive); err != nil {
		obs.SignalFailed(err)
	}
	t := clk.NewTimer(s.KillAfter)
	defer t.Stop()
	select {
	case err := <-exited:
		obs.Exited(c.child.ProcessState, err)
		return
	case <-t.C():
	}
	if err := signalChild(c.child.Process, syscall.SIGKILL, !c.interactive); err != nil {
		obs.SignalFailed(err)
	}
	obs.Exited(c.child.ProcessState, <-exited)
}

// signalOf returns the signal that cancelled ctx, SIGTERM when none did.
func signalOf(ctx context.Context) os.Signal {
	var s interface{ Signal() os.Signal }
	if errors.As(context.Cause(ctx), &s) {
		return s.Signal()
	}
	return syscall.SIGTERM
}

// commandExit is the result of a command that ended: nil for status 0, its
// exit status otherwise, 128+n when signal n ended it.
func commandExit(ps *os.ProcessState, waitErr error) error {
	if ps == nil {
		return fmt.Errorf("wait for the command: %w", waitErr)
	}
	if code := exitStatus(ps); code != 0 {
		return &ExitError{Code: code}
	}
	return nil
}

// DescribeExit says how a command ended: "exited with status 7".
func DescribeExit(ps *os.ProcessState, waitErr error) string {
	if ps == nil {
		return fmt.Sprintf("could not be waited for: %v", waitErr)
	}
	if sig, ok := exitSignal(ps); ok {
		return fmt.Sprintf("was ended by %s (exit status %d)", SignalName(sig), exitStatus(ps))
	}
	return fmt.Sprintf("exited with status %d", ps.ExitCode())
}

// startError maps a command that could not be started to the shells' exit
// statuses: 127 not found, 126 not executable.
func startError(name string, err error) error {
	code := CodeCannotExecute
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		code = CodeCommandNotFound
	}
	return &ExitError{Code: code, Err: fmt.Errorf("run %q: %w", name, err)}
}

// SignalName is the conventional name of a signal: SIGINT, SIGTERM.
func SignalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// QuoteCommand renders argv as a person would type it.
func QuoteCommand(argv []string) string {
	parts := make([]string, len(argv))
	for i, a := range argv {
		if a != "" && !strings.ContainsAny(a, " \t\n'\"\\$`!*?[]{}()<>|&;#~") {
			parts[i] = a
			continue
		}
		parts[i] = "'" + strings.ReplaceAll(a, "'", `'\''`) + "'"
	}
	return strings.Join(parts, " ")
}

// isTerminalReader reports whether r is a terminal.
func isTerminalReader(r io.Reader) bool {
	f, ok := r.(*os.File)
	return ok && term.IsTerminal(int(f.Fd()))
}
