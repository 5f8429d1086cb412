package logutil

import (
	"bytes"
	"log"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
)

func TestStdlogWriter(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := logrus.New()
	l.SetOutput(&buf)
	l.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true})

	std := log.New(stdlogWriter{log: logrus.NewEntry(l)}, "", 0)
	std.Printf("http: TLS handshake error from 127.0.0.1:5555: EOF")
	assert.Equal(t, "level=warning msg=\"http: TLS handshake error from 127.0.0.1:5555: EOF\"\n", buf.String())
}
