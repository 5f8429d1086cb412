package printers

import (
	"io"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/lockctl/lockctl/lock"
)

// WindowItem is a freeze window as freeze-windows list -o json|yaml prints
// it.
type WindowItem struct {
	Name     string   `json:"name"`
	Schedule string   `json:"schedule,omitempty"`
	Duration string   `json:"duration,omitempty"`
	Reason   string   `json:"reason,omitempty"`
	Targets  []string `json:"targets,omitempty"`
	// Active is true while the window freezes; Start and End are the
	// freeze in force or the next one.
	Active bool         `json:"active"`
	Start  *metav1.Time `json:"start,omitempty"`
	End    *metav1.Time `json:"end,omitempty"`
	// Invalid says why the entry cannot be read; empty when it can.
	Invalid string `json:"invalid,omitempty"`
}

// WindowItems returns the entries of the freeze windows ConfigMap as list
// prints them at now, and how many of them cannot be read.
func WindowItems(entries []lock.WindowEntry, now time.Time) (items []WindowItem, broken int) {
	items = make([]WindowItem, 0, len(entries))
	for _, e := range entries {
		w := e.Window
		it := WindowItem{Name: w.Name, Schedule: w.Schedule, Reason: w.Reason, Targets: w.Targets}
		if w.Duration.Duration > 0 {
			it.Duration = w.Duration.Duration.String()
		}
		if e.Err != nil {
			broken++
			it.Invalid = e.Err.Error()
		} else if f := w.Next(now); f != nil {
			start, end := metav1.NewTime(f.Since.Time), metav1.NewTime(f.Until.Time)
			it.Start, it.End, it.Active = &start, &end, !f.Since.After(now)
		}
		items = append(items, it)
	}
	return items, broken
}

// PrintWindows prints items on w: a List as JSON or YAML with format, else
// a table (nothing when there are none).
func PrintWindows(w io.Writer, format string, items []WindowItem) error {
	if format != "" {
		return Object(w, format, ListOf(items))
	}
	if len(items) == 0 {
		return nil
	}
	rows := make([][]string, 0, len(items))
	for _, it := range items {
		state := "-"
		switch {
		case it.Invalid != "":
			state = "invalid: " + it.Invalid
		case it.Active:
			state = "frozen until " + it.End.UTC().Format(time.RFC3339)
		case it.Start != nil:
			state = "next " + it.Start.UTC().Format(time.RFC3339)
		}
		targets := "*"
		if len(it.Targets) > 0 {
			targets = strings.Join(it.Targets, ",")
		}
		rows = append(rows, []string{OrDash(it.Name), OrDash(it.Schedule), OrDash(it.Duration), targets, state, OrDash(it.Reason)})
	}
	return (&Table{}).Print(w, []string{"NAME", "SCHEDULE", "DURATION", "TARGETS", "STATE", "REASON"}, rows, false)
}
