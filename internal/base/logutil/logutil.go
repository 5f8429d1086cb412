// Package logutil holds what lockctl's packages share about logging.
package logutil

import (
	"io"

	"github.com/sirupsen/logrus"
)

// Discard returns a logger that writes nothing, the default of every
// library package that takes a *logrus.Entry.
func Discard() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	l.SetLevel(logrus.PanicLevel)
	return logrus.NewEntry(l)
}

// OrDiscard returns log, or Discard() when log is nil.
func OrDiscard(log *logrus.Entry) *logrus.Entry {
	if log == nil {
		return Discard()
	}
	return log
}

// AtMost returns a logger writing where log writes, as log formats, that
// logs only at level or above (and not below log's own level): for a
// library whose lower lines would repeat what the caller shows.
func AtMost(log *logrus.Entry, level logrus.Level) *logrus.Entry {
	l := logrus.New()
	l.SetOutput(log.Logger.Out)
	l.SetFormatter(log.Logger.Formatter)
	l.SetLevel(min(level, log.Logger.GetLevel()))
	return logrus.NewEntry(l)
}
