// Package cmd is lockctl's command line: cobra wiring, flags and printing.
// The work itself lives in the lock, scheduler and podwatch packages.
package cmd

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/sirupsen/logrus"
	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/lockctl/lockctl/internal/logutil"
	"github.com/lockctl/lockctl/internal/term"
)

// Main runs lockctl with the process's arguments and streams and returns
// its exit code. SIGINT and SIGTERM cancel the command's context once; a
// second signal ends the process at once.
func Main() int {
	streams := genericiooptions.IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)

	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, os.Interrupt, syscall.SIGTERM)
	go func() {
		s, ok := <-sigs
		if !ok {
			return
		}
		// The next signal gets the default action: the process ends now.
		signal.Stop(sigs)
		cancel(&interruptedError{sig: s})
	}()

	f := NewFactory(streams)
	f.Executable = filepath.Base(os.Args[0])
	logutil.RouteKlog(f.Log, func() int { return f.Verbosity })
	err := Run(ctx, f, os.Args[1:])
	signal.Stop(sigs)
	// NOTE: the signal is read from the context's cause, which the
	// goroutine sets under the context's lock, never from a variable.
	var ie *interruptedError
	if err != nil && errors.Is(err, context.Canceled) && errors.As(context.Cause(ctx), &ie) {
		if sig, ok := ie.sig.(syscall.Signal); ok {
			return 128 + int(sig)
		}
	}
	if err == nil {
		return CodeOK
	}
	// NOTE: the console, not f's ErrOut: -q discards status, never errors.
	printConsoleError(f.console(), err, f.Verbosity)
	return exitCode(err)
}

// interruptedError is the cause of the context Main cancels on the first
// SIGINT or SIGTERM, so a command that passes the signal on (run -- CMD)
// knows which one it was.
type interruptedError struct{ sig os.Signal }

func (e *interruptedError) Error() string { return "interrupted by " + e.sig.String() }

// Signal returns the signal, which run passes on to a local command.
func (e *interruptedError) Signal() os.Signal { return e.sig }

// Run executes lockctl with args and the dependencies in f.
func Run(ctx context.Context, f *Factory, args []string) error {
	root := newRootCmd(f)
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	err = unknownCommandError(err)
	var flagErr *FlagError
	if errors.As(err, &flagErr) && c != nil {
		flagErr.Command = c.CommandPath()
	}
	return err
}

// printError writes err as one "error: ..." line, then a hint when one is
// known. Silent errors and bare exit codes print nothing.
func printError(w io.Writer, err error, verbosity int) {
	for _, l := range errorLines(err, verbosity) {
		fmt.Fprintf(w, "%s\n", l.text())
	}
}

// printConsoleError writes err as printError does, through the console: with
// the time outside a terminal, or as one JSON object (msg, hint, usage,
// detail) with JX_LOG_FORMAT=json. The live line goes first.
func printConsoleError(c *term.Console, err error, verbosity int) {
	c.SetStatus(nil)
	lines := errorLines(err, verbosity)
	if len(lines) == 0 {
		return
	}
	if c.Structured() {
		fields := logrus.Fields{}
		for _, l := range lines[1:] {
			fields[l.key] = l.msg
		}
		c.Line(logrus.ErrorLevel, term.StyleNone, fields, lines[0].msg, true)
		return
	}
	for _, l := range lines {
		c.Line(logrus.ErrorLevel, term.StyleNone, nil, l.text(), true)
	}
}

// errorLine is one line of an error's report: its key ("error", "hint",
// "usage", "detail") and what it says.
type errorLine struct{ key, msg string }

func (l errorLine) text() string {
	if l.key == "usage" {
		return l.msg
	}
	return l.key + ": " + l.msg
}

// errorLines is what lockctl reports for err: the error, then a hint when
// one is known, where to find usage for a FlagError, and at -v 1 the
// whole error when the message shortened it. Silent errors and bare exit
// codes have none.
func errorLines(err error, verbosity int) []errorLine {
	if errors.Is(err, SilentError) {
		return nil
	}
	var exitErr *ExitError
	if errors.As(err, &exitErr) && exitErr.Err == nil {
		return nil
	}
	msg, hint := explain(err)
	lines := []errorLine{{"error", msg}}
	if hint != "" {
		lines = append(lines, errorLine{"hint", hint})
	}
	var flagErr *FlagError
	if errors.As(err, &flagErr) && flagErr.Command != "" {
		lines = append(lines, errorLine{"usage", fmt.Sprintf("Run '%s --help' for usage.", flagErr.Command)})
	}
	if verbosity >= 1 && msg != err.Error() {
		lines = append(lines, errorLine{"detail", err.Error()})
	}
	return lines
}
