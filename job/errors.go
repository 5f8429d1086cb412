package job

import (
	"errors"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation/field"
)

// Errors returned by this package. Callers match them with errors.Is; the
// Kubernetes API errors behind them never cross the package boundary.
var (
	// ErrInvalid matches every error about a bad job document: a
	// *SyntaxError, a *ValidationError or a *TooLargeError.
	ErrInvalid = errors.New("invalid job")
	// ErrNotFound means the job record does not exist.
	ErrNotFound = errors.New("job not found")
	// ErrExists means a job record of that name already exists.
	ErrExists = errors.New("job already exists")
	// ErrConflict means the record changed since it was read: read it again
	// and decide again.
	ErrConflict = errors.New("job changed since it was read")
	// ErrTerminal means the job is finished and can not change any more.
	ErrTerminal = errors.New("job is finished")
	// ErrAborted means the job was aborted already (its abort may not be
	// complete yet): aborting it again changed nothing.
	ErrAborted = errors.New("job is aborted already")
	// ErrCorrupt means a stored record could not be decoded.
	ErrCorrupt = errors.New("invalid stored job record")
)

// SyntaxError is a job document that is not well-formed YAML or JSON.
type SyntaxError struct {
	// Source names the document, a file name or "-" for stdin.
	Source string
	// Line is the 1-based line of the error; 0 when unknown.
	Line int
	// Column is the 1-based column of the error; 0 when unknown.
	Column int
	// Msg says what is wrong.
	Msg string
}

// Error implements error.
func (e *SyntaxError) Error() string {
	switch {
	case e.Line > 0 && e.Column > 0:
		return fmt.Sprintf("parse %s: line %d, column %d: %s", e.Source, e.Line, e.Column, e.Msg)
	case e.Line > 0:
		return fmt.Sprintf("parse %s: line %d: %s", e.Source, e.Line, e.Msg)
	}
	return fmt.Sprintf("parse %s: %s", e.Source, e.Msg)
}

// Is makes a SyntaxError match ErrInvalid.
func (e *SyntaxError) Is(target error) bool { return target == ErrInvalid }

// TooLargeError is a job file larger than MaxFileSize.
type TooLargeError struct {
	// Source names the document, a file name or "-" for stdin.
	Source string
	// Size is the size of the file in bytes; 0 when unknown, as for a
	// stream read only up to the limit.
	Size int64
}

// Error implements error.
func (e *TooLargeError) Error() string {
	size := "larger than " + byteSize(MaxFileSize)
	if e.Size > 0 {
		size = byteSize(e.Size) + ", larger than " + byteSize(MaxFileSize)
	}
	return fmt.Sprintf("parse %s: job file is %s, the most a job record (a ConfigMap) can hold: "+
		"keep large scripts in the container image or in a ConfigMap the pod mounts", e.Source, size)
}

// Is makes a TooLargeError match ErrInvalid.
func (e *TooLargeError) Is(target error) bool { return target == ErrInvalid }

// byteSize renders n bytes for people: "1 MiB (1048576 bytes)".
func byteSize(n int64) string {
	const kib, mib = 1 << 10, 1 << 20
	switch {
	case n >= mib && n%mib == 0:
		return fmt.Sprintf("%d MiB (%d bytes)", n/mib, n)
	case n >= mib:
		return fmt.Sprintf("%.1f MiB (%d bytes)", float64(n)/mib, n)
	case n >= kib && n%kib == 0:
		return fmt.Sprintf("%d KiB (%d bytes)", n/kib, n)
	case n >= kib:
		return fmt.Sprintf("%.1f KiB (%d bytes)", float64(n)/kib, n)
	}
	return fmt.Sprintf("%d bytes", n)
}

// ValidationError lists every field of a job document that is wrong.
type ValidationError struct {
	// Source names the document, a file name or "-" for stdin.
	Source string
	// Errors are the problems, each with its field path and reason.
	Errors field.ErrorList
}

// Error implements error. Each field error is on a line of its own.
func (e *ValidationError) Error() string {
	var b strings.Builder
	fmt.Fprintf(&b, "invalid job %s:", e.Source)
	for _, fe := range e.Errors {
		b.WriteString("\n  ")
		b.WriteString(fe.Error())
	}
	return b.String()
}

// Is makes a ValidationError match ErrInvalid.
func (e *ValidationError) Is(target error) bool { return target == ErrInvalid }

// TransitionError is a status change that the job's life forbids, such as
// moving a pending job back to triggered.
type TransitionError struct {
	Name     string
	From, To State
}

// Error implements error.
func (e *TransitionError) Error() string {
	return fmt.Sprintf("job %q can not move from %s to %s", e.Name, e.From, e.To)
}
