// Package printers prints lockctl's objects for people and for scripts:
// tables laid out as kubectl lays them out, and objects as JSON or YAML.
package printers

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	"k8s.io/utils/clock"
	"sigs.k8s.io/yaml"

	"github.com/lockctl/lockctl/internal/base/human"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
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
	if items == nil {
		// No items is [] in JSON, as kubectl prints it, never null.
		items = []T{}
	}
	return map[string]any{"apiVersion": "v1", "kind": "List", "items": items}
}

// Options configure the printers of this package. The zero value is usable.
type Options struct {
	// AllNamespaces gives tables a namespace column (-A).
	AllNamespaces bool
	// Contexts gives lock tables a CONTEXT column first: the locks of
	// several clusters (--contexts).
	Contexts bool
	// Clock is what ages are counted to; nil means clock.RealClock{}.
	Clock clock.PassiveClock
}

// now returns the time ages are counted to.
func (o Options) now() time.Time {
	if o.Clock == nil {
		return clock.RealClock{}.Now()
	}
	return o.Clock.Now()
}

// NewJobPrinter returns the printer of jobs in flags' form on w: the
// table has a NAMESPACE column with o.AllNamespaces, ages count to now.
func NewJobPrinter(w io.Writer, flags *OutputFlags, o Options) *Printer[*job.Job] {
	namespaces, now := o.AllNamespaces, o.now
	return &Printer[*job.Job]{
		W: w, Flags: flags,
		Header: func(wide bool) []string {
			h := []string{"NAME", "JOB", "TYPE", "STATE", "AGE", "POD", "BUILD"}
			if wide {
				h = append(h, "CLUSTER", "REFS", "QUEUE", "REASON")
			}
			h = append(h, "DESCRIPTION")
			if namespaces {
				h = append([]string{"NAMESPACE"}, h...)
			}
			return h
		},
		Row: func(j *job.Job, wide bool) []string {
			age := "-"
			if st := j.Status.StartTime; st != nil {
				age = human.Duration(now().Sub(st.Time))
			}
			r := []string{j.Name, j.Spec.Job, string(j.Spec.Type), string(j.Status.State), age,
				OrDash(j.Status.PodName), OrDash(j.Status.BuildID)}
			if wide {
				r = append(r, j.ClusterAlias(), OrDash(refsString(j.Spec.Refs)), OrDash(j.Spec.Queue), OrDash(j.Status.Reason))
			}
			r = append(r, OrDash(j.Status.Description))
			if namespaces {
				r = append([]string{j.Namespace}, r...)
			}
			return r
		},
	}
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

// NewLockPrinter returns the printer of locks in flags' form on w: the
// table has the lock namespace first with o.AllNamespaces, ages count to
// now. The table's EST. WAIT is how long a contender that joined now
// would wait; -o wide adds its basis, the GitOps applications the holder
// deploys (APPS) and each waiter's own estimate.
func NewLockPrinter(w io.Writer, flags *OutputFlags, o Options) *Printer[lock.LockView] {
	namespaces := o.AllNamespaces
	return &Printer[lock.LockView]{
		W: w, Flags: flags,
		Header: func(wide bool) []string {
			h := []string{"TARGET", "HOLDER", "TOKEN", "SINCE", "LIVENESS", "EST. WAIT"}
			if wide {
				h = append(h, "BASIS", "APPS")
			}
			h = append(h, "WAITING")
			if namespaces {
				h = append([]string{"NAMESPACE"}, h...)
			}
			if o.Contexts {
				h = append([]string{"CONTEXT"}, h...)
			}
			return h
		},
		Row: func(l lock.LockView, wide bool) []string { return lockRow(l, o, wide) },
	}
}

// lockRow is the table row of l in the form of o, with -o wide's columns
// when wide.
func lockRow(l lock.LockView, o Options, wide bool) []string {
	namespaces, now := o.AllNamespaces, o.now()
	var r []string
	if l.Status.Invalid != "" {
		r = []string{OrDash(l.Spec.Target), "<invalid>", "-", "-", l.Status.Invalid, "-"}
		if wide {
			r = append(r, "-", "-")
		}
		r = append(r, "-")
	} else {
		holder, since, liveness, apps := "-", "-", l.Status.Liveness, ""
		if h := l.Status.Holder; h != nil {
			holder, since = h.Identity.String(), human.Duration(now.Sub(h.Since.Time))
			apps = record.Printable(strings.Join(h.Apps, ","))
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
		r = []string{l.Spec.Target, holder, OrDash(l.Status.Token), since, liveness, OrDash(l.Status.EstimatedWait)}
		if wide {
			r = append(r, OrDash(l.Status.Basis), OrDash(apps))
		}
		r = append(r, waiting(l.Status.Waiters, wide))
	}
	if namespaces {
		r = append([]string{l.Namespace}, r...)
	}
	if o.Contexts {
		r = append([]string{l.Spec.Context}, r...)
	}
	return r
}

// waiting is the queue in one cell: 1:acme/api@main#7(high),2:…; wide
// adds each waiter's estimate: 1:acme/api@main#7 (about 4 min).
func waiting(ws []record.Claim, wide bool) string {
	if len(ws) == 0 {
		return "-"
	}
	names := make([]string, len(ws))
	for i, w := range ws {
		names[i] = fmt.Sprintf("%d:%s%s", i+1, w.Identity, priorityNote(w))
		if wide && w.EstimatedWait != "" {
			names[i] += " (" + w.EstimatedWait + ")"
		}
	}
	return strings.Join(names, ",")
}

// priorityNote marks a waiter that is not plainly normal: "(high)", or
// "(low, aged to normal)" once ageing raised it.
func priorityNote(w record.Claim) string {
	p := w.Priority.Level()
	switch {
	case w.Effective != "" && w.Effective != p:
		return fmt.Sprintf("(%s, aged to %s)", p, w.Effective)
	case p != record.PriorityNormal:
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

// Holding is how the current hold "ended" in the rows of a history: it
// has not.
const Holding record.Ending = "holding"

// Holds are the rows of a history: the current hold (ended Holding, no
// until), then the past ones newest first.
func Holds(h *record.History) []record.HistoryEntry {
	var out []record.HistoryEntry
	if c := h.Holder; c != nil {
		out = append(out, record.HistoryEntry{Identity: c.Identity, Pod: c.Pod, Since: c.Since, Ended: Holding})
	}
	return append(out, h.Entries...)
}

// NewHoldPrinter returns the printer of a lock's holds (Holds) as table
// rows on w, with times as ages counted to now.
func NewHoldPrinter(w io.Writer, flags *OutputFlags, o Options) *Printer[record.HistoryEntry] {
	return &Printer[record.HistoryEntry]{
		W: w, Flags: flags,
		Header: func(bool) []string { return holdHeader },
		Row:    func(e record.HistoryEntry, _ bool) []string { return holdRow(e, o.now()) },
	}
}

var holdHeader = []string{"HOLDER", "POD", "FROM", "UNTIL", "HELD", "ENDED"}

// holdRow is the table row of the hold e, its times as ages counted to t.
func holdRow(e record.HistoryEntry, t time.Time) []string {
	ago := func(at time.Time) string { return human.Duration(t.Sub(at)) + " ago" }
	if e.Ended == Holding {
		return []string{e.Identity.String(), podOf(e.Pod), ago(e.Since.Time), "-", human.Duration(t.Sub(e.Since.Time)), "holding"}
	}
	return []string{e.Identity.String(), podOf(e.Pod), ago(e.Since.Time), ago(e.Until.Time),
		human.Duration(e.Until.Sub(e.Since.Time)), describeEnding(e)}
}

// ContextHold is a hold of a lock in one of several clusters (history
// --contexts): the kubeconfig context of its cluster, and the hold.
type ContextHold struct {
	Context string
	record.HistoryEntry
}

// NewContextHoldPrinter returns the printer of the holds of a lock in
// several clusters as table rows on w, CONTEXT first, as NewHoldPrinter
// prints those of one.
func NewContextHoldPrinter(w io.Writer, flags *OutputFlags, o Options) *Printer[ContextHold] {
	return &Printer[ContextHold]{
		W: w, Flags: flags,
		Header: func(bool) []string { return append([]string{"CONTEXT"}, holdHeader...) },
		Row: func(e ContextHold, _ bool) []string {
			return append([]string{e.Context}, holdRow(e.HistoryEntry, o.now())...)
		},
	}
}

func podOf(p *record.PodRef) string {
	if p == nil {
		return "-"
	}
	return p.String()
}

// describeEnding is how a hold ended, and whether it was taken in spite of
// a deploy freeze.
func describeEnding(e record.HistoryEntry) string {
	if e.IgnoredFreeze != "" {
		return e.Describe() + " (took the lock in spite of a freeze, --ignore-freeze)"
	}
	return e.Describe()
}

// ClusterRow is a row of the build clusters' table.
type ClusterRow struct {
	Alias                   string `json:"cluster"`
	scheduler.ClusterStatus `json:",inline"`
}

// ClusterRows are st's rows, by alias.
func ClusterRows(st map[string]scheduler.ClusterStatus) []ClusterRow {
	rows := make([]ClusterRow, 0, len(st))
	for a, s := range st {
		rows = append(rows, ClusterRow{Alias: a, ClusterStatus: s})
	}
	sort.Slice(rows, func(i, k int) bool { return rows[i].Alias < rows[k].Alias })
	return rows
}

// NewClusterPrinter returns the printer of the build clusters'
// reachability as table rows on w, with how long each has been in its
// state, counted to now.
func NewClusterPrinter(w io.Writer, flags *OutputFlags, o Options) *Printer[ClusterRow] {
	now := o.now
	return &Printer[ClusterRow]{
		W: w, Flags: flags,
		Header: func(bool) []string { return []string{"CLUSTER", "STATE", "SINCE", "POD NAMESPACE", "MESSAGE"} },
		Row: func(r ClusterRow, _ bool) []string {
			return []string{r.Alias, string(r.State), human.Duration(now().Sub(r.Since.Time)), r.Namespace, OrDash(r.Message)}
		},
	}
}

// PrintClusters prints the build clusters' status st (lockctl get
// clusters) in the form flags give.
func PrintClusters(w io.Writer, flags *OutputFlags, st map[string]scheduler.ClusterStatus, o Options) error {
	rows := ClusterRows(st)
	if flags.IsName() {
		// NOTE: a build cluster is no Kubernetes object: -o name names it
		// by its alias, as the rows do (cluster/default).
		if err := SortBy(rows, flags); err != nil {
			return err
		}
		for _, r := range rows {
			fmt.Fprintf(w, "cluster/%s\n", r.Alias)
		}
		return nil
	}
	if !flags.IsTable() {
		// NOTE: json, yaml and templates read the status by alias, as
		// -o json has always printed it ({.default.state}).
		return PrintObject(w, flags, st)
	}
	return NewClusterPrinter(w, flags, o).PrintAll(rows, true)
}

// Documents writes objs as a JSON List with format "json", else as YAML
// documents separated by "---", as kubectl apply -f reads them.
func Documents(w io.Writer, format string, objs []any) error {
	if format == "json" {
		list := struct {
			APIVersion string `json:"apiVersion"`
			Kind       string `json:"kind"`
			Items      []any  `json:"items"`
		}{"v1", "List", objs}
		if list.Items == nil {
			list.Items = []any{}
		}
		return Object(w, "json", list)
	}
	for i, obj := range objs {
		if i > 0 {
			fmt.Fprintln(w, "---")
		}
		if err := Object(w, "yaml", obj); err != nil {
			return err
		}
	}
	return nil
}

// Items writes items as JSON or YAML: one item as itself, as kubectl
// prints one object, more (or none) as a List (ListOf).
func Items[T any](w io.Writer, format string, items []T) error {
	if len(items) == 1 {
		return Object(w, format, items[0])
	}
	return Object(w, format, ListOf(items))
}
