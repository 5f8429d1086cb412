package logutil

import (
	"bytes"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

// textLogger returns a logger writing slog's text form without the time to
// buf, passing entries from level on.
func textLogger(buf *bytes.Buffer, level slog.Level) *slog.Logger {
	return slog.New(slog.NewTextHandler(buf, &slog.HandlerOptions{
		Level: level,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
}

// TestAtLeast: the logger writes through the same handler only what is at
// the level given or above, and never what the original logger drops.
func TestAtLeast(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		level slog.Level // of the original logger
		want  string
	}{
		{name: "debug logger, warn at least", level: slog.LevelDebug, want: "level=WARN msg=warn lock=staging\nlevel=ERROR msg=error lock=staging\n"},
		{name: "error logger stays error", level: slog.LevelError, want: "level=ERROR msg=error lock=staging\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			q := AtLeast(textLogger(&buf, tt.level), slog.LevelWarn).With("lock", "staging")
			q.Info("info")
			q.Warn("warn")
			q.Error("error")
			assert.Equal(t, tt.want, buf.String(), "logger at %s", tt.level)
		})
	}
}

// TestOrDiscard: nil is a logger that writes nothing; a logger is kept.
func TestOrDiscard(t *testing.T) {
	t.Parallel()
	assert.False(t, OrDiscard(nil).Enabled(t.Context(), slog.LevelError), "nil discards")
	var buf bytes.Buffer
	log := textLogger(&buf, slog.LevelInfo)
	assert.Same(t, log, OrDiscard(log))
}
