// Package cmdutil is what lockctl's commands share about errors: the exit
// codes (part of lockctl's interface, listed in --help and the README),
// the error types that pick them, and how an error is reported on stderr:
// one line a person can act on, then a hint.
package cmdutil

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/lockctl/lockctl/enforce"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/run"
)

// Exit codes of lockctl. They are part of its interface: scripts rely on
// them, so they never change meaning.
const (
	// CodeOK: done (lock acquired or released, job succeeded, pass finished).
	CodeOK = 0
	// CodeError: an error (API, permissions, invalid stored object).
	CodeError = 1
	// CodeUsage: bad flags or a bad job or config file.
	CodeUsage = 2
	// CodeSuperseded: a newer build of the same repository/branch is waiting
	// or holds the lock.
	CodeSuperseded = 3
	// CodeTimeout: timed out waiting (for a lock, for a job), or, with
	// acquire --no-wait, the lock is held. Only waits pick it: any other
	// deadline that passes is an error (CodeError).
	CodeTimeout = 4
	// CodeJobFailed: the job ran and failed.
	CodeJobFailed = 5
)

// ExitCodeHelp is the exit-status table printed in --help and the README.
const ExitCodeHelp = `Exit status:
  0  done (lock acquired or released, job succeeded, pass finished)
  1  error (API, permissions, invalid stored object)
  2  usage (bad flags, bad job or config file)
  3  superseded: a newer build of the same repository/branch waits or holds the lock,
     or asked this run to stop (run --cancel-in-progress)
  4  timed out waiting (acquire --no-wait: the lock is held)
  5  the job ran and failed (run, wait, logs -f; run -- CMD exits with the command's own status)`

// FlagError is a usage error: Main points at --help after it.
type FlagError struct {
	Err error
	// Command is the path of the command that refused its flags.
	Command string
}

func (e *FlagError) Error() string { return e.Err.Error() }
func (e *FlagError) Unwrap() error { return e.Err }

// FlagErrorf returns a *FlagError with a formatted message.
func FlagErrorf(format string, args ...any) error {
	return &FlagError{Err: fmt.Errorf(format, args...)}
}

// PlainFlagError rewrites pflag's parse errors, which end in Go's
// "strconv.ParseInt: parsing "abc": invalid syntax", to say what the flag
// wants instead.
func PlainFlagError(err error) error {
	msg := err.Error()
	i := strings.Index(msg, ": strconv.Parse")
	if i < 0 {
		return err
	}
	want := "want a number"
	switch rest := msg[i+len(": strconv."):]; {
	case strings.HasPrefix(rest, "ParseInt"):
		want = "want an integer"
	case strings.HasPrefix(rest, "ParseUint"):
		want = "want a non-negative integer"
	case strings.HasPrefix(rest, "ParseBool"):
		want = "want true or false"
	}
	return errors.New(msg[:i] + ": " + want)
}

// UnknownCommandError makes cobra's "unknown command" a usage error on one
// line, its "Did you mean this?" block folded into `; did you mean "x"?`, so
// that every stderr line carries the timestamp prefix.
func UnknownCommandError(err error) error {
	if err == nil || !strings.HasPrefix(err.Error(), "unknown command ") {
		return err
	}
	var flagErr *FlagError
	if errors.As(err, &flagErr) {
		return err
	}
	first, rest, _ := strings.Cut(strings.TrimRight(err.Error(), "\n"), "\n")
	var suggestions []string
	for _, line := range strings.Split(rest, "\n") {
		if s, ok := strings.CutPrefix(line, "\t"); ok && s != "" {
			suggestions = append(suggestions, strconv.Quote(s))
		}
	}
	if len(suggestions) > 0 {
		first += "; did you mean " + strings.Join(suggestions, " or ") + "?"
	}
	return &FlagError{Err: errors.New(first)}
}

// UsageError is bad input that is not a flag: a job or config file. It exits
// 2 like a FlagError but prints no usage.
type UsageError struct{ Err error }

func (e *UsageError) Error() string { return e.Err.Error() }
func (e *UsageError) Unwrap() error { return e.Err }

// ExitError picks the exit code; Err, when set, is printed first. It is
// the run package's type, so that a local command's status passes through
// lockctl run unchanged.
type ExitError = run.ExitError

// IsOutcome reports whether err is how a job or a command ended (its
// status), rather than something that went wrong.
func IsOutcome(err error) bool {
	var exitErr *ExitError
	return errors.As(err, &exitErr) || errors.Is(err, SilentError)
}

// SilentError ends the command with CodeJobFailed after the command has
// already said why.
var SilentError = errors.New("silent error")

// ExitCode maps an error to lockctl's exit code. It is the only place that
// does.
func ExitCode(err error) int {
	var (
		flagErr   *FlagError
		usageErr  *UsageError
		exitErr   *ExitError
		targetErr *enforce.TargetError
	)
	switch {
	case err == nil:
		return CodeOK
	case errors.As(err, &exitErr):
		return exitErr.Code
	case errors.As(err, &flagErr), errors.As(err, &usageErr), errors.As(err, &targetErr):
		return CodeUsage
	case errors.Is(err, SilentError):
		return CodeJobFailed
	case errors.Is(err, lock.ErrSuperseded):
		return CodeSuperseded
	case errors.Is(err, lock.ErrTimeout), errors.Is(err, lock.ErrHeld), errors.Is(err, ErrWaitTimeout):
		return CodeTimeout
	}
	return CodeError
}

// ErrWaitTimeout marks a wait that timed out (exit 4), for waits other than
// the lock's, which return a *lock.TimeoutError: wrap it, with what was
// waited for, as fmt.Errorf("job %q did not end within %s: %w", …). A
// context deadline that is not such a wait (a cleanup, an API call) exits 1.
var ErrWaitTimeout = errors.New("timed out waiting")

// JoinRelease is the error that ends a command which held locks, once its
// work ended with err and the release of the locks with rerr: err, or the
// failed release instead of an outcome (the job's or the command's status,
// IsOutcome), or both joined.
func JoinRelease(err, rerr error) error {
	switch {
	case rerr == nil:
		return err
	case err == nil || IsOutcome(err):
		return rerr
	}
	return errors.Join(err, rerr)
}

// InterruptedError is the cause of the context Main cancels on the first
// SIGINT or SIGTERM, so a command that passes the signal on (run -- CMD)
// knows which one it was.
type InterruptedError struct{ Sig os.Signal }

func (e *InterruptedError) Error() string { return "interrupted by " + e.Sig.String() }

// Signal returns the signal, which run passes on to a local command.
func (e *InterruptedError) Signal() os.Signal { return e.Sig }

// InterruptedCode returns 128+n, and true, when err is the cancellation of
// ctx by signal n (an InterruptedError cause). NOTE: the signal is read
// from the context's cause, which the signal handler sets under the
// context's lock, never from a variable.
func InterruptedCode(ctx context.Context, err error) (int, bool) {
	var ie *InterruptedError
	if err != nil && errors.Is(err, context.Canceled) && errors.As(context.Cause(ctx), &ie) {
		if sig, ok := ie.Sig.(syscall.Signal); ok {
			return 128 + int(sig), true
		}
	}
	return 0, false
}
