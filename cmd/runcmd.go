package cmd

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
)

// Exit statuses of a command that could not be started, as shells use them.
const (
	codeCommandNotFound = 127
	codeCannotExecute   = 126
)

// runCommand holds the lock while a local command runs, and exits with the
// command's status.
//
// Signals: when stdin is a terminal the command shares lockctl's process
// group, so it keeps the terminal (it may prompt, and Ctrl-C or a hang-up
// reach it straight from the terminal); a SIGTERM is passed on to it. Without
// a terminal it gets a process group of its own, and both SIGINT and SIGTERM
// are passed on to that group, so a shell script's children stop too. On
// Linux the command also gets SIGTERM if lockctl dies without cleaning up
// (SIGKILL), so it never outlives the lock by more than it takes to stop.
func runCommand(ctx context.Context, o *runOptions) error {
	child := exec.Command(o.Command[0], o.Command[1:]...)
	if child.Err != nil {
		return &ExitError{Code: codeCommandNotFound, Err: fmt.Errorf("run %q: %w", o.Command[0], child.Err)}
	}
	interactive := isTerminalReader(o.f.IOStreams.In)
	child.Stdin, child.Stdout, child.Stderr = o.f.IOStreams.In, o.f.IOStreams.Out, o.childErr
	child.SysProcAttr = childProcAttr(!interactive)

	env := o.sweeperEnv()
	d := o.newDisplay()
	defer d.close()
	l, err := o.acquireLock(ctx, d)
	if err != nil {
		return err
	}
	if env != nil {
		env.sweepOrphans(ctx, d, o.f, l.session())
	}
	cmdline := quoteCommand(o.Command)
	if ctx.Err() != nil {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		d.printf(styleWarn, "interrupted before %s started; releasing lock %q", cmdline, o.Target)
		return errors.Join(fmt.Errorf("run %s: %w", cmdline, ctx.Err()), l.release(cctx))
	}
	// NOTE: said before the start, so it comes before anything the command
	// prints.
	d.printf(styleNone, "running %s", cmdline)
	if err := child.Start(); err != nil {
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		return errors.Join(startError(o.Command[0], err), l.release(cctx))
	}
	exited := make(chan error, 1)
	go func() { exited <- child.Wait() }()

	var waitErr error
	select {
	case waitErr = <-exited:
	case <-ctx.Done():
		sig, ok := interruptSignal(ctx)
		if !ok {
			sig = syscall.SIGTERM
		}
		passOn := !interactive || sig != os.Interrupt
		what := "waiting for the command to exit"
		if passOn {
			what = fmt.Sprintf("passing %s to the command and waiting for it to exit", signalName(sig))
		}
		d.printf(styleWarn, "interrupted: %s, then releasing lock %q; interrupt again to exit at once, leaving lock %q to expire within %s",
			what, o.Target, o.Target, humanDuration(o.TTL))
		if passOn {
			if err := signalChild(child.Process, sig, !interactive); err != nil {
				d.printf(styleWarn, "cannot signal the command: %v", err)
			}
		}
		status := <-exited
		d.printf(styleWarn, "command %s", describeExit(child.ProcessState, status))
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		return errors.Join(fmt.Errorf("run %s: %w", cmdline, ctx.Err()), l.release(cctx))
	case lost := <-l.lost:
		d.printf(styleBad, "%v: stopping the command with SIGTERM", lost)
		if err := signalChild(child.Process, syscall.SIGTERM, !interactive); err != nil {
			d.printf(styleWarn, "cannot signal the command: %v", err)
		}
		status := <-exited
		d.printf(styleWarn, "command %s", describeExit(child.ProcessState, status))
		cctx, cancel := cleanupContext(ctx)
		defer cancel()
		// NOTE: release only stops the renewal: the lock is someone else's.
		return errors.Join(fmt.Errorf("lock %q was lost while %s ran: %w", o.Target, cmdline, lost), l.release(cctx))
	}

	style := styleGood
	if ps := child.ProcessState; ps == nil || !ps.Success() {
		style = styleBad
	}
	d.printf(style, "command %s", describeExit(child.ProcessState, waitErr))
	cctx, cancel := cleanupContext(ctx)
	defer cancel()
	if err := l.release(cctx); err != nil {
		return err
	}
	return commandExit(child.ProcessState, waitErr)
}

// commandExit is lockctl's result for a command that ended: nil for
// status 0, its exit status otherwise, 128+n when signal n ended it.
func commandExit(ps *os.ProcessState, waitErr error) error {
	if ps == nil {
		return fmt.Errorf("wait for the command: %w", waitErr)
	}
	if code := exitStatus(ps); code != 0 {
		return &ExitError{Code: code}
	}
	return nil
}

// describeExit says how the command ended: "exited with status 7".
func describeExit(ps *os.ProcessState, waitErr error) string {
	if ps == nil {
		return fmt.Sprintf("could not be waited for: %v", waitErr)
	}
	if sig, ok := exitSignal(ps); ok {
		return fmt.Sprintf("was ended by %s (exit status %d)", signalName(sig), exitStatus(ps))
	}
	return fmt.Sprintf("exited with status %d", ps.ExitCode())
}

// startError maps a command that could not be started to the shells' exit
// statuses: 127 not found, 126 not executable.
func startError(name string, err error) error {
	code := codeCannotExecute
	if errors.Is(err, exec.ErrNotFound) || errors.Is(err, os.ErrNotExist) {
		code = codeCommandNotFound
	}
	return &ExitError{Code: code, Err: fmt.Errorf("run %q: %w", name, err)}
}

// signalName is the conventional name of a signal: SIGINT, SIGTERM.
func signalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	}
	return sig.String()
}

// quoteCommand renders argv as a person would type it.
func quoteCommand(argv []string) string {
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
