package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"

	"github.com/lockctl/lockctl/kube"
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

type freezeWindowsFile struct {
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

// ParseFreezeWindows reads the windows file format (FreezeWindowsKey):
// `windows:` and a list of FreezeWindow. An unknown field, a bad schedule,
// a duration that is not positive, a missing name or reason, and a name
// used twice make an entry broken; any broken entry makes the error a
// *WindowsError that names each (index, name, field, value, reason) and
// holds the windows that can be read.
func ParseFreezeWindows(data []byte) ([]FreezeWindow, error) {
	var f freezeWindowsFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, &WindowsError{Err: err}
	}
	var valid []FreezeWindow
	var broken []*WindowEntryError
	seen := map[string]bool{}
	for i, raw := range f.Windows {
		w, err := parseWindow(i+1, raw)
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

// parseWindow reads entry index of a windows file, field by field, so
// that an error names the field and the value.
func parseWindow(index int, raw json.RawMessage) (FreezeWindow, *WindowEntryError) {
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

// loadFreezeWindows reads the freeze windows of namespace from its
// FreezeWindowsName ConfigMap; none when it does not exist. A ConfigMap
// that cannot be parsed is a *WindowsError naming each broken entry:
// lockctl refuses to deploy on a freeze configuration it cannot read
// rather than ignore it.
func loadFreezeWindows(ctx context.Context, cms kube.ConfigMapsGetter, namespace string) ([]FreezeWindow, error) {
	cm, err := cms.ConfigMaps(namespace).Get(ctx, FreezeWindowsName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read freeze windows %s/%s: %w", namespace, FreezeWindowsName, err)
	}
	ws, err := ParseFreezeWindows([]byte(cm.Data[FreezeWindowsKey]))
	if we := (*WindowsError)(nil); errors.As(err, &we) {
		we.Namespace = namespace
	}
	return ws, err
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

// activeAt returns the freeze w makes at now, or nil: the latest start at
// or before now whose Duration has not passed, extended by every further
// start before it ends.
func (w *FreezeWindow) activeAt(now time.Time) *Freeze {
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

// windowFreeze is the freeze the windows make on target's lock at now, the
// one that lasts longest; nil when none does.
func windowFreeze(ws []FreezeWindow, target string, now time.Time) *Freeze {
	var out *Freeze
	for i := range ws {
		if !ws[i].applies(target) {
			continue
		}
		if f := ws[i].activeAt(now); f != nil && (out == nil || f.Until.After(out.Until.Time)) {
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
		if f := windowFreeze(ws, target, t); f != nil && f.Until.After(end) {
			end = f.Until.Time
		}
		if !end.After(t) {
			break
		}
		t = end
	}
	return t
}

// effectiveFreeze is the freeze that holds target's lock at now, as every
// view and message shows it: of the freezes in force at now (own, the
// record's, and the windows' ws), the one that lasts longest (own on a
// tie), with Until set to when the lock really thaws (thawsAt). A copy;
// nil when nothing freezes the lock at now.
func effectiveFreeze(own *Freeze, ws []FreezeWindow, target string, now time.Time) *Freeze {
	var f *Freeze
	if own.ActiveAt(now) {
		cp := *own
		f = &cp
	}
	if w := windowFreeze(ws, target, now); w != nil && (f == nil || w.Until.After(f.Until.Time)) {
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

// applyWindows freezes rec as the windows say at now, when no freeze of
// its own holds it: the window's freeze is written with the next write, so
// lockctl releases without freezes refuse the lock from then on. It
// reports whether it changed rec.
func (r *Record) applyWindows(ws []FreezeWindow, now time.Time) bool {
	if r.Freeze.ActiveAt(now) {
		return false
	}
	f := windowFreeze(ws, r.Target, now)
	if f == nil {
		return false
	}
	r.Freeze = f
	return true
}

// LoadFreezeWindows loads the freeze windows of the lock namespace from
// its FreezeWindowsName ConfigMap (see the function loadFreezeWindows),
// replacing any loaded before. A contender or a release during a window
// treats the lock as frozen and writes the window's freeze into the record
// with its next write; a window's freeze in the record that the windows no
// longer make (the ConfigMap changed) is dropped. A client of every
// namespace (metav1.NamespaceAll) loads none.
func (c *Client) LoadFreezeWindows(ctx context.Context) error {
	if c.namespace == metav1.NamespaceAll {
		return nil
	}
	ws, err := loadFreezeWindows(ctx, c.cms, c.namespace)
	if err != nil {
		return err
	}
	c.windows.set(ws)
	return nil
}

// SetFreezeWindows sets the freeze windows of the lock namespace, read by
// the caller (a dashboard that loads the windows of many namespaces); see
// LoadFreezeWindows. Safe to call while the client is in use.
func (c *Client) SetFreezeWindows(ws []FreezeWindow) { c.windows.set(ws) }

// FreezeWindows returns the freeze windows loaded, nil when none were
// loaded (only the freezes in the records count), empty when there are
// none.
func (c *Client) FreezeWindows() []FreezeWindow { return c.freezeWindows() }

// freezeWindows returns the freeze windows loaded, nil when none were. The
// slice is never changed in place: a new load replaces it.
func (c *Client) freezeWindows() []FreezeWindow { return c.windows.get() }

// windowCache keeps the freeze windows of a client, safe for concurrent
// use: every decision and view reads them, while a load (beside the first
// read of a lock, LoadFreezeWindows or SetFreezeWindows) replaces them. nil
// means not loaded.
type windowCache struct {
	mu sync.Mutex
	ws []FreezeWindow
	// loading is held by the one load under way, so that concurrent first
	// reads load the windows once.
	loading sync.Mutex
}

func (w *windowCache) get() []FreezeWindow {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ws
}

func (w *windowCache) loaded() bool { return w.get() != nil }

// set replaces the windows with a copy of ws; nil counts as loaded, none.
func (w *windowCache) set(ws []FreezeWindow) {
	cp := append([]FreezeWindow{}, ws...) // loaded: not nil
	w.mu.Lock()
	defer w.mu.Unlock()
	w.ws = cp
}

// load sets the windows from f unless they were loaded meanwhile, and
// reports whether it ran f. An error of f loads nothing.
func (w *windowCache) load(f func() ([]FreezeWindow, error)) (bool, error) {
	w.loading.Lock()
	defer w.loading.Unlock()
	if w.loaded() {
		return false, nil
	}
	ws, err := f()
	if err != nil {
		return true, err
	}
	w.set(ws)
	return true, nil
}

// FromWindow reports whether f was written from a freeze window.
func (f *Freeze) FromWindow() bool {
	return f != nil && f.By.Owner == "configmap" && f.By.Repo == FreezeWindowsName
}

// dropLapsedWindow removes from rec a freeze written from a window that
// the windows ws no longer make at now (the window was edited or
// removed); it reports whether it did.
func (r *Record) dropLapsedWindow(ws []FreezeWindow, now time.Time) bool {
	if !r.Freeze.FromWindow() || !r.Freeze.ActiveAt(now) {
		return false
	}
	if f := windowFreeze(ws, r.Target, now); f != nil && f.By == r.Freeze.By {
		return false
	}
	r.unfreeze(now)
	return true
}

// windowsPending reports whether the next read of a lock is to load the
// freeze windows beside it, in one round trip: they are not loaded yet
// (LoadFreezeWindows), and the client has one lock namespace.
func (c *Client) windowsPending() bool {
	return c.namespace != metav1.NamespaceAll && !c.windows.loaded()
}

// readWithWindows runs read, a read of locks; while the freeze windows are
// pending it reads them side by side with it, and keeps them. This is the
// one way a Client loads its windows besides LoadFreezeWindows and
// SetFreezeWindows: a caller never needs to load them before a read. An
// error reading the windows wins, naming what was read: without them no
// decision may be made.
func (c *Client) readWithWindows(ctx context.Context, what string, read func() error) error {
	if !c.windowsPending() {
		return read()
	}
	ran, err := c.windows.load(func() ([]FreezeWindow, error) {
		var (
			ws   []FreezeWindow
			werr error
			done = make(chan struct{})
		)
		go func() {
			defer close(done)
			ws, werr = loadFreezeWindows(ctx, c.cms, c.namespace)
		}()
		err := read()
		<-done
		if werr != nil {
			return nil, fmt.Errorf("read %s with its freeze windows: %w", what, werr)
		}
		return ws, err
	})
	switch {
	case err != nil:
		return err
	case !ran:
		// Loaded by another meanwhile: the locks are read alone.
		return read()
	}
	return nil
}
