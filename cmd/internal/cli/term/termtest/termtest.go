// Package termtest builds consoles for the tests of what lockctl writes on
// stderr (package term's own and cmdutil's error reports): on a buffer
// safe for concurrent writers, with a fake clock.
package termtest

import (
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/lockctl/lockctl/cmd/internal/cli/term"
	"github.com/lockctl/lockctl/internal/testing/clitest"
)

// Now is the time the fake clock of Console starts at.
var Now = time.Date(2026, 12, 2, 10, 0, 0, 0, time.UTC)

// Console returns a console writing to a buffer, on a fake clock at Now: a
// terminal width columns wide when terminal is set, else plain, with env
// as its environment (NO_COLOR, CI, JX_LOG_FORMAT).
func Console(t testing.TB, terminal bool, width int, env map[string]string) (*term.Console, *clitest.SyncBuffer, *testingclock.FakeClock) {
	t.Helper()
	var buf clitest.SyncBuffer
	clk := testingclock.NewFakeClock(Now)
	c := term.New(&buf, term.Options{
		Clock:    clk,
		Terminal: terminal,
		Width:    func() int { return width },
		Getenv:   func(k string) string { return env[k] },
	})
	return c, &buf, clk
}

// Logger returns a logger at debug level writing through c, as lockctl's
// logging setup (cli.Factory.SetupLogging) routes its logger.
func Logger(c *term.Console) *logrus.Entry {
	l := logrus.New()
	l.SetOutput(c.LogWriter())
	l.SetFormatter(c.LogFormatter())
	l.SetLevel(logrus.DebugLevel)
	return logrus.NewEntry(l)
}
