package dashboard

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/watchlist"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/base/logutil"
	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
	"github.com/lockctl/lockctl/lock/record"
)

// Defaults of Options.
const (
	// DefaultRefresh is how often a snapshot is made when nothing changed:
	// the locks whose view depends on more than their ConfigMap and the
	// clock (a holder's pod, a wait estimate counting down, a break-glass
	// grant) are judged again, and every page gets the server's time. The
	// entries of the others are not: their words that count with the
	// clock ("expires in 4m") are worded by the page, and a change of
	// their state with time (an expiry, a freeze ending, a waiter's
	// priority ageing, a freeze window starting) is judged at its moment
	// (their due time).
	DefaultRefresh = 15 * time.Second
	// DefaultMaxJobs is how many job records the page shows, newest first.
	DefaultMaxJobs = 200
	// DefaultRequestTimeout bounds each read a snapshot makes (the pod of a
	// holder, for its liveness).
	DefaultRequestTimeout = 5 * time.Second
)

// firstSnapshotWait bounds how long the first snapshot waits for the
// locks to be listed.
const firstSnapshotWait = 5 * time.Second

// Options configure a Hub.
type Options struct {
	// Base is the path under which Handler's pages are served (a
	// dashboard of several clusters serves each under /c/CONTEXT, with
	// http.StripPrefix): the pages' links and the script's requests start
	// with it. "" serves them at the root.
	Base string
	// Context is the kubeconfig context the page shows, named in its
	// header in a dashboard of several clusters; "" names none.
	Context string
	// Jobs is the store of the job records to show; nil shows no jobs.
	Jobs *job.Store
	// PodsFor returns the pods client and pod namespace of a job's build
	// cluster, for its log page; nil means no log pages.
	PodsFor func(j *job.Job) (kube.PodsGetter, string, error)
	// Clock stamps snapshots and ages; nil means Locks.Clock.
	Clock clock.Clock
	// Log receives what the hub does; nil discards it.
	Log *slog.Logger
	// Refresh is how often a snapshot is made when nothing changed; 0 means
	// DefaultRefresh.
	Refresh time.Duration
	// MaxJobs bounds the jobs shown, newest first; 0 means DefaultMaxJobs.
	MaxJobs int
	// RequestTimeout bounds each read a snapshot makes; 0 means
	// DefaultRequestTimeout.
	RequestTimeout time.Duration
	// Metrics, when set, is served at /metrics (the locks' Prometheus
	// metrics), behind the page's checks of the Host.
	Metrics http.Handler
}

// Hub keeps the watches of one process and the snapshot made from them,
// and hands it to every subscriber.
type Hub struct {
	locks *lock.Client
	cms   kube.ConfigMapsGetter
	o     Options

	kick chan struct{}
	// logSlots bounds the log streams open at once (MaxLogStreams).
	logSlots chan struct{}

	mu      sync.Mutex
	current *published
	subs    map[chan *published]struct{}
	jobs    map[string]*job.Job
	windows map[string][]record.FreezeWindow // by namespace
	// problems are the watches' last errors, by watch.
	problems map[string]string
	lockCMs  cache.Store
	synced   func() bool
	seq      uint64

	// views are the lock entries of the last snapshot by ConfigMap
	// namespace, name and UID,
	// made only by snapshot's goroutine: an entry is made again when its
	// ConfigMap changed, its due time came, or, for a volatile one, at a
	// refresh; so a job changing often does not read holder pods again
	// each time, and a refresh sends no entry whose state did not change.
	views map[string]cachedView
	// windowsChanged makes the next snapshot make every entry again.
	windowsChanged bool
	// windowsDue is when a freeze window's freeze starts or ends next,
	// zero for never: the snapshot at it makes every entry again. Used by
	// snapshot's goroutine only.
	windowsDue time.Time
}

// minDueGap is the least time between two snapshots made for due times:
// locks expiring a moment apart are judged in one snapshot, not one each.
const minDueGap = 500 * time.Millisecond

// cachedView is a lock's entry as made from one version of its ConfigMap.
type cachedView struct {
	rv    string
	at    time.Time
	show  bool
	entry LockEntry
	// raw is entry's JSON, encoded once for every snapshot it is in.
	raw json.RawMessage
	// due is when the entry's state next changes with the clock alone
	// (dueOf), zero for never; volatile is set when its view depends on
	// more than its ConfigMap and the clock, judged again at each refresh.
	due      time.Time
	volatile bool
}

// NewHub returns a hub over the locks of locks' namespace (every
// namespace for a client of metav1.NamespaceAll), read through cms, the
// ConfigMaps client of the same cluster. Run starts it.
func NewHub(locks *lock.Client, cms kube.ConfigMapsGetter, o Options) *Hub {
	if o.Clock == nil {
		o.Clock = locks.Clock()
	}
	if o.Refresh <= 0 {
		o.Refresh = DefaultRefresh
	}
	if o.MaxJobs <= 0 {
		o.MaxJobs = DefaultMaxJobs
	}
	if o.RequestTimeout <= 0 {
		o.RequestTimeout = DefaultRequestTimeout
	}
	o.Log = logutil.OrDiscard(o.Log)
	return &Hub{
		locks:    locks,
		cms:      cms,
		o:        o,
		kick:     make(chan struct{}, 1),
		logSlots: make(chan struct{}, MaxLogStreams),
		subs:     map[chan *published]struct{}{},
		jobs:     map[string]*job.Job{},
		windows:  map[string][]record.FreezeWindow{},
		problems: map[string]string{},
		synced:   func() bool { return false },
		views:    map[string]cachedView{},
	}
}

// Run starts the watches and makes a snapshot after every change, until
// ctx ends. The first snapshot is made once the locks are listed.
func (h *Hub) Run(ctx context.Context) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	defer wg.Wait()

	ns := h.locks.Namespace()
	lockInf := h.informer("locks", ns, labels.SelectorFromSet(labels.Set{
		record.ManagedByLabel: record.ManagedByValue, record.KindLabel: record.KindValue,
	}).String(), "")
	winInf := h.informer("freeze windows", ns, "", fields.OneTermEqualSelector("metadata.name", record.FreezeWindowsName).String())
	_, _ = winInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { h.setWindows(obj, false) },
		UpdateFunc: func(_, obj any) { h.setWindows(obj, false) },
		DeleteFunc: func(obj any) { h.setWindows(obj, true) },
	})
	h.mu.Lock()
	h.lockCMs = lockInf.GetStore()
	h.synced = lockInf.HasSynced
	h.mu.Unlock()
	for _, inf := range []cache.SharedIndexInformer{lockInf, winInf} {
		wg.Add(1)
		go func() {
			defer wg.Done()
			inf.RunWithContext(ctx)
		}()
	}
	if h.o.Jobs != nil {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h.watchJobs(ctx)
		}()
	}
	// NOTE: the first snapshot waits a little for the lists, so that a
	// page opened at start does not show "no locks" for a moment; a list
	// that takes longer (or is refused) is shown as a problem instead.
	stop := make(chan struct{})
	t0 := h.o.Clock.NewTimer(firstSnapshotWait)
	go func() {
		defer t0.Stop()
		select {
		case <-ctx.Done():
		case <-t0.C():
		}
		close(stop)
	}()
	cache.WaitForCacheSync(stop, lockInf.HasSynced, winInf.HasSynced)
	if ctx.Err() != nil {
		return nil
	}
	h.Kick()
	t := h.o.Clock.NewTimer(h.o.Refresh)
	defer t.Stop()
	var due clock.Timer
	defer func() {
		if due != nil {
			due.Stop()
		}
	}()
	for {
		var dueC <-chan time.Time
		if due != nil {
			dueC = due.C()
		}
		refresh := false
		select {
		case <-ctx.Done():
			return nil
		case <-h.kick:
		case <-t.C():
			t.Reset(h.o.Refresh)
			refresh = true
		case <-dueC:
		}
		s, next := h.snapshot(ctx, refresh)
		h.publish(s)
		if due != nil {
			due.Stop()
			due = nil
		}
		if !next.IsZero() {
			due = h.o.Clock.NewTimer(max(next.Sub(h.o.Clock.Now()), minDueGap))
		}
	}
}

// Kick asks for a new snapshot now; kicks while one is made make one more.
func (h *Hub) Kick() {
	select {
	case h.kick <- struct{}{}:
	default:
	}
}

// listWatch lists and watches the ConfigMaps of namespace with the label
// and field selectors, as an informer takes them; a list that succeeds
// clears the problem of what.
func (h *Hub) listWatch(what, namespace, labelSel, fieldSel string) cache.ListerWatcher {
	cms := h.cms
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.LabelSelector, o.FieldSelector = labelSel, fieldSel
			list, err := cms.ConfigMaps(namespace).List(ctx, o)
			if err == nil {
				h.problem(what, nil)
			}
			return list, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.LabelSelector, o.FieldSelector = labelSel, fieldSel
			return cms.ConfigMaps(namespace).Watch(ctx, o)
		},
	}
	return cache.ToListWatcherWithWatchListSemantics(lw, noWatchList(watchlist.DoesClientNotSupportWatchListSemantics(cms)))
}

// noWatchList tells an informer whether the client cannot serve streaming
// lists (client-go's fakes cannot).
type noWatchList bool

func (n noWatchList) IsWatchListSemanticsUnSupported() bool { return bool(n) }

// informer returns an informer on the ConfigMaps listWatch selects whose
// every change kicks the hub and whose errors are shown on the page as
// what's problem.
func (h *Hub) informer(what, namespace, labelSel, fieldSel string) cache.SharedIndexInformer {
	inf := cache.NewSharedIndexInformerWithOptions(h.listWatch(what, namespace, labelSel, fieldSel), &corev1.ConfigMap{}, cache.SharedIndexInformerOptions{})
	// NOTE: the page shows nothing of managedFields; at thousands of locks
	// they are megabytes the cache need not keep. They are left out of a
	// shallow copy, never cleared in place: a client may hand one object
	// to several watches and keep it (the fake clientset does).
	_ = inf.SetTransform(func(obj any) (any, error) {
		if cm, ok := obj.(*corev1.ConfigMap); ok && cm.ManagedFields != nil {
			out := *cm
			out.ManagedFields = nil
			return &out, nil
		}
		return obj, nil
	})
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { h.Kick() },
		UpdateFunc: func(any, any) { h.Kick() },
		DeleteFunc: func(any) { h.Kick() },
	})
	_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
		h.problem(what, err)
		h.Kick()
	})
	return inf
}

// problem records the last error of the watch of what; nil clears it.
func (h *Hub) problem(what string, err error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if err == nil {
		delete(h.problems, what)
		return
	}
	h.problems[what] = fmt.Sprintf("cannot watch %s: %v", what, err)
}

// setWindows keeps the freeze windows of the namespace of obj, a
// FreezeWindowsName ConfigMap.
func (h *Hub) setWindows(obj any, deleted bool) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj, deleted = d.Obj, true
	}
	cm, ok := obj.(*corev1.ConfigMap)
	if !ok || cm.Name != record.FreezeWindowsName {
		// NOTE: the watch selects that name; a client that does not
		// filter (a fake) must not have other ConfigMaps read as windows.
		return
	}
	var ws []record.FreezeWindow
	var err error
	if !deleted {
		ws, err = record.ParseFreezeWindows([]byte(cm.Data[record.FreezeWindowsKey]))
	}
	h.mu.Lock()
	if err != nil {
		// The broken entries are named; the windows that can be read are
		// shown (locking in that namespace refuses until it is fixed).
		ws = nil
		if we := (*record.WindowsError)(nil); errors.As(err, &we) {
			we.Namespace, ws = cm.Namespace, we.Valid
		}
		h.problems["windows "+cm.Namespace] = err.Error()
	} else {
		delete(h.problems, "windows "+cm.Namespace)
	}
	if deleted {
		delete(h.windows, cm.Namespace)
	} else {
		h.windows[cm.Namespace] = ws
	}
	h.windowsChanged = true
	h.mu.Unlock()
	h.Kick()
}

// watchJobs keeps h.jobs from the job store's watch until ctx ends,
// starting it again after an error.
func (h *Hub) watchJobs(ctx context.Context) {
	for ctx.Err() == nil {
		// NOTE: a new watch lists every record again; one deleted in
		// between must not stay on the page.
		h.mu.Lock()
		h.jobs = map[string]*job.Job{}
		h.mu.Unlock()
		err := h.o.Jobs.Watch(ctx, job.ListOptions{}, func(ev watch.EventType, j *job.Job) error {
			h.mu.Lock()
			delete(h.problems, "jobs")
			if ev == watch.Deleted {
				delete(h.jobs, j.Name)
			} else {
				h.jobs[j.Name] = j
			}
			h.mu.Unlock()
			h.Kick()
			return nil
		})
		if ctx.Err() != nil {
			return
		}
		h.problem("jobs", err)
		h.Kick()
		select {
		case <-ctx.Done():
		case <-h.o.Clock.After(time.Second):
		}
	}
}

// Subscribe returns a channel that gets the server-sent events of one
// page's stream (/events), each framed whole: the current snapshot at once
// (when there is one), then each newer one as an update of the one before
// it on this stream, or whole when it is not smaller (publish). A slow
// reader misses snapshots, never the latest: the snapshot after one it
// missed comes whole. cancel ends the subscription.
func (h *Hub) Subscribe() (events <-chan []byte, cancel func()) {
	ch := make(chan *published, 1)
	out := make(chan []byte)
	h.mu.Lock()
	h.subs[ch] = struct{}{}
	if h.current != nil {
		ch <- h.current
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() {
		defer close(out)
		var sent uint64
		for {
			select {
			case <-done:
				return
			case p := <-ch:
				ev := p.update
				if sent == 0 || ev == nil || p.base != sent {
					var err error
					if _, ev, err = p.encoded(); err != nil {
						h.o.Log.Error("cannot encode the dashboard's snapshot", "err", err)
						continue
					}
				}
				select {
				case out <- ev:
					sent = p.snap.Seq
				case <-done:
					return
				}
			}
		}
	}()
	var once sync.Once
	return out, func() {
		once.Do(func() {
			h.mu.Lock()
			delete(h.subs, ch)
			h.mu.Unlock()
			close(done)
		})
	}
}

// Current returns the latest snapshot, nil before the first.
func (h *Hub) Current() *Snapshot {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.current == nil {
		return nil
	}
	return h.current.snap
}

// Subscribers returns how many subscriptions are open.
func (h *Hub) Subscribers() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.subs)
}

// publish makes s the current snapshot and hands it to every subscriber,
// replacing one it has not taken yet.
func (h *Hub) publish(s *Snapshot) {
	h.mu.Lock()
	prev := h.current
	h.mu.Unlock()
	p, err := newPublished(s, prev)
	if err != nil {
		h.o.Log.Error("cannot encode the dashboard's snapshot", "err", err)
		return
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	h.current = p
	for ch := range h.subs {
		select {
		case <-ch:
		default:
		}
		ch <- p
	}
}

// snapshot makes a snapshot of what the watches hold now, and returns
// when the next of its entries (or a freeze window) is due to change with
// the clock, zero for never. A refresh judges the volatile entries again
// too.
func (h *Hub) snapshot(ctx context.Context, refresh bool) (*Snapshot, time.Time) {
	h.mu.Lock()
	h.seq++
	s := &Snapshot{
		Seq:           h.seq,
		LockNamespace: h.locks.Namespace(),
		Locks:         []LockEntry{},
		Windows:       []Window{},
		Jobs:          []JobEntry{},
	}
	if h.o.Jobs != nil {
		s.JobNamespace = h.o.Jobs.Namespace()
		s.ShowJobs = true
	}
	var cms []*corev1.ConfigMap
	if h.lockCMs != nil {
		for _, obj := range h.lockCMs.List() {
			if cm, ok := obj.(*corev1.ConfigMap); ok {
				cms = append(cms, cm)
			}
		}
	}
	jobs := make([]*job.Job, 0, len(h.jobs))
	for _, j := range h.jobs {
		jobs = append(jobs, j)
	}
	windows := make(map[string][]record.FreezeWindow, len(h.windows))
	for ns, ws := range h.windows {
		windows[ns] = ws
	}
	for _, p := range h.problems {
		s.Problems = append(s.Problems, p)
	}
	now := h.o.Clock.Now()
	if h.windowsChanged || !h.windowsDue.IsZero() && !now.Before(h.windowsDue) {
		// NOTE: a window's freeze starting or ending freezes or thaws
		// the locks it names, judged in their entries.
		h.views, h.windowsChanged = map[string]cachedView{}, false
	}
	if !h.synced() && len(h.problems) == 0 {
		s.Problems = append(s.Problems, "the locks are still being listed")
	}
	h.mu.Unlock()
	sort.Strings(s.Problems)

	s.Now = metav1.NewMicroTime(now)
	if ns := h.locks.Namespace(); ns != metav1.NamespaceAll {
		// NOTE: only this run of Snapshot sets the hub's own client's
		// windows, so the views judge freezes as status does.
		h.locks.SetFreezeWindows(windows[ns])
	}
	sort.Slice(cms, func(i, k int) bool {
		if cms[i].Namespace != cms[k].Namespace {
			return cms[i].Namespace < cms[k].Namespace
		}
		return cms[i].Name < cms[k].Name
	})
	views := make(map[string]cachedView, len(cms))
	var next time.Time
	for _, cm := range cms {
		// NOTE: keyed by name and UID: a lock deleted and made again
		// under its name is another lock, and a client that sets no UID
		// (a fake clientset) still tells locks apart.
		key := cm.Namespace + "/" + cm.Name + "/" + string(cm.UID)
		v, ok := h.views[key]
		if !ok || v.rv != cm.ResourceVersion || now.Before(v.at) ||
			!v.due.IsZero() && !now.Before(v.due) || refresh && v.volatile {
			v = h.view(ctx, cm, now)
		}
		views[key] = v
		if v.show {
			s.Locks = append(s.Locks, v.entry)
			s.locksJSON = append(s.locksJSON, v.raw)
		}
		next = earliest(next, v.due)
	}
	h.views = views
	s.Windows = upcomingWindows(windows, now)
	h.windowsDue = time.Time{}
	for _, w := range s.Windows {
		at := w.Start.Time
		if w.Active {
			at = w.End.Time
		}
		h.windowsDue = earliest(h.windowsDue, at)
	}
	s.Jobs = jobEntries(jobs, h.o.MaxJobs)
	s.JobsTotal = len(jobs)
	return s, earliest(next, h.windowsDue)
}

// earliest returns the earlier of a and b, zero meaning never.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || !b.IsZero() && b.Before(a) {
		return b
	}
	return a
}

// dueOf returns when the view l, judged at now, next changes with the
// clock alone, zero for never: the holder's expiry while it lives, the end
// of a freeze, the next step of a waiter's priority ageing. volatile is set
// for a view that depends on more than its ConfigMap and the clock's
// steps: a holder's pod (read, not watched), a wait estimate that counts
// down while the holder holds, a break-glass grant (its end is not in the
// view); such a view is judged again at each refresh.
func dueOf(l *lock.LockView, now time.Time) (due time.Time, volatile bool) {
	st := &l.Status
	at := func(t time.Time) {
		if t.After(now) {
			due = earliest(due, t)
		}
	}
	if h := st.Holder; h != nil {
		switch {
		case h.Pod != nil:
			volatile = true
		case h.Expires != nil && st.Alive:
			at(h.Expires.Time)
		}
	}
	estimates := st.EstimatedWait != ""
	for i := range st.Waiters {
		w := &st.Waiters[i]
		estimates = estimates || w.EstimatedWait != ""
		if w.EffectivePriority(now) == record.PriorityHigh {
			continue
		}
		// The effective priority rises one level at each PriorityAgeing
		// waited.
		steps := max(now.Sub(w.Since.Time), 0) / record.PriorityAgeing
		at(w.Since.Add((steps + 1) * record.PriorityAgeing))
	}
	if f := st.Freeze; f != nil {
		at(f.Until.Time)
	}
	if estimates && st.Alive || st.BreakGlass != "" {
		volatile = true
	}
	return due, volatile
}

// view makes the entry of the lock cm is, at now.
func (h *Hub) view(ctx context.Context, cm *corev1.ConfigMap, now time.Time) cachedView {
	v := cachedView{rv: cm.ResourceVersion, at: now}
	rctx, cancel := context.WithTimeout(ctx, h.o.RequestTimeout)
	l, show := h.locks.ViewOf(rctx, cm)
	cancel()
	hist, err := lock.HistoryOf(cm)
	if !show && err != nil {
		return v
	}
	if !show {
		// A free lock kept for its history, or left free by an unfreeze
		// or a waiter that gave up: shown free, as status shows it by
		// name, not gone from the page.
		l = h.locks.FreeLockView(hist.Target)
		l.Namespace, l.Name = cm.Namespace, cm.Name
	}
	v.show = true
	v.entry = LockEntry{Lock: l, History: []record.HistoryEntry{}}
	if err == nil {
		// NOTE: the page shows the last lock.KeptHistory holds, as it did
		// before the record kept more: lockctl history and stats read the
		// rest.
		v.entry.History = hist.Entries[:min(len(hist.Entries), record.KeptHistory)]
	}
	v.due, v.volatile = dueOf(&v.entry.Lock, now)
	if hd := l.Status.Holder; hd != nil && hd.Pod == nil && hd.Expires != nil && l.Status.Invalid == "" {
		// Worded by the page from the expiry (LockEntry.Expires).
		exp := *hd.Expires
		v.entry.Expires, v.entry.Lock.Status.Liveness = &exp, ""
	}
	// NOTE: an entry that cannot be encoded (none can: views are plain
	// data) is encoded with the snapshot, which logs the error.
	v.raw, _ = json.Marshal(&v.entry)
	return v
}

// upcomingWindows lists each window's freeze in force or next to come,
// soonest first.
func upcomingWindows(byNS map[string][]record.FreezeWindow, now time.Time) []Window {
	out := []Window{}
	for ns, ws := range byNS {
		for i := range ws {
			w := &ws[i]
			f := w.Next(now)
			if f == nil {
				continue
			}
			out = append(out, Window{
				Namespace: ns, Name: w.Name, Reason: w.Reason, Targets: w.Targets,
				Schedule: w.Schedule, Start: metav1.NewTime(f.Since.Time), End: metav1.NewTime(f.Until.Time),
				Active: !f.Since.After(now),
			})
		}
	}
	sort.Slice(out, func(i, k int) bool {
		if !out[i].Start.Equal(&out[k].Start) {
			return out[i].Start.Before(&out[k].Start)
		}
		return out[i].Namespace+"/"+out[i].Name < out[k].Namespace+"/"+out[k].Name
	})
	return out
}

// jobEntries returns the newest max jobs, newest first.
func jobEntries(jobs []*job.Job, max int) []JobEntry {
	job.SortByStart(jobs)
	out := []JobEntry{}
	for i := len(jobs) - 1; i >= 0 && len(out) < max; i-- {
		out = append(out, newJobEntry(jobs[i]))
	}
	return out
}

// ErrNoJob is returned for a job the hub does not know.
var ErrNoJob = errors.New("job not found")

// job returns the job record called name as last watched.
func (h *Hub) job(name string) (*job.Job, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	j, ok := h.jobs[name]
	if !ok {
		return nil, ErrNoJob
	}
	return j, nil
}
