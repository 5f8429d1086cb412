package record

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/robfig/cron/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// FreezeWindowsName is the ConfigMap of the lock namespace that holds the
// recurring freeze windows, under the key FreezeWindowsKey. Without it
// there are none. docs/adr/0024-freeze-windows.md has the format.
const (
	FreezeWindowsName = "lockctl-freeze-windows"
	FreezeWindowsKey  = "windows.yaml"
)

// FreezeWindow is a recurring deploy freeze: from every time Schedule
// fires, for Duration, the locks of Targets (every lock of the namespace
// when empty) are frozen with Reason.
type FreezeWindow struct {
	// Name tells the windows apart; it is the freeze's author in messages.
	Name string `json:"name"`
	// Schedule is a standard five-field cron schedule (minute hour
	// day-of-month month day-of-week, or a descriptor such as @daily), in
	// UTC unless it starts with CRON_TZ=<IANA zone>.
	Schedule string `json:"schedule"`
	// Duration is how long each freeze lasts; it must be positive.
	Duration metav1.Duration `json:"duration"`
	// Reason is shown to everyone who waits; it is required.
	Reason string `json:"reason"`
	// Targets are the namespaces whose locks the window freezes; empty
	// means every lock of the lock namespace.
	Targets []string `json:"targets,omitempty"`

	sched cron.Schedule
}

type FreezeWindowsFile struct {
	Windows []json.RawMessage `json:"windows"`
}

// windowFields are the fields of a window, in the order they are checked.
var windowFields = []string{"name", "schedule", "duration", "reason", "targets"}

// WindowEntryError is an entry of a freeze windows file that cannot be
// read: which entry, the field at fault, the value given and why it is
// refused.
type WindowEntryError struct {
	// Index is the entry's place in the list, from 1.
	Index int
	// Name is the entry's name; "" when it has none that can be read.
	Name string
	// Field is the field at fault; "" when the entry as a whole is.
	Field string
	// Value is the value given, as JSON; "" when the field is missing.
	Value string
	// Reason says what is wrong.
	Reason string
}

// Where names the entry: `window 2 ("nightly")`, or `window 2`.
func (e *WindowEntryError) Where() string {
	if e.Name != "" {
		return fmt.Sprintf("window %d (%q)", e.Index, e.Name)
	}
	return fmt.Sprintf("window %d", e.Index)
}

func (e *WindowEntryError) Error() string {
	switch {
	case e.Field == "":
		return fmt.Sprintf("%s: %s", e.Where(), e.Reason)
	case e.Value == "":
		return fmt.Sprintf("%s: %s: %s", e.Where(), e.Field, e.Reason)
	}
	return fmt.Sprintf("%s: %s %s: %s", e.Where(), e.Field, e.Value, e.Reason)
}

// WindowsError is a freeze windows file with entries that cannot be
// read (Entries), or that cannot be read at all (Err). Every lockctl that
// reads it refuses to take or hand over the namespace's locks until it is
// fixed: it cannot tell which locks the broken entries freeze.
type WindowsError struct {
	// Namespace is the lock namespace whose windows these are; "" when
	// they were not read from a ConfigMap.
	Namespace string
	// Err is why the file cannot be read at all; nil when only some
	// entries are broken.
	Err error
	// Entries are the broken entries, in the file's order.
	Entries []*WindowEntryError
	// Valid are the windows that can be read, in the file's order: what
	// a read-only view (status, the dashboard) still shows.
	Valid []FreezeWindow
}

func (e *WindowsError) Error() string {
	what := "key " + FreezeWindowsKey
	if e.Namespace != "" {
		what = fmt.Sprintf("freeze windows %s/%s, key %s", e.Namespace, FreezeWindowsName, FreezeWindowsKey)
	}
	if e.Err != nil {
		return fmt.Sprintf("%s: %v; fix or delete that ConfigMap", what, e.Err)
	}
	msgs := make([]string, len(e.Entries))
	for i, en := range e.Entries {
		msgs[i] = en.Error()
	}
	fix := "fix it in that ConfigMap"
	if n := e.Entries[0].Name; n != "" {
		fix = fmt.Sprintf("fix it in that ConfigMap, or remove it with lockctl freeze-windows remove %s", n)
	}
	return fmt.Sprintf("%s: %s; %s", what, strings.Join(msgs, "; "), fix)
}

// applies reports whether w freezes target's lock.
func (w *FreezeWindow) applies(target string) bool {
	if len(w.Targets) == 0 {
		return true
	}
	for _, t := range w.Targets {
		if t == target {
			return true
		}
	}
	return false
}

// ActiveAt returns the freeze w makes at now, or nil: the latest start at
// or before now whose Duration has not passed, extended by every further
// start before it ends.
func (w *FreezeWindow) ActiveAt(now time.Time) *Freeze {
	if w.sched == nil {
		return nil
	}
	now = now.UTC()
	start := w.sched.Next(now.Add(-w.Duration.Duration))
	if start.IsZero() || start.After(now) {
		return nil
	}
	end := start.Add(w.Duration.Duration)
	// NOTE: bounded, for a window that starts again before it ends: after
	// 100 restarts the freeze shows that end, and is judged again then.
	for last, i := start, 0; i < 100; i++ {
		next := w.sched.Next(last)
		if next.IsZero() || next.After(end) {
			break
		}
		last, end = next, next.Add(w.Duration.Duration)
	}
	return &Freeze{
		Reason: w.Reason,
		By:     Identity{Owner: "configmap", Repo: FreezeWindowsName, Branch: w.Name, Build: "0"},
		Since:  metav1.NewMicroTime(start),
		Until:  metav1.NewMicroTime(end),
	}
}

// ApplyWindows freezes rec as the windows say at now, when no freeze of
// its own holds it: the window's freeze is written with the next write, so
// lockctl releases without freezes refuse the lock from then on. It
// reports whether it changed rec.
func (r *Record) ApplyWindows(ws []FreezeWindow, now time.Time) bool {
	if r.Freeze.ActiveAt(now) {
		return false
	}
	f := WindowFreeze(ws, r.Target, now)
	if f == nil {
		return false
	}
	r.Freeze = f
	return true
}

// FromWindow reports whether f was written from a freeze window.
func (f *Freeze) FromWindow() bool {
	return f != nil && f.By.Owner == "configmap" && f.By.Repo == FreezeWindowsName
}

// DropLapsedWindow removes from rec a freeze written from a window that
// the windows ws no longer make at now (the window was edited or
// removed); it reports whether it did.
func (r *Record) DropLapsedWindow(ws []FreezeWindow, now time.Time) bool {
	if !r.Freeze.FromWindow() || !r.Freeze.ActiveAt(now) {
		return false
	}
	if f := WindowFreeze(ws, r.Target, now); f != nil && f.By == r.Freeze.By {
		return false
	}
	r.unfreeze(now)
	return true
}

// ParseFreezeWindows reads the windows file format (FreezeWindowsKey):
// `windows:` and a list of FreezeWindow. An unknown field, a bad schedule,
// a duration that is not positive, a missing name or reason, and a name
// used twice make an entry broken; any broken entry makes the error a
// *WindowsError that names each (index, name, field, value, reason) and
// holds the windows that can be read.
func ParseFreezeWindows(data []byte) ([]FreezeWindow, error) {
	var f FreezeWindowsFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, &WindowsError{Err: err}
	}
	var valid []FreezeWindow
	var broken []*WindowEntryError
	seen := map[string]bool{}
	for i, raw := range f.Windows {
		w, err := ParseWindow(i+1, raw)
		if err == nil && seen[w.Name] {
			err = &WindowEntryError{Index: i + 1, Name: w.Name, Field: "name", Value: strconv.Quote(w.Name), Reason: "the name is used twice"}
		}
		if err != nil {
			broken = append(broken, err)
			continue
		}
		seen[w.Name] = true
		valid = append(valid, w)
	}
	if len(broken) > 0 {
		return nil, &WindowsError{Entries: broken, Valid: valid}
	}
	return valid, nil
}

// ParseWindow reads entry index of a windows file, field by field, so
// that an error names the field and the value.
func ParseWindow(index int, raw json.RawMessage) (FreezeWindow, *WindowEntryError) {
	var w FreezeWindow
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(raw, &fields); err != nil {
		return w, &WindowEntryError{Index: index, Value: string(raw), Reason: "want a map of " + strings.Join(windowFields, ", ")}
	}
	// What can be read of it, for the error and for a list of the
	// entries; each field is checked below.
	for field, dst := range map[string]any{"name": &w.Name, "schedule": &w.Schedule, "reason": &w.Reason, "targets": &w.Targets} {
		if v, ok := fields[field]; ok {
			_ = json.Unmarshal(v, dst)
		}
	}
	bad := func(field, reason string) *WindowEntryError {
		return &WindowEntryError{Index: index, Name: w.Name, Field: field, Value: string(fields[field]), Reason: reason}
	}
	var unknown []string
	for k := range fields {
		if !slices.Contains(windowFields, k) {
			unknown = append(unknown, k)
		}
	}
	if len(unknown) > 0 {
		sort.Strings(unknown)
		return w, bad(unknown[0], "unknown field; a window has "+strings.Join(windowFields, ", "))
	}
	str := func(field string) (string, *WindowEntryError) {
		var v string
		if _, ok := fields[field]; !ok {
			return "", bad(field, "missing")
		}
		if err := json.Unmarshal(fields[field], &v); err != nil {
			return "", bad(field, "want a string")
		}
		return v, nil
	}
	var err *WindowEntryError
	if w.Name, err = str("name"); err != nil {
		return w, err
	}
	if w.Name == "" {
		return w, bad("name", "empty")
	}
	if w.Schedule, err = str("schedule"); err != nil {
		return w, err
	}
	sched, perr := cron.ParseStandard(w.Schedule)
	if perr != nil {
		return w, bad("schedule", perr.Error()+`; want a five-field cron schedule such as "0 22 * * *", or @daily`)
	}
	w.sched = sched
	d, err := str("duration")
	if err != nil {
		return w, err
	}
	if w.Duration.Duration, perr = time.ParseDuration(d); perr != nil || w.Duration.Duration <= 0 {
		return w, bad("duration", "want a positive duration such as 8h or 90m")
	}
	if w.Reason, err = str("reason"); err != nil {
		return w, err
	}
	if rerr := ValidateFreezeReason(w.Reason); rerr != nil {
		return w, bad("reason", rerr.Error())
	}
	if t, ok := fields["targets"]; ok && string(t) != "null" {
		if json.Unmarshal(t, &w.Targets) != nil {
			return w, bad("targets", "want a list of namespaces")
		}
		for _, t := range w.Targets {
			if t == "" {
				return w, bad("targets", "empty target")
			}
		}
	}
	return w, nil
}

// WindowFreeze is the freeze the windows make on target's lock at now, the
// one that lasts longest; nil when none does.
func WindowFreeze(ws []FreezeWindow, target string, now time.Time) *Freeze {
	var out *Freeze
	for i := range ws {
		if !ws[i].applies(target) {
			continue
		}
		if f := ws[i].ActiveAt(now); f != nil && (out == nil || f.Until.After(out.Until.Time)) {
			out = f
		}
	}
	return out
}

// thawsAt is when target's lock stops being frozen, judged at t: t itself
// when neither own (the record's freeze; nil for none) nor a window ws
// freezes it then, else the end of the last of the freezes that overlap or
// follow one another with no gap, own and windows alike, windows chained
// back to back included. Every place that says until when a lock is
// frozen asks this function.
func thawsAt(own *Freeze, ws []FreezeWindow, target string, t time.Time) time.Time {
	// NOTE: bounded: windows back to back could chain for ever; after 50
	// freezes the lock is shown frozen until the end of the 50th, and is
	// judged again then.
	for i := 0; i < 50; i++ {
		end := t
		if own.ActiveAt(t) {
			end = own.Until.Time
		}
		if f := WindowFreeze(ws, target, t); f != nil && f.Until.After(end) {
			end = f.Until.Time
		}
		if !end.After(t) {
			break
		}
		t = end
	}
	return t
}

// EffectiveFreeze is the freeze that holds target's lock at now, as every
// view and message shows it: of the freezes in force at now (own, the
// record's, and the windows' ws), the one that lasts longest (own on a
// tie), with Until set to when the lock really thaws (thawsAt). A copy;
// nil when nothing freezes the lock at now.
func EffectiveFreeze(own *Freeze, ws []FreezeWindow, target string, now time.Time) *Freeze {
	var f *Freeze
	if own.ActiveAt(now) {
		cp := *own
		f = &cp
	}
	if w := WindowFreeze(ws, target, now); w != nil && (f == nil || w.Until.After(f.Until.Time)) {
		if f != nil {
			// The contenders that took the lock in spite of the freeze.
			w.Overrides = f.Overrides
		}
		f = w
	}
	if f == nil {
		return nil
	}
	f.Until = metav1.NewMicroTime(thawsAt(own, ws, target, now))
	return f
}

// Next returns the next freeze w makes that is not over at now: the one in
// force, or else the next to start; nil when the schedule never fires again
// (or w was not parsed by ParseFreezeWindows).
func (w *FreezeWindow) Next(now time.Time) *Freeze {
	if f := w.ActiveAt(now); f != nil {
		return f
	}
	if w.sched == nil {
		return nil
	}
	start := w.sched.Next(now.UTC())
	if start.IsZero() {
		return nil
	}
	return w.ActiveAt(start)
}
