package printers

import (
	"io"
	"strings"
	"unicode/utf8"
)

// Table lays rows out as kubectl does: columns three spaces apart, the
// last one unpadded. It prints the header once, before the first rows,
// and keeps its column widths from one print to the next, growing them as
// needed, so the rows -w adds line up with those above.
type Table struct {
	widths []int
	headed bool
}

// Print writes rows to w, under header the first time unless noHeaders.
func (t *Table) Print(w io.Writer, header []string, rows [][]string, noHeaders bool) error {
	if !t.headed && !noHeaders {
		rows = append([][]string{header}, rows...)
	}
	t.headed = true
	for _, r := range rows {
		for i, cell := range r[:len(r)-1] {
			if i == len(t.widths) {
				t.widths = append(t.widths, 0)
			}
			t.widths[i] = max(t.widths[i], utf8.RuneCountInString(cell))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, cell := range r[:len(r)-1] {
			b.WriteString(cell)
			b.WriteString(strings.Repeat(" ", t.widths[i]-utf8.RuneCountInString(cell)+3))
		}
		b.WriteString(r[len(r)-1])
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
