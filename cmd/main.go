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
	"path/filepath"

	"github.com/lockctl/lockctl/cmd/internal/cli"
	"github.com/lockctl/lockctl/cmd/internal/cli/cmdutil"
	"github.com/lockctl/lockctl/internal/base/logutil"
)

// Main runs lockctl with the process's arguments and streams and returns
// its exit code. SIGINT and SIGTERM cancel the command's context once; a
// second ends the process at once, or stops run's command (cli.Again).
func Main() int {
	cli.GrowStack()
	cli.TuneCLIRuntime(os.Getenv)
	streams := IOStreams{In: os.Stdin, Out: os.Stdout, ErrOut: os.Stderr}
	ctx, stop, cancel := cli.NotifyInterrupt(context.Background(), os.Stdin)
	defer cancel(nil)

	f := NewFactory(streams)
	f.Executable = filepath.Base(os.Args[0])
	logutil.RouteKlog(f.Logger(), func() int { return f.Verbosity })
	logutil.RouteStdLog(f.Logger())
	err := Run(ctx, f, os.Args[1:])
	stop()
	if code, ok := cmdutil.InterruptedCode(ctx, err); ok {
		return code
	}
	if err == nil {
		return cmdutil.CodeOK
	}
	// NOTE: the console, not f's ErrOut: -q discards status, never errors.
	cmdutil.PrintConsoleError(f.Console(), err, f.Verbosity)
	return cmdutil.ExitCode(err)
}

// Run executes lockctl with args and the dependencies in f.
func Run(ctx context.Context, f *Factory, args []string) error {
	root := newRootCmdFor(f, args)
	if cli.Completing(args) {
		cli.RegisterCompletions(root, f)
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
