package notify

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/http"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/base/human"
	"github.com/lockctl/lockctl/internal/base/logutil"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock/record"
	"github.com/lockctl/lockctl/stats"
)

// The kinds of events, as --notify-events names them; the CloudEvent type
// is TypePrefix + kind.
const (
	KindTurn       = "turn"
	KindRelease    = "release"
	KindOverdue    = "overdue"
	KindFreeze     = "freeze"
	KindBreakGlass = "break-glass"
	// TypePrefix begins every CloudEvent type: dev.lockctl.lock.turn.
	TypePrefix = "dev.lockctl.lock."
)

// Kinds lists every kind of event.
func Kinds() []string {
	return []string{KindTurn, KindRelease, KindOverdue, KindFreeze, KindBreakGlass}
}

// The body formats.
const (
	FormatCloudEvents = "cloudevents"
	FormatSlack       = "slack"
)

// Defaults of Options.
const (
	DefaultFreezeAhead = 15 * time.Minute
	DefaultAttempts    = 5
	DefaultBackoff     = time.Second
	DefaultCheckEvery  = 30 * time.Second
	// DefaultRequestTimeout bounds each call of the webhook.
	DefaultRequestTimeout = 10 * time.Second
)

var _ stats.Observer = (*Notifier)(nil)

// Options configure a Notifier.
type Options struct {
	// URL is the webhook's; required.
	URL string
	// Format is FormatCloudEvents (the default, for "") or FormatSlack.
	Format string
	// Kinds are the kinds of events sent; nil means every kind.
	Kinds []string
	// FreezeAhead is how long before a freeze window starts it is
	// announced; 0 means DefaultFreezeAhead.
	FreezeAhead time.Duration
	// Windows returns the freeze windows of the lock namespace, read again
	// at each check; nil means no freeze events.
	Windows func(ctx context.Context) ([]record.FreezeWindow, error)
	// Attempts is how many times a delivery is tried; 0 means
	// DefaultAttempts. Backoff is the wait after the first failure,
	// doubled after each; 0 means DefaultBackoff.
	Attempts int
	Backoff  time.Duration
	// CheckEvery is how often holds past their time and freezes to come
	// are looked for; 0 means DefaultCheckEvery.
	CheckEvery time.Duration
	// Replica names this process in the marks (its pod's name); "" is
	// "lockctl".
	Replica string
	// Client calls the webhook; nil means one whose requests time out
	// after DefaultRequestTimeout.
	Client *http.Client
	// Clock is the lock clock: it judges overdue holds and freezes; nil
	// means clock.RealClock.
	Clock clock.WithTicker
	// Log receives what the notifier does; nil discards it.
	Log *slog.Logger
	// Handled, when set, is told of each event once this replica is done
	// with it: delivered, given up, or found marked by another replica
	// (tests).
	Handled func(e Event, outcome Outcome)
}

// Outcome is what became of an event in one replica.
type Outcome string

// The outcomes of an event.
const (
	Delivered Outcome = "delivered"
	Failed    Outcome = "failed"
	// Elsewhere: another replica had marked it.
	Elsewhere Outcome = "elsewhere"
)

// Event is one notification.
type Event struct {
	// ID is the same in every replica that sees the change.
	ID string `json:"id"`
	// Kind is one of Kinds.
	Kind string `json:"-"`
	// Namespace is the lock namespace, Target the lock's (or, for a
	// freeze, the window's name).
	Namespace, Target string `json:"-"`
	// Time is when it happened (record time).
	Time time.Time `json:"-"`
	// Text says it for people (the Slack body).
	Text string `json:"-"`
	// Data is the CloudEvent's data.
	Data map[string]any `json:"-"`
}

// Notifier turns the changes of the locks it observes into webhook calls.
type Notifier struct {
	marks     *marks
	namespace string
	o         Options
	queue     chan Event

	mu    sync.Mutex
	locks map[string]*lockState
	// freezes are the freezes announced, by window and start.
	freezes map[string]bool
}

// lockState is what the Notifier remembers of a lock between versions.
type lockState struct {
	target  string
	rec     *record.Record
	seen    map[string]bool
	grants  map[string]bool
	holder  string
	overdue string // the hold (claim) told overdue
}

// New returns a Notifier for the locks of namespace, marking its events in
// that namespace's MarksName ConfigMap with cms.
func New(cms kube.ConfigMapsGetter, namespace string, o Options) *Notifier {
	if o.Format == "" {
		o.Format = FormatCloudEvents
	}
	if o.Kinds == nil {
		o.Kinds = Kinds()
	}
	if o.FreezeAhead == 0 {
		o.FreezeAhead = DefaultFreezeAhead
	}
	if o.Attempts == 0 {
		o.Attempts = DefaultAttempts
	}
	if o.Backoff == 0 {
		o.Backoff = DefaultBackoff
	}
	if o.CheckEvery == 0 {
		o.CheckEvery = DefaultCheckEvery
	}
	if o.Replica == "" {
		o.Replica = "lockctl"
	}
	if o.Client == nil {
		o.Client = &http.Client{Timeout: DefaultRequestTimeout}
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	o.Log = logutil.OrDiscard(o.Log)
	return &Notifier{
		marks: &marks{cms: cms, namespace: namespace, replica: o.Replica, clk: o.Clock}, namespace: namespace, o: o,
		queue: make(chan Event, 1000), locks: map[string]*lockState{}, freezes: map[string]bool{},
	}
}

// eventID is the ID of the event of kind on target whose key is key.
func eventID(kind, namespace, target, key string) string {
	sum := sha256.Sum256([]byte(kind + "\x00" + namespace + "\x00" + target + "\x00" + key))
	return hex.EncodeToString(sum[:16])
}

// emit queues e unless its kind is not sent; a full queue drops it, said
// in the log.
func (n *Notifier) emit(e Event) {
	if !slices.Contains(n.o.Kinds, e.Kind) {
		return
	}
	e.Namespace = n.namespace
	e.ID = eventID(e.Kind, e.Namespace, e.Target, e.ID)
	select {
	case n.queue <- e:
	default:
		n.o.Log.Warn(fmt.Sprintf("notification queue full: %s event dropped", e.Kind), "lock", e.Target)
	}
}

func historyKey(e record.HistoryEntry) string {
	return fmt.Sprintf("%s|%s|%s|%s", e.Identity, e.Since.UTC().Format(time.RFC3339Nano), e.Until.UTC().Format(time.RFC3339Nano), e.Ended)
}

// ObserveLock implements stats.Observer: the changes since the lock's last
// version become events, unless it is seen first in the first list.
func (n *Notifier) ObserveLock(cm *corev1.ConfigMap, initial bool) {
	rec, err := record.Decode(cm)
	if err != nil || cm.Namespace != n.namespace {
		return
	}
	n.mu.Lock()
	defer n.mu.Unlock()
	s, known := n.locks[cm.Name]
	if !known {
		s = &lockState{target: rec.Target, seen: map[string]bool{}, grants: map[string]bool{}}
		n.locks[cm.Name] = s
	}
	tell := known || !initial
	seen := map[string]bool{}
	for _, h := range rec.History {
		k := historyKey(h)
		seen[k] = true
		if tell && !s.seen[k] {
			n.emit(Event{Kind: KindRelease, Target: rec.Target, ID: k, Time: h.Until.Time,
				Text: fmt.Sprintf("%s released the lock of %s after %s (%s)", h.Identity, rec.Target, human.Duration(h.Held()), h.Describe()),
				Data: map[string]any{"target": rec.Target, "holder": h.Identity.String(), "heldSeconds": h.Held().Seconds(),
					"ended": stats.EndingOf(h), "how": h.Describe()}})
		}
	}
	s.seen = seen
	grants := map[string]bool{}
	for _, g := range rec.BreakGlass {
		k := g.User + "|" + g.At.UTC().Format(time.RFC3339Nano)
		grants[k] = true
		if tell && !s.grants[k] {
			n.emit(Event{Kind: KindBreakGlass, Target: rec.Target, ID: k, Time: g.At.Time,
				Text: fmt.Sprintf("break-glass on the lock of %s: user %s may write it until %s", rec.Target, g.User, g.Until.UTC().Format(time.RFC3339)),
				Data: map[string]any{"target": rec.Target, "user": g.User, "until": g.Until.UTC().Format(time.RFC3339)}})
		}
	}
	s.grants = grants
	if h := rec.Holder; !rec.IsFree() && h.ClaimID != "" && h.ClaimID != s.holder {
		if tell {
			data := map[string]any{"target": rec.Target, "holder": h.Identity.String(), "since": h.Since.UTC().Format(time.RFC3339)}
			text := fmt.Sprintf("%s holds the lock of %s", h.Identity, rec.Target)
			if h.Queued != nil {
				w := max(h.Since.Sub(h.Queued.Time), 0)
				data["waitedSeconds"] = w.Seconds()
				text += " after waiting " + human.Duration(w)
			}
			n.emit(Event{Kind: KindTurn, Target: rec.Target, ID: h.ClaimID + "|" + h.Since.UTC().Format(time.RFC3339Nano), Time: h.Since.Time, Text: text, Data: data})
		}
		s.holder = h.ClaimID
	}
	s.rec = rec
}

// ForgetLock implements stats.Observer.
func (n *Notifier) ForgetLock(cm *corev1.ConfigMap) {
	n.mu.Lock()
	defer n.mu.Unlock()
	delete(n.locks, cm.Name)
}

// check looks for holds past their expected time and freezes to come at
// now.
func (n *Notifier) check(ctx context.Context, now time.Time) {
	n.mu.Lock()
	for _, s := range n.locks {
		h := s.rec.Holder
		if s.rec.IsFree() || h.ClaimID == "" || s.overdue == h.ClaimID {
			continue
		}
		var holds []time.Duration
		for _, e := range s.rec.History {
			holds = append(holds, e.Held())
		}
		if len(holds) < stats.MinBudgetHolds {
			continue
		}
		slices.Sort(holds)
		p90, held := stats.Quantile(holds, 0.9), now.Sub(h.Since.Time)
		if held <= p90 {
			continue
		}
		s.overdue = h.ClaimID
		n.emit(Event{Kind: KindOverdue, Target: s.target, ID: h.ClaimID + "|" + h.Since.UTC().Format(time.RFC3339Nano), Time: now,
			Text: fmt.Sprintf("%s has held the lock of %s for %s, past its usual %s (p90 of the last %d holds)", h.Identity, s.target, human.Duration(held), human.Duration(p90), len(holds)),
			Data: map[string]any{"target": s.target, "holder": h.Identity.String(), "heldSeconds": held.Seconds(), "p90Seconds": p90.Seconds()}})
	}
	n.mu.Unlock()
	if n.o.Windows == nil || !slices.Contains(n.o.Kinds, KindFreeze) {
		return
	}
	ws, err := n.o.Windows(ctx)
	if err != nil {
		n.o.Log.Warn("cannot read the freeze windows", "error", err)
		return
	}
	for _, w := range ws {
		f := w.Next(now)
		if f == nil || !f.Since.After(now) || f.Since.Sub(now) > n.o.FreezeAhead {
			continue
		}
		key := w.Name + "|" + f.Since.UTC().Format(time.RFC3339)
		if n.freezes[key] {
			continue
		}
		n.freezes[key] = true
		targets := "every lock"
		if len(w.Targets) > 0 {
			targets = fmt.Sprint(w.Targets)
		}
		n.emit(Event{Kind: KindFreeze, Target: w.Name, ID: key, Time: now,
			Text: fmt.Sprintf("freeze window %s freezes %s in %s, until %s: %s", w.Name, targets, human.Duration(f.Since.Sub(now)), f.Until.UTC().Format(time.RFC3339), w.Reason),
			Data: map[string]any{"window": w.Name, "targets": w.Targets, "since": f.Since.UTC().Format(time.RFC3339), "until": f.Until.UTC().Format(time.RFC3339), "reason": w.Reason}})
	}
}

// Run delivers the events and looks for overdue holds and freezes to come,
// until ctx ends.
func (n *Notifier) Run(ctx context.Context) {
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Add(1)
	go func() {
		defer wg.Done()
		t := n.o.Clock.NewTicker(n.o.CheckEvery)
		defer t.Stop()
		for {
			n.check(ctx, n.o.Clock.Now())
			select {
			case <-ctx.Done():
				return
			case <-t.C():
			}
		}
	}()
	for {
		select {
		case <-ctx.Done():
			return
		case e := <-n.queue:
			n.handle(ctx, e)
		}
	}
}

// handle marks e and, when this replica's mark won, delivers it.
func (n *Notifier) handle(ctx context.Context, e Event) {
	log := n.o.Log.With("lock", e.Target, "event", e.Kind)
	outcome := Elsewhere
	mine, err := n.marks.claim(ctx, e.ID)
	switch {
	case err != nil:
		log.Warn("cannot mark the notification; not sent", "error", err)
		outcome = Failed
	case mine:
		outcome = Delivered
		if err := n.deliver(ctx, e); err != nil {
			log.Warn("notification not delivered", "error", err)
			outcome = Failed
		}
	}
	if n.o.Handled != nil {
		n.o.Handled(e, outcome)
	}
}

// body is e as the webhook gets it, and its content type.
func (n *Notifier) body(e Event) ([]byte, string, error) {
	if n.o.Format == FormatSlack {
		b, err := json.Marshal(map[string]string{"text": e.Text})
		return b, "application/json", err
	}
	b, err := json.Marshal(map[string]any{
		"specversion": "1.0", "id": e.ID, "source": "lockctl/" + e.Namespace, "type": TypePrefix + e.Kind,
		"subject": e.Target, "time": e.Time.UTC().Format(time.RFC3339Nano), "datacontenttype": "application/json", "data": e.Data,
	})
	return b, "application/cloudevents+json; charset=utf-8", err
}

// deliver posts e, retrying with backoff a network error, a 5xx or a 429.
func (n *Notifier) deliver(ctx context.Context, e Event) error {
	body, ctype, err := n.body(e)
	if err != nil {
		return err
	}
	wait := n.o.Backoff
	for attempt := 1; ; attempt++ {
		err := n.post(ctx, body, ctype)
		if err == nil {
			return nil
		}
		if _, final := err.(finalError); final || attempt >= n.o.Attempts {
			return fmt.Errorf("after %d attempts: %w", attempt, err)
		}
		t := n.o.Clock.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return ctx.Err()
		case <-t.C():
		}
		wait *= 2
	}
}

// finalError is an answer not worth retrying.
type finalError struct{ error }

func (n *Notifier) post(ctx context.Context, body []byte, ctype string) error {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, n.o.URL, bytes.NewReader(body))
	if err != nil {
		return finalError{err}
	}
	req.Header.Set("Content-Type", ctype)
	resp, err := n.o.Client.Do(req)
	if err != nil {
		return err
	}
	_ = resp.Body.Close()
	switch {
	case resp.StatusCode < 300:
		return nil
	case resp.StatusCode >= 500 || resp.StatusCode == http.StatusTooManyRequests:
		return fmt.Errorf("webhook answered %s", resp.Status)
	}
	return finalError{fmt.Errorf("webhook answered %s", resp.Status)}
}
