package cli

import (
	"context"
	"log/slog"
	"maps"

	"github.com/sirupsen/logrus"
)

// logrusHandler is the slog.Handler the library packages' loggers write
// through: the library logs to a *slog.Logger (Options.Log), and the CLI
// keeps one logger of its own, jx-logging's logrus entry (Factory.Log),
// whose level (-v, -q, JX_LOG_LEVEL), formatter (the console's text, or
// JX_LOG_FORMAT=json) and hooks every entry passes. A record becomes one
// logrus entry: its level mapped as logrusLevel says, its message, and its
// attributes as the entry's fields, a group's keys prefixed with the
// group's name and a dot; a later attribute of a key replaces an earlier
// one, as logrus's WithField does.
type logrusHandler struct {
	entry  *logrus.Entry
	fields logrus.Fields // from WithAttrs, their keys already prefixed
	prefix string        // the groups open (WithGroup), "a.b."
}

var _ slog.Handler = (*logrusHandler)(nil)

// newLogrusHandler returns a handler writing through entry. Entries are
// judged by entry's logger's level when they are made, so a level set
// later (SetupLogging) applies to loggers made before.
func newLogrusHandler(entry *logrus.Entry) *logrusHandler {
	return &logrusHandler{entry: entry}
}

// logrusLevel is the logrus level of a slog level: error and above is
// ErrorLevel, then warn, info and debug, and below debug (logutil's
// LevelTrace) TraceLevel.
func logrusLevel(l slog.Level) logrus.Level {
	switch {
	case l >= slog.LevelError:
		return logrus.ErrorLevel
	case l >= slog.LevelWarn:
		return logrus.WarnLevel
	case l >= slog.LevelInfo:
		return logrus.InfoLevel
	case l >= slog.LevelDebug:
		return logrus.DebugLevel
	}
	return logrus.TraceLevel
}

// Enabled reports whether the logrus logger passes entries of level l.
func (h *logrusHandler) Enabled(_ context.Context, l slog.Level) bool {
	return h.entry.Logger.IsLevelEnabled(logrusLevel(l))
}

// Handle writes r through the logrus entry.
func (h *logrusHandler) Handle(ctx context.Context, r slog.Record) error {
	data := make(logrus.Fields, len(h.entry.Data)+len(h.fields)+r.NumAttrs())
	maps.Copy(data, h.entry.Data)
	maps.Copy(data, h.fields)
	r.Attrs(func(a slog.Attr) bool {
		addAttr(data, h.prefix, a)
		return true
	})
	e := &logrus.Entry{Logger: h.entry.Logger, Data: data, Time: r.Time, Context: ctx}
	e.Log(logrusLevel(r.Level), r.Message)
	return nil
}

// WithAttrs returns a handler whose entries carry attrs too.
func (h *logrusHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	if len(attrs) == 0 {
		return h
	}
	fields := make(logrus.Fields, len(h.fields)+len(attrs))
	maps.Copy(fields, h.fields)
	for _, a := range attrs {
		addAttr(fields, h.prefix, a)
	}
	return &logrusHandler{entry: h.entry, fields: fields, prefix: h.prefix}
}

// WithGroup returns a handler whose later attributes are in group name.
func (h *logrusHandler) WithGroup(name string) slog.Handler {
	if name == "" {
		return h
	}
	return &logrusHandler{entry: h.entry, fields: h.fields, prefix: h.prefix + name + "."}
}

// addAttr sets a's field in fields, its key after prefix: a group's
// attributes each under the group's name (inline when it has none), an
// empty attribute not at all, a slog.LogValuer's value resolved.
func addAttr(fields logrus.Fields, prefix string, a slog.Attr) {
	a.Value = a.Value.Resolve()
	if a.Equal(slog.Attr{}) {
		return
	}
	if a.Value.Kind() != slog.KindGroup {
		fields[prefix+a.Key] = a.Value.Any()
		return
	}
	if a.Key != "" {
		prefix += a.Key + "."
	}
	for _, g := range a.Value.Group() {
		addAttr(fields, prefix, g)
	}
}
