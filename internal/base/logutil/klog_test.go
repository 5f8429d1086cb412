package logutil

import (
	"bytes"
	"testing"

	"github.com/stretchr/testify/assert"
)

func TestKlogWriter(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	v := 0
	w := klogWriter{log: textLogger(&buf, LevelTrace), verbosity: func() int { return v }}
	n, err := w.Write([]byte("E1202 reflector.go:200] failed to list *v1.ConfigMap: connection refused\n"))
	assert.NoError(t, err)
	assert.Equal(t, 73, n)
	assert.Empty(t, buf.String(), "hidden at the default level")

	for _, v = range []int{1, 2} {
		_, _ = w.Write([]byte("W1202 reflector.go:200] pods is forbidden\n"))
		assert.Empty(t, buf.String(), "hidden below -v 3, at -v %d", v)
	}

	v = 3
	_, _ = w.Write([]byte("E1202 reflector.go:200] failed to list\n"))
	assert.Equal(t, "level=DEBUG-4 msg=\"E1202 reflector.go:200] failed to list\" source=client-go\n", buf.String(), "a trace entry at -v 3")
}
