package cmd

import (
	"bytes"

	"github.com/sirupsen/logrus"
	"k8s.io/klog/v2"
)

// routeKlog sends what client-go logs through klog (reflector retries,
// throttling notices, "failed to list" while an API server is away) to log
// at debug level, seen with -v 1, instead of raw to stderr: lockctl reports
// the errors that matter itself, in its own words.
func routeKlog(log *logrus.Entry) {
	klog.LogToStderr(false)
	klog.SetOutput(klogWriter{log: log})
}

// klogWriter turns klog's formatted lines into debug log entries.
type klogWriter struct{ log *logrus.Entry }

func (w klogWriter) Write(p []byte) (int, error) {
	if line := bytes.TrimSpace(p); len(line) > 0 {
		w.log.WithField("source", "client-go").Debug(string(line))
	}
	return len(p), nil
}
