// Package logutil holds what lockctl's packages share about logging. The
// library packages log to a *slog.Logger handed in by their caller
// (Options.Log; nil discards), never to a global one; lockctl's CLI makes
// that logger write through its own (jx-logging's), so a library entry
// takes the form of every other line lockctl writes to stderr.
package logutil

import (
	"context"
	"log/slog"
)

// LevelTrace is the level of trace entries, below slog.LevelDebug: shown
// from -v 2 (client-go's own lines from -v 3, KlogVerbosity).
const LevelTrace = slog.LevelDebug - 4

// OrDiscard returns log, or a logger that writes nothing when log is nil:
// the default of every library package's logger.
func OrDiscard(log *slog.Logger) *slog.Logger {
	if log == nil {
		return slog.New(slog.DiscardHandler)
	}
	return log
}

// AtLeast returns a logger writing through log's handler that passes only
// entries at level or above (and none that log does not pass): for a
// library whose lower lines would repeat what the caller shows.
func AtLeast(log *slog.Logger, level slog.Level) *slog.Logger {
	return slog.New(levelFloor{Handler: log.Handler(), floor: level})
}

// levelFloor is a handler that drops entries below floor.
type levelFloor struct {
	slog.Handler
	floor slog.Level
}

var _ slog.Handler = levelFloor{}

func (h levelFloor) Enabled(ctx context.Context, l slog.Level) bool {
	return l >= h.floor && h.Handler.Enabled(ctx, l)
}

func (h levelFloor) WithAttrs(attrs []slog.Attr) slog.Handler {
	return levelFloor{Handler: h.Handler.WithAttrs(attrs), floor: h.floor}
}

func (h levelFloor) WithGroup(name string) slog.Handler {
	return levelFloor{Handler: h.Handler.WithGroup(name), floor: h.floor}
}
