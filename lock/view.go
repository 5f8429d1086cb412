package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
)

// APIVersion and Kind of the LockView objects printed by `lockctl status -o`.
const (
	APIVersion = "lockctl.dev/v1alpha1"
	kindLock   = "Lock"
)

// LockView is a lock as people see it: a Kubernetes-style object whose spec is
// what the lock protects and whose status is who holds it and who waits.
type LockView struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata"`
	Spec              LockViewSpec   `json:"spec"`
	Status            LockViewStatus `json:"status"`
}

// LockViewSpec names the protected namespace and the waiting policy.
type LockViewSpec struct {
	// Context is the kubeconfig context of the lock's cluster when it was
	// read as one of several (lockctl status --contexts); "" otherwise.
	Context string        `json:"context,omitempty"`
	Target  string        `json:"target"`
	Policy  record.Policy `json:"policy,omitempty"`
}

// LockState sums up a lock for scripts: held, stale, free or invalid.
type LockState string

// The states of a lock as `lockctl status -o` prints them.
const (
	// StateHeld: a holder whose pod runs or whose expiry is ahead.
	StateHeld LockState = "held"
	// StateStale: the holder's pod is gone or finished, or its expiry has
	// passed; the next contender removes the lock.
	StateStale LockState = "stale"
	// StateFree: there is no lock object, or it is kept, free, for its
	// history.
	StateFree LockState = "free"
	// StateInvalid: the lock object's record cannot be read.
	StateInvalid LockState = "invalid"
)

// LockViewStatus is the holder, the queue and the holder's liveness.
type LockViewStatus struct {
	// State is held, stale, free or invalid.
	State   LockState      `json:"state"`
	Holder  *record.Claim  `json:"holder,omitempty"`
	Waiters []record.Claim `json:"waiters,omitempty"`
	// Token is the holder's fencing token (see Held.Token); empty for a
	// free lock and for records written before tokens existed.
	Token string `json:"token,omitempty"`
	// Alive tells whether the holder still counts: its pod runs or its
	// expiry is ahead.
	Alive bool `json:"alive"`
	// Liveness explains Alive: "pod ci/build-1 Running" or "expires in 42m".
	Liveness string `json:"liveness,omitempty"`
	// Freeze is set while the lock is frozen: it changes hands only to
	// contenders that ignore the freeze.
	Freeze *record.Freeze `json:"freeze,omitempty"`
	// Invalid is set when the stored record cannot be read.
	Invalid string `json:"invalid,omitempty"`
	// EstimatedWait is how long a contender that joined the queue now
	// would wait for its turn, as EstimateWait renders it ("about 11
	// min", "8-15 min"); empty when the history says nothing. Each waiter
	// has its own (Claim.EstimatedWait).
	EstimatedWait string `json:"estimatedWait,omitempty"`
	// Basis says what EstimatedWait is made from ("median hold 4m over
	// the last 20").
	Basis string `json:"basis,omitempty"`
	// BreakGlass describes the break-glass grant in force on an enforced
	// lock (lockctl break-glass): whose writes the API server admits
	// whatever the lock says, why, and until when.
	BreakGlass string `json:"breakGlass,omitempty"`
}

// Get returns target's lock, or nil when there is none or it is free (kept
// only for its history).
func (c *Client) Get(ctx context.Context, target string) (*LockView, error) {
	cm, err := c.get(ctx, target)
	if err != nil || cm == nil {
		return nil, err
	}
	if !record.IsLock(cm) {
		return nil, &record.NotALockError{Namespace: cm.Namespace, Name: cm.Name}
	}
	if record.IsFree(cm) {
		return nil, nil
	}
	l := c.view(ctx, cm)
	return &l, nil
}

// FreeLockView returns the view of target's lock when there is none: the object it
// would be, in state free.
func (c *Client) FreeLockView(target string) LockView {
	return LockView{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: kindLock},
		ObjectMeta: metav1.ObjectMeta{Name: record.Name(target), Namespace: c.namespace},
		Spec:       LockViewSpec{Context: c.opts.Context, Target: target},
		Status: LockViewStatus{State: StateFree, Liveness: "free",
			Freeze: record.EffectiveFreeze(nil, c.freezeWindows(), target, c.clk.Now())},
	}
}

// listPageSize is how many locks one request of List reads: the locks of
// a namespace with thousands are read, decoded and viewed a page at a
// time, so only one page of ConfigMaps is held at once.
const listPageSize = 500

// List returns every lock in the lock namespace that is not free, by name;
// a Client made for metav1.NamespaceAll ("") lists the locks of every
// namespace. The first read of a Client in one namespace loads its freeze
// windows beside it, as Get does.
func (c *Client) List(ctx context.Context) ([]LockView, error) {
	sel := labels.SelectorFromSet(labels.Set{record.ManagedByLabel: record.ManagedByValue, record.KindLabel: record.KindValue}).String()
	var out []LockView
	opts := metav1.ListOptions{LabelSelector: sel, Limit: listPageSize}
	for {
		var list *corev1.ConfigMapList
		read := func() (err error) {
			list, err = c.cms.ConfigMaps(c.namespace).List(ctx, opts)
			return err
		}
		var err error
		if out == nil {
			err = c.readWithWindows(ctx, "the list of locks", read) // the first page brings the windows
		} else {
			err = read()
		}
		if err != nil {
			return nil, fmt.Errorf("list locks in namespace %q: %w", c.namespace, err)
		}
		if out == nil {
			out = make([]LockView, 0, len(list.Items)+int(ptrValue(list.RemainingItemCount)))
		}
		for i := range list.Items {
			if !record.IsFree(&list.Items[i]) {
				out = append(out, c.view(ctx, &list.Items[i]))
			}
		}
		if list.Continue == "" {
			return out, nil
		}
		opts.Continue = list.Continue
	}
}

func ptrValue(p *int64) int64 {
	if p == nil {
		return 0
	}
	return *p
}

func (c *Client) view(ctx context.Context, cm *corev1.ConfigMap) LockView {
	l, rec := c.viewRecord(ctx, cm)
	switch {
	case l.Status.Invalid != "":
		l.Status.State = StateInvalid
	case l.Status.Holder == nil:
		// A frozen lock that nobody holds.
		l.Status.State = StateFree
	case l.Status.Alive:
		l.Status.State = StateHeld
	default:
		l.Status.State = StateStale
	}
	if rec != nil {
		c.estimate(&l, rec)
		l.Status.BreakGlass = activeBreakGlass(cm, rec, c.clk.Now())
	}
	return l
}

// estimate sets the wait estimates of l's waiters, and of a contender
// that would join now, from rec's history (EstimateWait).
func (c *Client) estimate(l *LockView, rec *record.Record) {
	in := record.EstimateInput{Target: rec.Target, History: rec.History, Freeze: rec.Freeze, Windows: c.freezeWindows(), Now: c.clk.Now()}
	if h := l.Status.Holder; h != nil && l.Status.Alive {
		since := h.Since.Time
		in.HolderSince = &since
	}
	for i := range l.Status.Waiters {
		in.Ahead = i
		e := record.EstimateWait(in)
		l.Status.Waiters[i].EstimatedWait, l.Status.Waiters[i].Basis = e.String(), e.Basis()
	}
	in.Ahead = len(l.Status.Waiters)
	if l.Status.Holder == nil && in.Ahead == 0 && !rec.Freeze.ActiveAt(in.Now) && l.Status.Freeze == nil {
		return // free: no wait at all
	}
	e := record.EstimateWait(in)
	l.Status.EstimatedWait, l.Status.Basis = e.String(), e.Basis()
}

// viewRecord is view without the state, and the record it read (nil when
// it cannot be read).
func (c *Client) viewRecord(ctx context.Context, cm *corev1.ConfigMap) (LockView, *record.Record) {
	l := LockView{
		TypeMeta: metav1.TypeMeta{APIVersion: APIVersion, Kind: kindLock},
		ObjectMeta: metav1.ObjectMeta{
			Name: cm.Name, Namespace: cm.Namespace, UID: cm.UID,
			ResourceVersion: cm.ResourceVersion, CreationTimestamp: cm.CreationTimestamp,
		},
		Spec: LockViewSpec{Context: c.opts.Context},
	}
	rec, err := record.Decode(cm)
	if err != nil {
		l.Status.Invalid = err.Error()
		l.Spec.Target = cm.Labels[record.TargetLabel]
		return l, nil
	}
	l.Spec.Target, l.Spec.Policy = rec.Target, rec.Policy
	now := c.clk.Now()
	h := rec.Holder
	h.Priority = h.Priority.Level()
	// NOTE: the account of run jobs is the runs' bookkeeping, not shown.
	h.LedgerKept = false
	for i := range rec.Waiters {
		w := &rec.Waiters[i]
		if e := w.EffectivePriority(now); e != w.Priority.Level() {
			w.Effective = e
		}
		w.Priority = w.Priority.Level()
	}
	l.Status.Holder, l.Status.Waiters = &h, rec.Waiters
	l.Status.Token = h.Token
	if l.Status.Token == "" && h.TokenPending {
		// The take-over was the last write: its version is the token.
		l.Status.Token = cm.ResourceVersion
	}
	ws := c.freezeWindows()
	if ws != nil {
		rec.DropLapsedWindow(ws, now)
	}
	l.Status.Freeze = record.EffectiveFreeze(rec.Freeze, ws, rec.Target, now)
	if rec.Unheld() {
		l.Status.Holder, l.Status.Token = nil, ""
		l.Status.Liveness = "free"
		return l, rec
	}
	if h.Pod == nil {
		l.Status.Alive = h.Expires.After(now)
		l.Status.Liveness = ExpiryLiveness(h.Expires.Time, now)
		return l, rec
	}
	pod, err := c.pods.Pods(h.Pod.Namespace).Get(ctx, h.Pod.Name, metav1.GetOptions{})
	switch {
	case err == nil:
		v := judgePod(pod, h.Pod.UID, c.node(ctx, pod), now, c.lostPodGrace())
		l.Status.Alive = v.Alive
		l.Status.Liveness = fmt.Sprintf("pod %s %s", h.Pod, pod.Status.Phase)
		if v.Message != "" {
			l.Status.Liveness += ": " + v.Message
		}
	case errors.Is(err, context.Canceled):
		l.Status.Liveness = "pod " + h.Pod.String() + " unknown"
	default:
		l.Status.Liveness = "pod " + h.Pod.String() + " gone"
	}
	return l, rec
}

// ExpiryLiveness words the liveness of a holder without a pod whose claim
// expires at expires, judged at now: "expires in 42m", "expired 4s ago".
func ExpiryLiveness(expires, now time.Time) string {
	if expires.After(now) {
		return "expires in " + expires.Sub(now).Round(time.Second).String()
	}
	return "expired " + now.Sub(expires).Round(time.Second).String() + " ago"
}
