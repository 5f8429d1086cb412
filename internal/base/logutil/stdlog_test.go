package logutil

import (
	"bytes"
	"log"
	"log/slog"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestStdlogWriter(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	std := log.New(stdlogWriter{log: textLogger(&buf, slog.LevelInfo)}, "", 0)
	std.Printf("http: TLS handshake error from 127.0.0.1:5555: EOF")
	assert.Equal(t, "level=WARN msg=\"http: TLS handshake error from 127.0.0.1:5555: EOF\"\n", buf.String())
}
