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
