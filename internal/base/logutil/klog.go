package logutil

import (
	"bytes"
	"context"
	"log/slog"

	"k8s.io/klog/v2"
)

// KlogVerbosity is the -v from which client-go's own lines are shown.
const KlogVerbosity = 3

// RouteKlog sends what client-go logs through klog (reflector retries,
// throttling notices, "failed to list" or "is forbidden" while an API server
// is away or refuses) to the trace log, shown only with -v 3 or more,
// instead of raw to stderr: lockctl reports the errors that matter itself,
// in its own words, and a forbidden watch retried by an informer must not
// stream at the user. verbosity returns -v once flags are parsed.
func RouteKlog(log *slog.Logger, verbosity func() int) {
	klog.LogToStderr(false)
	klog.SetOutput(klogWriter{log: log, verbosity: verbosity})
}

// klogWriter turns klog's formatted lines into trace log entries, from -v 3.
type klogWriter struct {
	log       *slog.Logger
	verbosity func() int
}

func (w klogWriter) Write(p []byte) (int, error) {
	if w.verbosity() < KlogVerbosity {
		return len(p), nil
	}
	if line := bytes.TrimSpace(p); len(line) > 0 {
		w.log.Log(context.Background(), LevelTrace, string(line), "source", "client-go")
	}
	return len(p), nil
}
