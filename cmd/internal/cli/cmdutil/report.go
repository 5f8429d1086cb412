package cmdutil

import (
	"errors"
	"fmt"
	"io"

	"github.com/sirupsen/logrus"

	"github.com/lockctl/lockctl/cmd/internal/cli/term"
)

// PrintError writes err as one "error: ..." line, then a hint when one is
// known. Silent errors and bare exit codes print nothing.
func PrintError(w io.Writer, err error, verbosity int) {
	for _, l := range errorLines(err, verbosity) {
		fmt.Fprintf(w, "%s\n", l.text())
	}
}

// PrintConsoleError writes err as PrintError does, through the console: with
// the time outside a terminal, or as one JSON object (msg, hint, usage,
// detail) with JX_LOG_FORMAT=json. The live line goes first.
func PrintConsoleError(c *term.Console, err error, verbosity int) {
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
	msg, hint := Explain(err)
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
