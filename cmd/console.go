package cmd

import (
	"io"
	"time"

	"github.com/sirupsen/logrus"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/term"
)

// console is the one writer of lockctl's own lines on stderr, a
// term.Console; see that package for its three forms.
type console struct{ *term.Console }

// consoleOptions say where a console writes and how.
type consoleOptions = term.Options

// lineStyle colours a status line on a terminal.
type lineStyle = term.Style

const (
	styleNone = term.StyleNone
	styleGood = term.StyleGood
	styleBad  = term.StyleBad
	styleWarn = term.StyleWarn
)

// ansiClearLine is the sequence that takes the live line away.
const ansiClearLine = term.ClearLine

// textFormat is the logger's text form on the console.
type textFormat = term.TextFormat

func newConsole(out io.Writer, clk clock.WithTicker, o consoleOptions) *console {
	return &console{term.New(out, clk, o)}
}

// The console's methods under the names cmd calls them by.

func (c *console) setLive(live bool)                      { c.SetLive(live) }
func (c *console) isLive() bool                           { return c.IsLive() }
func (c *console) setQuiet(quiet bool)                    { c.SetQuiet(quiet) }
func (c *console) useFormat(format logrus.Formatter)      { c.UseFormat(format) }
func (c *console) structured() bool                       { return c.Structured() }
func (c *console) setStatus(s func(now time.Time) string) { c.SetStatus(s) }
func (c *console) around(w io.Writer) io.Writer           { return c.Around(w) }
func (c *console) statusWriter() io.Writer                { return c.StatusWriter() }
func (c *console) logWriter() io.Writer                   { return c.LogWriter() }
func (c *console) logFormatter() logrus.Formatter         { return c.LogFormatter() }

func (c *console) statusf(style lineStyle, fields logrus.Fields, format string, args ...any) {
	c.Statusf(style, fields, format, args...)
}

func (c *console) line(level logrus.Level, style lineStyle, fields logrus.Fields, msg string, always bool) {
	c.Line(level, style, fields, msg, always)
}
