package logutil

import (
	"io"

	"github.com/sirupsen/logrus"
)

// Discard returns a logrus logger that writes nothing: the default of the
// lock client's logger, the one library logger still a *logrus.Entry.
//
// NOTE: it goes once lock.Options.Log is a *slog.Logger (OrDiscard).
func Discard() *logrus.Entry {
	l := logrus.New()
	l.SetOutput(io.Discard)
	l.SetLevel(logrus.PanicLevel)
	return logrus.NewEntry(l)
}
