// Package term writes lockctl's own lines on stderr: status lines, log
// entries, progress and errors, in one of three forms — structured
// (JX_LOG_FORMAT=json), live (a terminal: a live line redrawn every second,
// colour unless NO_COLOR) or plain (every line starts with the UTC time).
// See docs/adr/0016-terminal-output.md.
package term

import (
	"bytes"
	"fmt"
	"io"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/sirupsen/logrus"
	xterm "golang.org/x/term"
	"k8s.io/utils/clock"
)

// Style colours a status line on a terminal.
type Style int

// The styles: StyleNone is the zero value, an uncoloured line.
const (
	StyleNone Style = iota
	StyleGood       // green: success
	StyleBad        // red: failure
	StyleWarn       // yellow: trouble
)

// styleEscape returns the ANSI escape of a style; false for StyleNone.
func styleEscape(s Style) (string, bool) {
	switch s {
	case StyleGood:
		return "\033[32m", true
	case StyleBad:
		return "\033[31m", true
	case StyleWarn:
		return "\033[33m", true
	}
	return "", false
}

const ansiReset = "\033[0m"

// ClearLine is the sequence that takes the live line away.
const ClearLine = "\r\033[K"

// defaultTerminalWidth is the width assumed for a live line whose terminal
// does not say how wide it is (--progress tty into a pipe).
const defaultTerminalWidth = 80

// plainTimeLayout starts every line lockctl writes to stderr outside a
// terminal: the UTC time of day (docs/adr/0016-terminal-output.md).
const plainTimeLayout = time.TimeOnly

// Console is the one writer of lockctl's own lines on stderr: status
// lines, log entries, wait progress and errors go through it, so they all
// take one form (docs/adr/0016-terminal-output.md):
//
//   - structured (JX_LOG_FORMAT=json): every line is one JSON object, with
//     no live line;
//   - live (a terminal outside CI, or --progress tty): lines scroll above
//     one live line that is redrawn every second, never wider than the
//     terminal and taken away before any other line is written; colour
//     unless NO_COLOR is set;
//   - plain (CI logs, pipes, files): every line starts with the UTC time,
//     except in the logs of GitHub Actions and GitLab CI, which time every
//     line themselves (TimestampedCI), or with --timestamps=false.
type Console struct {
	out   io.Writer
	clock clock.Clock
	// width returns the terminal's columns; 0 means unknown.
	width func() int
	// format is the structured form of every line; nil means text.
	format logrus.Formatter
	// colorOK is whether colour may be used on a live console: out is a
	// terminal and NO_COLOR is not set.
	colorOK bool
	// stamp is whether plain lines start with the UTC time: not in the
	// logs of CI systems that stamp every line themselves (TimestampedCI).
	stamp bool

	mu     sync.Mutex
	live   bool
	quiet  bool                       // status lines are dropped (-q)
	status func(now time.Time) string // the live line; nil when none
	shown  bool                       // the live line is on screen
	stop   chan struct{}              // ends the redraw ticker; nil when none runs
	done   chan struct{}
}

// Options say where a console writes and how. The zero value is usable: a
// plain console on the real clock.
type Options struct {
	// Clock times the lines and redraws the live line; nil means
	// clock.RealClock{}.
	Clock clock.Clock
	// Terminal is whether out is a terminal.
	Terminal bool
	// Width returns the terminal's columns; nil or 0 means unknown.
	Width func() int
	// Getenv reads CI, NO_COLOR, TERM and JX_LOG_FORMAT.
	Getenv func(string) string
	// Structured is the formatter of JX_LOG_FORMAT=stackdriver; json gets
	// the console's own JSON formatter.
	Structured logrus.Formatter
}

// New returns a console writing to out. It is live when o.Terminal is set
// outside CI (and TERM is not dumb), structured when JX_LOG_FORMAT asks for
// it, plain otherwise.
func New(out io.Writer, o Options) *Console {
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	getenv := o.Getenv
	if getenv == nil {
		getenv = func(string) string { return "" }
	}
	dumb := getenv("TERM") == "dumb"
	c := &Console{
		out:     out,
		clock:   o.Clock,
		width:   o.Width,
		colorOK: o.Terminal && !dumb && getenv("NO_COLOR") == "",
		live:    o.Terminal && !dumb && getenv("CI") == "",
		stamp:   TimestampedCI(getenv) == "",
	}
	switch strings.ToLower(getenv("JX_LOG_FORMAT")) {
	case "", "text":
	case "json":
		c.format = &jsonFormat{c: c}
	default:
		c.format = o.Structured
	}
	return c
}

// TimestampedCI names the CI system whose log viewer puts a time on every
// line itself, where lockctl's own would be a second one: GitHub Actions
// (GITHUB_ACTIONS=true) and GitLab CI (GITLAB_CI=true); "" elsewhere.
func TimestampedCI(getenv func(string) string) string {
	switch {
	case getenv("GITHUB_ACTIONS") == "true":
		return "GitHub Actions"
	case getenv("GITLAB_CI") == "true":
		return "GitLab CI"
	}
	return ""
}

// SetTimestamps makes plain lines start with the UTC time, or not, as
// --timestamps asks; by default they do except in the logs of
// TimestampedCI.
func (c *Console) SetTimestamps(stamp bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.stamp = stamp
}

// SetLive makes the console live (a live line, no timestamps) or plain,
// as --progress asks; a structured console stays structured.
func (c *Console) SetLive(live bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.live = live
}

// IsLive reports whether the console shows a live line.
func (c *Console) IsLive() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.liveLocked()
}

func (c *Console) liveLocked() bool { return c.live && c.format == nil }

// SetQuiet drops status lines (-q); errors and log entries still show.
func (c *Console) SetQuiet(quiet bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.quiet = quiet
}

// Structured reports whether lines are entries in a log format (json).
func (c *Console) Structured() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.format != nil
}

// Statusf prints one status line, styled on a live console. -q drops it.
func (c *Console) Statusf(style Style, fields logrus.Fields, format string, args ...any) {
	c.Line(styleLevel(style), style, fields, fmt.Sprintf(format, args...), false)
}

// Line writes one line at level: a status line (always=false, dropped by
// -q) or an error (always shown).
func (c *Console) Line(level logrus.Level, style Style, fields logrus.Fields, msg string, always bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.quiet && !always {
		return
	}
	now := c.clock.Now()
	var b []byte
	switch {
	case c.format != nil:
		var err error
		if b, err = c.format.Format(&logrus.Entry{Data: fields, Time: now, Level: level, Message: msg}); err != nil {
			b = []byte(msg + "\n")
		}
	case c.live:
		if esc, ok := styleEscape(style); ok && c.colorOK {
			msg = esc + msg + ansiReset
		}
		b = []byte(msg + "\n")
	case c.stamp:
		b = []byte(now.UTC().Format(plainTimeLayout) + " " + msg + "\n")
	default:
		b = []byte(msg + "\n")
	}
	c.writeLocked(b)
}

// writeLocked writes b with the live line taken away and put back under it.
func (c *Console) writeLocked(b []byte) {
	c.clearLocked()
	_, _ = c.out.Write(b)
	c.drawLocked()
}

// SetStatus sets what the live line shows, redrawn every second; nil
// removes it. Only a live console has a live line. status may give
// shorter forms of the line after the full one, one a line: the live line
// shows the first form that fits the terminal, else the last one cut to
// fit (fitWidth), so a narrow terminal still shows what matters most.
func (c *Console) SetStatus(status func(now time.Time) string) {
	c.mu.Lock()
	if !c.liveLocked() || c.quiet {
		status = nil
	}
	c.clearLocked()
	c.status = status
	c.drawLocked()
	start := status != nil && c.stop == nil
	stop, done := c.stop, c.done
	if start {
		c.stop, c.done = make(chan struct{}), make(chan struct{})
		go c.tick(c.stop, c.done)
	} else if status == nil {
		c.stop, c.done = nil, nil
	}
	c.mu.Unlock()
	if status == nil && stop != nil {
		close(stop)
		<-done
	}
}

func (c *Console) tick(stop <-chan struct{}, done chan<- struct{}) {
	defer close(done)
	t := c.clock.NewTimer(time.Second)
	defer t.Stop()
	for {
		select {
		case <-stop:
			return
		case <-t.C():
			t.Reset(time.Second)
			c.mu.Lock()
			c.drawLocked()
			c.mu.Unlock()
		}
	}
}

func (c *Console) clearLocked() {
	if c.shown {
		_, _ = io.WriteString(c.out, ClearLine)
		c.shown = false
	}
}

func (c *Console) drawLocked() {
	if c.status == nil {
		return
	}
	_, _ = io.WriteString(c.out, ClearLine+fitWidth(c.status(c.clock.Now()), c.columns()))
	c.shown = true
}

// columns is the width of the terminal, or defaultTerminalWidth when it
// is not known.
func (c *Console) columns() int {
	if c.width != nil {
		if w := c.width(); w > 0 {
			return w
		}
	}
	return defaultTerminalWidth
}

// fitWidth returns the first of the forms of a live line (its lines,
// longest first) that fits on one row of a terminal width columns wide,
// else the last one cut to fit, ending with "…". It keeps the last column
// free: a line that fills the row makes some terminals wrap, and the next
// redraw would then leave a copy behind.
func fitWidth(line string, width int) string {
	max := width - 1
	if max < 1 {
		max = 1
	}
	forms := strings.Split(line, "\n")
	for _, f := range forms {
		if utf8.RuneCountInString(f) <= max {
			return f
		}
	}
	runes := []rune(forms[len(forms)-1])
	return string(runes[:max-1]) + "…"
}

// Around wraps w (where container logs go) so that on a live console each
// write first takes the live line away and then puts it back under it.
func (c *Console) Around(w io.Writer) io.Writer {
	if !c.IsLive() {
		return w
	}
	return writerFunc(func(p []byte) (int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.clearLocked()
		n, err := w.Write(p)
		c.drawLocked()
		return n, err
	})
}

// StatusWriter returns ErrOut as commands see it: every line written to it
// is a status line of the console (a structured entry, or timestamped),
// and -q drops it.
func (c *Console) StatusWriter() io.Writer {
	return &lineWriter{emit: func(line string) { c.Line(logrus.InfoLevel, StyleNone, nil, line, false) }}
}

// LogWriter is where the logger writes its formatted entries: through the
// console, so they never land inside the live line, and never dropped by
// -q (the logger's level does that).
func (c *Console) LogWriter() io.Writer {
	return writerFunc(func(p []byte) (int, error) {
		c.mu.Lock()
		defer c.mu.Unlock()
		c.writeLocked(p)
		return len(p), nil
	})
}

// LogFormatter is the logger's formatter: the console's structured form,
// or its text form.
func (c *Console) LogFormatter() logrus.Formatter {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.format != nil {
		return c.format
	}
	return &TextFormat{c: c}
}

// writerFunc is an io.Writer made of a function.
type writerFunc func(p []byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }

// lineWriter calls emit with every complete line written to it; a last
// line without a newline waits for the rest.
type lineWriter struct {
	mu   sync.Mutex
	buf  []byte
	emit func(line string)
}

func (w *lineWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := string(w.buf[:i])
		w.buf = w.buf[i+1:]
		w.emit(line)
	}
}

// styleLevel is the log level a styled status line has in structured form.
func styleLevel(s Style) logrus.Level {
	switch s {
	case StyleWarn:
		return logrus.WarnLevel
	case StyleBad:
		return logrus.ErrorLevel
	}
	return logrus.InfoLevel
}

// TextFormat is the logger's text form on the console: the time outside a
// terminal, the level unless info, the message, then the entry's fields
// as key=value, so "job state changed" keeps its job, from and to.
type TextFormat struct{ c *Console }

var _ logrus.Formatter = (*TextFormat)(nil)

// levelStyle colours the level of a log entry on a live console.
func levelStyle(l logrus.Level) Style {
	switch l {
	case logrus.PanicLevel, logrus.FatalLevel, logrus.ErrorLevel:
		return StyleBad
	case logrus.WarnLevel:
		return StyleWarn
	}
	return StyleNone
}

func (f *TextFormat) Format(e *logrus.Entry) ([]byte, error) {
	f.c.mu.Lock()
	live, color, stamp := f.c.live, f.c.colorOK, f.c.stamp
	f.c.mu.Unlock()
	var b bytes.Buffer
	if !live && stamp {
		b.WriteString(f.c.clock.Now().UTC().Format(plainTimeLayout))
		b.WriteByte(' ')
	}
	if e.Level != logrus.InfoLevel {
		level := strings.ToUpper(e.Level.String())
		if esc, ok := styleEscape(levelStyle(e.Level)); ok && live && color {
			level = esc + level + ansiReset
		}
		b.WriteString(level)
		b.WriteString(": ")
	}
	b.WriteString(strings.TrimSuffix(e.Message, "\n"))
	keys := make([]string, 0, len(e.Data))
	for k := range e.Data {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		fmt.Fprintf(&b, " %s=%s", k, logfmtValue(e.Data[k]))
	}
	b.WriteByte('\n')
	return b.Bytes(), nil
}

// logfmtValue is v as a logfmt value: bare when it is one word, quoted
// otherwise.
func logfmtValue(v any) string {
	var s string
	switch v := v.(type) {
	case error:
		s = v.Error()
	case fmt.Stringer:
		s = v.String()
	default:
		s = fmt.Sprint(v)
	}
	if s == "" || strings.ContainsAny(s, " \t\n\"=\\") {
		return fmt.Sprintf("%q", s)
	}
	return s
}

// jsonFormat is JX_LOG_FORMAT=json on the console: logrus's JSON with the
// time from the console's clock, in UTC, for status lines and log entries
// alike.
type jsonFormat struct{ c *Console }

var _ logrus.Formatter = (*jsonFormat)(nil)

func (f *jsonFormat) Format(e *logrus.Entry) ([]byte, error) {
	cp := *e
	cp.Time = f.c.clock.Now().UTC()
	if cp.Data == nil {
		cp.Data = logrus.Fields{}
	}
	return (&logrus.JSONFormatter{TimestampFormat: time.RFC3339}).Format(&cp)
}

// IsTerminal reports whether w is a terminal.
func IsTerminal(w io.Writer) bool {
	file, ok := w.(*os.File)
	return ok && xterm.IsTerminal(int(file.Fd()))
}

// Width returns the columns of the terminal w is, else $COLUMNS; 0 means
// unknown.
func Width(w io.Writer, getenv func(string) string) int {
	if file, ok := w.(*os.File); ok {
		if cols, _, err := xterm.GetSize(int(file.Fd())); err == nil && cols > 0 {
			return cols
		}
	}
	cols, _ := strconv.Atoi(getenv("COLUMNS"))
	return cols
}
