package logutil

import (
	"bytes"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
)

// TestAtMost: the logger writes to the same place, in the same format,
// only what is at the level given or above, and never below the original
// logger's level.
func TestAtMost(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		level logrus.Level // of the original logger
		want  string
	}{
		{name: "debug logger, warn at most", level: logrus.DebugLevel, want: "level=warning msg=warn\nlevel=error msg=error\n"},
		{name: "error logger stays error", level: logrus.ErrorLevel, want: "level=error msg=error\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			l := logrus.New()
			l.SetOutput(&buf)
			l.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true})
			l.SetLevel(tt.level)
			q := AtMost(logrus.NewEntry(l), logrus.WarnLevel)
			q.Info("info")
			q.Warn("warn")
			q.Error("error")
			assert.Equal(t, tt.want, buf.String(), "logger at %s", tt.level)
		})
	}
}
