// Package printers prints lockctl's objects for people and for scripts:
// tables laid out as kubectl lays them out, and objects as JSON or YAML.
package printers

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"text/tabwriter"
	"time"
	"unicode/utf8"

	"sigs.k8s.io/yaml"

	"github.com/lockctl/lockctl/internal/term"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/scheduler"
)

// Object writes obj as JSON or YAML.
func Object(w io.Writer, format string, obj any) error {
	switch format {
	case "json":
		data, err := json.MarshalIndent(obj, "", "  ")
		if err != nil {
			return fmt.Errorf("encode json: %w", err)
		}
		_, err = fmt.Fprintf(w, "%s\n", data)
		return err
	case "yaml":
		data, err := yaml.Marshal(obj)
		if err != nil {
			return fmt.Errorf("encode yaml: %w", err)
		}
		_, err = w.Write(data)
		return err
	}
	return fmt.Errorf("unknown output format %q", format)
}

// ListOf wraps items in a Kubernetes-style List, as kubectl prints them.
func ListOf[T any](items []T) map[string]any {
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
}

// JobPrinter prints jobs in one -o format: a table (wide with -o wide),
// job/NAME lines, or objects. A table keeps its column widths from one
// print to the next, growing them as needed, so the rows of -w line up.
type JobPrinter struct {
	// W is where the jobs go.
	W io.Writer
	// Format is the -o format: "" (a table), wide, name, json or yaml.
	Format string
	// Namespaces adds a NAMESPACE column to tables (-A).
	Namespaces bool
	// Now is the time ages are counted to.
	Now func() time.Time

	widths  []int
	printed int // objects printed so far
}

// PrintAll prints jobs; as a table with its header, and as one List object
// when list is set (otherwise one object each, as -w prints them).
func (p *JobPrinter) PrintAll(jobs []*job.Job, list bool) error {
	switch p.Format {
	case "json", "yaml":
		if list {
			p.printed++
			return Object(p.W, p.Format, ListOf(jobs))
		}
		for _, j := range jobs {
			if err := p.Print(j); err != nil {
				return err
			}
		}
		return nil
	case "name":
		for _, j := range jobs {
			if err := p.Print(j); err != nil {
				return err
			}
		}
		return nil
	}
	if len(jobs) == 0 && list {
		return nil
	}
	rows := [][]string{p.header()}
	for _, j := range jobs {
		rows = append(rows, p.row(j))
	}
	return p.rows(rows)
}

// Print prints one job: a table row, its name or the object.
func (p *JobPrinter) Print(j *job.Job) error {
	switch p.Format {
	case "json", "yaml":
		if p.printed > 0 && p.Format == "yaml" {
			if _, err := fmt.Fprintln(p.W, "---"); err != nil {
				return err
			}
		}
		p.printed++
		return Object(p.W, p.Format, j)
	case "name":
		_, err := fmt.Fprintf(p.W, "job/%s\n", j.Name)
		return err
	}
	if p.widths == nil {
		return p.rows([][]string{p.header(), p.row(j)})
	}
	return p.rows([][]string{p.row(j)})
}

func (p *JobPrinter) header() []string {
	h := []string{"NAME", "JOB", "TYPE", "STATE", "AGE", "POD", "BUILD"}
	if p.Format == "wide" {
		h = append(h, "CLUSTER", "REFS", "QUEUE", "REASON")
	}
	h = append(h, "DESCRIPTION")
	if p.Namespaces {
		h = append([]string{"NAMESPACE"}, h...)
	}
	return h
}

func (p *JobPrinter) row(j *job.Job) []string {
	age := "-"
	if st := j.Status.StartTime; st != nil {
		age = term.HumanDuration(p.Now().Sub(st.Time))
	}
	r := []string{j.Name, j.Spec.Job, string(j.Spec.Type), string(j.Status.State), age,
		OrDash(j.Status.PodName), OrDash(j.Status.BuildID)}
	if p.Format == "wide" {
		r = append(r, j.ClusterAlias(), OrDash(refsString(j.Spec.Refs)), OrDash(j.Spec.Queue), OrDash(j.Status.Reason))
	}
	r = append(r, OrDash(j.Status.Description))
	if p.Namespaces {
		r = append([]string{j.Namespace}, r...)
	}
	return r
}

// rows prints table rows as kubectl does: columns three spaces apart, the
// last one unpadded.
func (p *JobPrinter) rows(rows [][]string) error {
	for _, r := range rows {
		for i, cell := range r[:len(r)-1] {
			if i == len(p.widths) {
				p.widths = append(p.widths, 0)
			}
			p.widths[i] = max(p.widths[i], utf8.RuneCountInString(cell))
		}
	}
	var b strings.Builder
	for _, r := range rows {
		for i, cell := range r[:len(r)-1] {
			b.WriteString(cell)
			b.WriteString(strings.Repeat(" ", p.widths[i]-utf8.RuneCountInString(cell)+3))
		}
		b.WriteString(r[len(r)-1])
		b.WriteString("\n")
	}
	_, err := io.WriteString(p.W, b.String())
	return err
}

// refsString is refs as org/repo@baseRef, with #N for each pull.
func refsString(r *job.Refs) string {
	if r == nil || r.Org == "" && r.Repo == "" {
		return ""
	}
	s := r.Org + "/" + r.Repo
	if r.BaseRef != "" {
		s += "@" + r.BaseRef
	}
	for _, pr := range r.Pulls {
		s += fmt.Sprintf("#%d", pr.Number)
	}
	return s
}

// LockTable prints locks as kubectl prints resources, with the lock
// namespace first when withNamespace is set.
func LockTable(w io.Writer, items []lock.Lock, withNamespace bool, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	if withNamespace {
		fmt.Fprint(tw, "NAMESPACE\t")
	}
	fmt.Fprintln(tw, "TARGET\tHOLDER\tTOKEN\tSINCE\tLIVENESS\tWAITING")
	for _, l := range items {
		if withNamespace {
			fmt.Fprintf(tw, "%s\t", l.Namespace)
		}
		if l.Status.Invalid != "" {
			fmt.Fprintf(tw, "%s\t<invalid>\t-\t-\t%s\t-\n", OrDash(l.Spec.Target), l.Status.Invalid)
			continue
		}
		holder, since, liveness := "-", "-", l.Status.Liveness
		if h := l.Status.Holder; h != nil {
			holder, since = h.Identity.String(), term.HumanDuration(now.Sub(h.Since.Time))
			if !l.Status.Alive {
				liveness += " (stale)"
			}
			if h.HandedOver {
				liveness += " (handed over)"
			}
			if h.IgnoreFreeze && l.Status.Freeze != nil {
				liveness += " (ignoring the freeze)"
			}
		}
		if f := l.Status.Freeze; f != nil {
			liveness += "; " + f.Describe()
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", l.Spec.Target, holder, OrDash(l.Status.Token), since, liveness, waiting(l.Status.Waiters))
	}
	tw.Flush()
}

func waiting(ws []lock.Claim) string {
	if len(ws) == 0 {
		return "-"
	}
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = fmt.Sprintf("%d:%s%s", i+1, w.Identity, priorityNote(w))
	}
	return strings.Join(names, ",")
}

// priorityNote marks a waiter that is not plainly normal: "(high)", or
// "(low, aged to normal)" once ageing raised it.
func priorityNote(w lock.Claim) string {
	p := w.Priority.Level()
	switch {
	case w.Effective != "" && w.Effective != p:
		return fmt.Sprintf("(%s, aged to %s)", p, w.Effective)
	case p != lock.PriorityNormal:
		return "(" + string(p) + ")"
	}
	return ""
}

// OrDash is s, or "-" for an empty cell.
func OrDash(s string) string {
	if s == "" {
		return "-"
	}
	return s
}

// HistoryTable prints the holds newest first, with times as ages.
func HistoryTable(w io.Writer, h *lock.History, now time.Time) {
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "HOLDER\tPOD\tFROM\tUNTIL\tHELD\tENDED")
	ago := func(t time.Time) string { return term.HumanDuration(now.Sub(t)) + " ago" }
	if c := h.Holder; c != nil {
		fmt.Fprintf(tw, "%s\t%s\t%s\t-\t%s\tholding\n", c.Identity, podOf(c.Pod), ago(c.Since.Time), term.HumanDuration(now.Sub(c.Since.Time)))
	}
	for _, e := range h.Entries {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\n", e.Identity, podOf(e.Pod), ago(e.Since.Time), ago(e.Until.Time),
			term.HumanDuration(e.Until.Sub(e.Since.Time)), describeEnding(e))
	}
	tw.Flush()
}

func podOf(p *lock.PodRef) string {
	if p == nil {
		return "-"
	}
	return p.String()
}

// describeEnding is how a hold ended, and whether it was taken in spite of
// a deploy freeze.
func describeEnding(e lock.HistoryEntry) string {
	if e.IgnoredFreeze != "" {
		return e.Describe() + " (took the lock in spite of a freeze, --ignore-freeze)"
	}
	return e.Describe()
}

// ClusterTable prints the build clusters' reachability, by alias, with
// how long each has been in its state.
func ClusterTable(w io.Writer, st map[string]scheduler.ClusterStatus, now time.Time) error {
	aliases := make([]string, 0, len(st))
	for a := range st {
		aliases = append(aliases, a)
	}
	sort.Strings(aliases)
	tw := tabwriter.NewWriter(w, 0, 8, 3, ' ', 0)
	fmt.Fprintln(tw, "CLUSTER\tSTATE\tSINCE\tPOD NAMESPACE\tMESSAGE")
	for _, a := range aliases {
		s := st[a]
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\n", a, s.State, term.HumanDuration(now.Sub(s.Since.Time)), s.Namespace, OrDash(s.Message))
	}
	return tw.Flush()
}
