package logutil

import (
	"bytes"
	stdlog "log"
	"log/slog"
)

// RouteStdLog sends what the standard library's log package writes (the
// errors of net/http's server behind reconcile --metrics-addr, for one) to
// log as warnings, so such a line takes the form of every other line
// lockctl writes to stderr (the time of day in a CI log, JSON with
// JX_LOG_FORMAT=json) instead of the log package's own.
func RouteStdLog(log *slog.Logger) {
	stdlog.SetFlags(0)
	stdlog.SetPrefix("")
	stdlog.SetOutput(stdlogWriter{log: log})
}

// stdlogWriter turns the log package's lines into warnings.
type stdlogWriter struct{ log *slog.Logger }

func (w stdlogWriter) Write(p []byte) (int, error) {
	if line := bytes.TrimSpace(p); len(line) > 0 {
		w.log.Warn(string(line))
	}
	return len(p), nil
}
