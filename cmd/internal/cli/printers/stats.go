package printers

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/lockctl/lockctl/internal/base/human"
	"github.com/lockctl/lockctl/stats"
)

// NewStatsPrinter returns the printer of locks' statistics in flags' form
// on w: one row a lock, durations as kubectl writes ages. -o wide adds
// the freeze overrides and the time covered.
func NewStatsPrinter(w io.Writer, flags *OutputFlags) *Printer[*stats.LockStats] {
	return &Printer[*stats.LockStats]{
		W: w, Flags: flags,
		Header: func(wide bool) []string {
			h := []string{"TARGET", "HOLDS", "HOLD P50/P90/MAX", "WAIT P50/P90/MAX", "ENDED R/E/S/F", "BREAK-GLASS", "FROZEN", "BUSIEST (UTC)"}
			if wide {
				h = append(h, "IGNORED FREEZE", "FROM")
			}
			return h
		},
		Row: func(s *stats.LockStats, wide bool) []string {
			st := s.Status
			var ended []string
			for _, e := range stats.Endings() {
				ended = append(ended, strconv.Itoa(st.Ended[e]))
			}
			var busy []string
			for _, h := range st.BusiestHours {
				busy = append(busy, fmt.Sprintf("%02d:00 (%d)", h.Hour, h.Holds))
			}
			waits := spreadString(st.Wait)
			if st.Waits < st.Holds && st.Wait != nil {
				waits += fmt.Sprintf(" (of %d)", st.Waits)
			}
			row := []string{s.Spec.Target, strconv.Itoa(st.Holds), spreadString(st.Hold), waits,
				strings.Join(ended, "/"), strconv.Itoa(st.BreakGlass), human.Duration(st.Frozen.Duration), OrDash(strings.Join(busy, ", "))}
			if wide {
				from := "-"
				if st.From != nil {
					from = st.From.UTC().Format("2006-01-02T15:04Z")
					if st.Partial {
						from += " (history full)"
					}
				}
				row = append(row, strconv.Itoa(st.IgnoredFreeze), from)
			}
			return row
		},
	}
}

// spreadString is a spread as "4m/9m/21m", "-" for none.
func spreadString(s *stats.Spread) string {
	if s == nil {
		return "-"
	}
	return human.Duration(s.P50.Duration) + "/" + human.Duration(s.P90.Duration) + "/" + human.Duration(s.Max.Duration)
}
