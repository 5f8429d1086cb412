package cmd

import (
	"io"
	"time"
)

// runDisplay shows what `lockctl run` does, on the console. On a terminal
// (live) status lines scroll above one live line that is redrawn every
// second, and lines are coloured unless NO_COLOR is set; elsewhere every
// line is printed once with a UTC timestamp, for CI logs, or as a JSON
// object with JX_LOG_FORMAT=json. Container logs written through logs()
// never collide with the live line. With -q nothing shows.
type runDisplay struct{ c *console }

func newRunDisplay(c *console) *runDisplay { return &runDisplay{c: c} }

// printf prints one status line.
func (d *runDisplay) printf(style lineStyle, format string, args ...any) {
	d.c.statusf(style, nil, format, args...)
}

// setStatus sets what the live line shows; nil removes it. Without a
// terminal there is no live line.
func (d *runDisplay) setStatus(status func(now time.Time) string) { d.c.setStatus(status) }

// logs wraps w, where container logs go, so that on a terminal each write
// first takes the live line away and then puts it back under the output.
func (d *runDisplay) logs(w io.Writer) io.Writer { return d.c.around(w) }

// close stops redrawing and removes the live line.
func (d *runDisplay) close() { d.c.setStatus(nil) }
