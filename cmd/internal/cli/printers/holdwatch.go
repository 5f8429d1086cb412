package printers

import (
	"fmt"
	"io"
	"time"

	"github.com/lockctl/lockctl/lock/record"
)

// HoldWatch tells which holds of a watched history (history -w) are rows
// not shown yet: a new holder, a hold that ended. A holder handed the lock
// is shown once, not again when it confirms (its since moves to the
// confirmation).
type HoldWatch struct {
	shown map[string]bool
	// holding is the identity of the hold last shown as holding, until a
	// row shows it ended.
	holding string
}

// NewHoldWatch returns the watch of a history whose rows shown are holds
// (Holds), newest first.
func NewHoldWatch(shown []record.HistoryEntry) *HoldWatch {
	w := &HoldWatch{shown: map[string]bool{}}
	for _, e := range shown {
		w.shown[holdKey(e)] = true
	}
	if len(shown) > 0 && shown[0].Ended == Holding {
		w.holding = shown[0].Identity.String()
	}
	return w
}

// Rows returns the holds of h not shown yet, oldest first, and counts them
// as shown.
func (w *HoldWatch) Rows(h *record.History) []record.HistoryEntry {
	var rows []record.HistoryEntry
	holds := Holds(h)
	for i := len(holds) - 1; i >= 0; i-- {
		e := holds[i]
		k := holdKey(e)
		if w.shown[k] {
			continue
		}
		w.shown[k] = true
		who := e.Identity.String()
		switch {
		case e.Ended != Holding:
			if who == w.holding {
				w.holding = ""
			}
		case who == w.holding:
			continue // the same hold, confirmed
		default:
			w.holding = who
		}
		rows = append(rows, e)
	}
	return rows
}

// holdKey tells the holds of a history apart, the current one from the
// same hold once it ended.
func holdKey(e record.HistoryEntry) string {
	return fmt.Sprintf("%s|%s|%s|%s", e.Identity, e.Since.UTC().Format(time.RFC3339Nano), e.Until.UTC().Format(time.RFC3339Nano), e.Ended)
}

// HistoryPrinter prints a lock's history as history does: its object
// forms print the whole history, once more for each change with -w; the
// table prints a row per hold, then a row for each hold not shown yet
// (HoldWatch).
type HistoryPrinter struct {
	object *Printer[*record.History]
	holds  *Printer[record.HistoryEntry]
	watch  *HoldWatch
}

// NewHistoryPrinter returns the printer of the -o forms flags on w.
func NewHistoryPrinter(w io.Writer, flags *OutputFlags, o Options) *HistoryPrinter {
	return &HistoryPrinter{object: &Printer[*record.History]{W: w, Flags: flags}, holds: NewHoldPrinter(w, flags, o)}
}

// PrintAll prints the history h; list is false while watching (-w): a
// table then takes further rows.
func (p *HistoryPrinter) PrintAll(h *record.History, list bool) error {
	if !p.holds.Flags.IsTable() {
		return p.object.Print(h)
	}
	holds := Holds(h)
	p.watch = NewHoldWatch(holds)
	return p.holds.PrintAll(holds, list)
}

// Print prints the change to the history that h is, after PrintAll.
func (p *HistoryPrinter) Print(h *record.History) error {
	if !p.holds.Flags.IsTable() {
		return p.object.Print(h)
	}
	// A row for each hold not shown: a new holder, a hold that ended.
	for _, e := range p.watch.Rows(h) {
		if err := p.holds.Print(e); err != nil {
			return err
		}
	}
	return nil
}
