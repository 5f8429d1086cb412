package cmd

import (
	"fmt"
	"io"
	"sync"
	"time"

	"k8s.io/utils/clock"
)

// lineStyle colours a status line on a terminal.
type lineStyle int

const (
	styleNone lineStyle = iota
	styleGood
	styleBad
	styleWarn
)

// ANSI escapes of the styles, and the sequence that clears the live line.
var styleEscapes = map[lineStyle]string{styleGood: "\033[32m", styleBad: "\033[31m", styleWarn: "\033[33m"}

const (
	ansiReset     = "\033[0m"
	ansiClearLine = "\r\033[K"
)

// runDisplay shows what `lockctl run` does, on ErrOut. On a terminal
// (live) status lines scroll above one live line that is redrawn every
// second, and lines are coloured unless NO_COLOR is set; elsewhere every
// line is printed once with a UTC timestamp, for CI logs. Container logs
// written through logs() never collide with the live line. With -q ErrOut
// is io.Discard, so nothing shows.
type runDisplay struct {
	out   io.Writer
	clock clock.WithTicker
	live  bool
	color bool

	mu     sync.Mutex
	status func(now time.Time) string // the live line; nil when none
	shown  bool                       // the live line is on screen
	stop   chan struct{}
	done   chan struct{}
}

func newRunDisplay(out io.Writer, clk clock.WithTicker, live, color bool) *runDisplay {
	d := &runDisplay{out: out, clock: clk, live: live, color: color && live}
	if live {
		d.stop, d.done = make(chan struct{}), make(chan struct{})
		go d.tick()
	}
	return d
}

// printf prints one status line.
func (d *runDisplay) printf(style lineStyle, format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.live {
		fmt.Fprintf(d.out, "%s %s\n", d.clock.Now().UTC().Format(time.TimeOnly), msg)
		return
	}
	d.clearLocked()
	if esc, ok := styleEscapes[style]; ok && d.color {
		msg = esc + msg + ansiReset
	}
	fmt.Fprintln(d.out, msg)
	d.drawLocked()
}

// setStatus sets what the live line shows; nil removes it. Without a
// terminal there is no live line.
func (d *runDisplay) setStatus(status func(now time.Time) string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.status = status
	if d.live {
		d.clearLocked()
		d.drawLocked()
	}
}

// logs wraps w, where container logs go, so that on a terminal each write
// first takes the live line away and then puts it back under the output.
func (d *runDisplay) logs(w io.Writer) io.Writer {
	if !d.live {
		return w
	}
	return &displayWriter{d: d, w: w}
}

// close stops redrawing and removes the live line.
func (d *runDisplay) close() {
	if !d.live {
		return
	}
	close(d.stop)
	<-d.done
	d.mu.Lock()
	defer d.mu.Unlock()
	d.status = nil
	d.clearLocked()
}

func (d *runDisplay) tick() {
	defer close(d.done)
	t := d.clock.NewTicker(time.Second)
	defer t.Stop()
	for {
		select {
		case <-d.stop:
			return
		case <-t.C():
			d.mu.Lock()
			d.drawLocked()
			d.mu.Unlock()
		}
	}
}

func (d *runDisplay) clearLocked() {
	if d.shown {
		fmt.Fprint(d.out, ansiClearLine)
		d.shown = false
	}
}

func (d *runDisplay) drawLocked() {
	if d.status == nil {
		return
	}
	fmt.Fprint(d.out, ansiClearLine+d.status(d.clock.Now()))
	d.shown = true
}

// displayWriter is a writer whose writes move the live line out of the way.
type displayWriter struct {
	d *runDisplay
	w io.Writer
}

func (dw *displayWriter) Write(p []byte) (int, error) {
	dw.d.mu.Lock()
	defer dw.d.mu.Unlock()
	dw.d.clearLocked()
	n, err := dw.w.Write(p)
	dw.d.drawLocked()
	return n, err
}
