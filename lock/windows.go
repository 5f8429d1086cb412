package lock

import (
	"context"
	"fmt"
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
	Windows []FreezeWindow `json:"windows"`
}

// ParseFreezeWindows reads the windows file format (FreezeWindowsKey):
// `windows:` and a list of FreezeWindow. Unknown fields, a bad schedule, a
// duration that is not positive, a missing name or reason, and a name used
// twice are errors naming the window.
func ParseFreezeWindows(data []byte) ([]FreezeWindow, error) {
	var f freezeWindowsFile
	if err := yaml.UnmarshalStrict(data, &f); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	for i := range f.Windows {
		w := &f.Windows[i]
		where := fmt.Sprintf("window %d", i+1)
		if w.Name != "" {
			where = fmt.Sprintf("window %q", w.Name)
		}
		switch {
		case w.Name == "":
			return nil, fmt.Errorf("%s: name is missing", where)
		case seen[w.Name]:
			return nil, fmt.Errorf("%s: the name is used twice", where)
		case w.Duration.Duration <= 0:
			return nil, fmt.Errorf("%s: duration must be positive, such as 8h", where)
		}
		seen[w.Name] = true
		if err := ValidateFreezeReason(w.Reason); err != nil {
			return nil, fmt.Errorf("%s: %w", where, err)
		}
		for _, t := range w.Targets {
			if t == "" {
				return nil, fmt.Errorf("%s: empty target", where)
			}
		}
		sched, err := cron.ParseStandard(w.Schedule)
		if err != nil {
			return nil, fmt.Errorf("%s: schedule %q: %w", where, w.Schedule, err)
		}
		w.sched = sched
	}
	return f.Windows, nil
}

// LoadFreezeWindows reads the freeze windows of namespace from its
// FreezeWindowsName ConfigMap; none when it does not exist. A ConfigMap
// that cannot be parsed is an error: lockctl refuses to deploy on a freeze
// configuration it cannot read rather than ignore it.
func LoadFreezeWindows(ctx context.Context, cms kube.ConfigMapsGetter, namespace string) ([]FreezeWindow, error) {
	cm, err := cms.ConfigMaps(namespace).Get(ctx, FreezeWindowsName, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		return nil, nil
	case err != nil:
		return nil, fmt.Errorf("read freeze windows %s/%s: %w", namespace, FreezeWindowsName, err)
	}
	ws, err := ParseFreezeWindows([]byte(cm.Data[FreezeWindowsKey]))
	if err != nil {
		return nil, fmt.Errorf("freeze windows %s/%s, key %s: %w; fix or delete that ConfigMap", namespace, FreezeWindowsName, FreezeWindowsKey, err)
	}
	return ws, nil
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
// its FreezeWindowsName ConfigMap (see the function LoadFreezeWindows),
// replacing any loaded before. A contender or a release during a window
// treats the lock as frozen and writes the window's freeze into the record
// with its next write; a window's freeze in the record that the windows no
// longer make (the ConfigMap changed) is dropped. A client of every
// namespace (metav1.NamespaceAll) loads none.
func (c *Client) LoadFreezeWindows(ctx context.Context) error {
	if c.namespace == metav1.NamespaceAll {
		return nil
	}
	ws, err := LoadFreezeWindows(ctx, c.cms, c.namespace)
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
	r.Freeze = nil
	return true
}
