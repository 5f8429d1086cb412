package logutil

import (
	"bytes"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
)

func TestKlogWriter(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	l := logrus.New()
	l.SetOutput(&buf)
	l.SetFormatter(&logrus.TextFormatter{DisableTimestamp: true})

	v := 0
	w := klogWriter{log: logrus.NewEntry(l), verbosity: func() int { return v }}
	n, err := w.Write([]byte("E1202 reflector.go:200] failed to list *v1.ConfigMap: connection refused\n"))
	assert.NoError(t, err)
	assert.Equal(t, 73, n)
	assert.Empty(t, buf.String(), "hidden at the default level")

	for _, v = range []int{1, 2} {
		l.SetLevel(logrus.TraceLevel)
		_, _ = w.Write([]byte("W1202 reflector.go:200] pods is forbidden\n"))
		assert.Empty(t, buf.String(), "hidden below -v 3, at -v %d", v)
	}

	v = 3
	_, _ = w.Write([]byte("E1202 reflector.go:200] failed to list\n"))
	assert.Contains(t, buf.String(), `msg="E1202 reflector.go:200] failed to list" source=client-go`)
}
