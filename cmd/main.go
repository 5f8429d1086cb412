// Package cmd is lockctl's command line: cobra wiring, flags, validation,
// calling library code, printing and exit codes. The work itself lives in
// the library packages (lock, job, scheduler, podwatch, run) and the CLI's
// own internal packages (cli: the Factory and the flags commands share;
// printers, progress, cmdutil, completion); a verb
// whose work spans packages calls one entry point with options built from
// its flags: run.Run for lockctl run, scheduler.NewLoop for lockctl
// reconcile.
package cmd

import (
	"context"
	"errors"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"syscall"

	"github.com/spf13/cobra"

	"github.com/lockctl/lockctl/internal/base/logutil"
	"github.com/lockctl/lockctl/internal/cli/cmdutil"
)

// cliGCPercent is the garbage collector's GOGC for lockctl's commands
// unless GOGC is set. At the default 100 a lockctl run -- true collected
// several times on its way through a heap of a few MiB (clients, TLS,
// decoding), a quarter of the process's CPU (perf stat: 17.3 ms of task
// clock at 100, 12.9 ms at 400); a command's live heap is small, so the
// heap it lets grow stays small too. lockctl reconcile, which runs for
// long and keeps many records, goes back to 100 (runReconcile) under its
// soft memory limit.
const cliGCPercent = 400

// cliMaxProcs is the number of Ps (GOMAXPROCS) lockctl's commands run on
// unless GOMAXPROCS is set. A command waits on the API server and its
// child; its own work is decoding and encoding, one thing at a time. With
// a P per CPU, every idle P spins looking for work each time a goroutine
// wakes, and twenty waiting lockctl run processes on a 2-CPU runner spent
// that on each hand-over: one P cut the gap between their commands from
// 38.0 to 30.9 ms at p50 and from 301 to 166 ms at p99, side by side in one
// run (docs/adr/0078). lockctl reconcile and lockctl dashboard, which serve
// for long, go back to the runtime's default. Set only in the process:
// the environment of a command lockctl runs is left as it was.
const cliMaxProcs = 1

// tuneCLIRuntime sets the runtime up for a short command: cliGCPercent and
// cliMaxProcs, unless GOGC or GOMAXPROCS say otherwise.
func tuneCLIRuntime(getenv func(string) string) {
	if getenv("GOGC") == "" {
		debug.SetGCPercent(cliGCPercent)
	}
	if getenv("GOMAXPROCS") == "" {
		runtime.GOMAXPROCS(cliMaxProcs)
	}
}

// serveRuntime gives a command that serves for long the runtime's default
// number of Ps back (the CPUs, or the container's CPU limit), unless
// GOMAXPROCS is set.
func serveRuntime(getenv func(string) string) {
	if getenv("GOMAXPROCS") == "" {
		runtime.SetDefaultGOMAXPROCS()
	}
}

// Main runs lockctl with the process's arguments and streams and returns
// its exit code. SIGINT and SIGTERM cancel the command's context once; a
// second signal ends the process at once.
func Main() int {
	tuneCLIRuntime(os.Getenv)
	streams := IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
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
	logutil.RouteStdLog(f.Log)
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
		return cmdutil.CodeOK
	}
	// NOTE: the console, not f's ErrOut: -q discards status, never errors.
	cmdutil.PrintConsoleError(f.Console(), err, f.Verbosity)
	return cmdutil.ExitCode(err)
}

// interruptedError is the cause of the context Main cancels on the first
// SIGINT or SIGTERM, so a command that passes the signal on (run -- CMD)
// knows which one it was.
type interruptedError struct{ sig os.Signal }

func (e *interruptedError) Error() string { return "interrupted by " + e.sig.String() }

// Signal returns the signal, which run passes on to a local command.
func (e *interruptedError) Signal() os.Signal { return e.sig }

// completing reports whether args are a shell asking for completions
// (lockctl __complete …, as the scripts of lockctl completion call it):
// only then are the completion functions registered, which walks every
// command's flags (about 90 KB of allocations, at every start otherwise).
func completing(args []string) bool {
	return len(args) > 0 && (args[0] == cobra.ShellCompRequestCmd || args[0] == cobra.ShellCompNoDescRequestCmd)
}

// Run executes lockctl with args and the dependencies in f.
func Run(ctx context.Context, f *Factory, args []string) error {
	root := newRootCmd(f)
	if completing(args) {
		registerCompletions(root, f)
	}
	root.SetArgs(args)
	c, err := root.ExecuteContextC(ctx)
	err = cmdutil.UnknownCommandError(err)
	var flagErr *cmdutil.FlagError
	if errors.As(err, &flagErr) && c != nil {
		flagErr.Command = c.CommandPath()
	}
	return err
}
