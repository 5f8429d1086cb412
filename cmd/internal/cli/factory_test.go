package cli

import (
	"bytes"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"
	"github.com/stretchr/testify/assert"
)

// TestFactoryLoggerIsItsOwn: every Factory has a logger of its own on its
// ErrOut; setting one up for -v or -q changes neither another factory's
// logger nor logrus's global one, which jx-logging configures.
func TestFactoryLoggerIsItsOwn(t *testing.T) {
	t.Parallel()
	global := logrus.StandardLogger()
	globalOut, globalLevel := global.Out, global.GetLevel()

	var errA, errB bytes.Buffer
	a := NewFactory(IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errA}, "test")
	b := NewFactory(IOStreams{In: strings.NewReader(""), Out: &bytes.Buffer{}, ErrOut: &errB}, "test")
	a.Getenv = func(string) string { return "" }
	assert.NotSame(t, a.Log.Logger, b.Log.Logger, "one logger per factory")
	assert.NotSame(t, global, a.Log.Logger, "not the global logger")

	a.SetupLogging(2, false)
	assert.Equal(t, logrus.TraceLevel, a.Log.Logger.GetLevel(), "-v 2 on a")
	assert.Equal(t, globalLevel, b.Log.Logger.GetLevel(), "b keeps its level")
	assert.Equal(t, globalLevel, global.GetLevel(), "the global level is untouched")
	assert.Same(t, globalOut, global.Out, "the global output is untouched")

	a.Log.WithField("lock", "staging").Debug("only on a")
	b.Log.Info("only on b")
	assert.Contains(t, errA.String(), "only on a")
	assert.NotContains(t, errA.String(), "only on b")
	assert.Contains(t, errB.String(), "only on b")
	assert.NotContains(t, errB.String(), "only on a")
}
