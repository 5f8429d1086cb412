package lock

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/resourceversion"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/base/logutil"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/liveness"
)

// Defaults for Client and Request fields left at their zero value.
const (
	// DefaultTTL is how long a holder without a pod keeps the lock.
	DefaultTTL = time.Hour
	// defaultWaiterTTL is how long a waiter's place lasts between renewals;
	// waiters renew at two thirds of it.
	defaultWaiterTTL = time.Minute
	// defaultLostPodGrace is how long a holder's pod may sit on a NotReady
	// or Unknown node (or in phase Unknown) before the lock counts as stale.
	defaultLostPodGrace = liveness.DefaultNodeGrace
)

// Client takes, waits for and releases namespace locks kept as ConfigMaps
// in one lock namespace.
type Client struct {
	cms       kube.ConfigMapsGetter
	pods      kube.PodsGetter
	namespace string

	// clk judges expiries and stamps records (see New).
	clk clock.WithTicker
	// log, nodes, events and the durations of opts are Options, with
	// their defaults filled in.
	log    *logrus.Entry
	nodes  kube.NodesGetter
	events EventRecorder
	opts   Options

	// store is where the locks live: every read and write of a lock goes
	// through it (see update).
	store store
	// windows are the recurring freezes of the lock namespace (see
	// windowCache).
	windows     windowCache
	nodesDenied atomic.Bool
	// lastDecoded is the record of the version of a lock decoded last,
	// which a waiter decides on twice (a hand-over to it, then its turn).
	lastDecoded atomic.Pointer[decodedLock]
}

// decodedLock is the record of one version of a lock object: the object as
// given (informers and reads hand out objects nobody changes) and its
// resourceVersion.
type decodedLock struct {
	cm  *corev1.ConfigMap
	rv  string
	rec *Record
}

// Options tunes a Client; a zero field takes its default.
type Options struct {
	// Log receives what the client does, with stable keys "lock", "holder"
	// and "err"; nil means a logger that discards.
	Log *logrus.Entry
	// WaiterTTL is how long a waiter's place lasts between renewals;
	// 0 means defaultWaiterTTL.
	WaiterTTL time.Duration
	// LostPodGrace is how long a holder pod's node may be NotReady or
	// Unknown (liveness.Options.NodeGrace) before the lock is stale; 0 means
	// defaultLostPodGrace.
	LostPodGrace time.Duration
	// Nodes, when set, reads the node of a holder's pod, so a dead node is
	// seen from the node itself; nil, or a Forbidden answer, means the
	// pod's conditions alone are judged.
	Nodes kube.NodesGetter
	// Events, when set, records every change of a lock as an Event on its
	// ConfigMap (the Reason constants); nil records none. Recording is
	// best effort and never fails an operation.
	Events EventRecorder
	// ConfirmAfter is how long a hold that began with a hand-over runs
	// before its confirmation is written (see Held.Confirm); 0 means
	// defaultConfirmAfter, a negative value confirms at once.
	ConfirmAfter time.Duration
}

// New returns a Client for locks in namespace, reading and writing
// ConfigMaps through cms and judging holder pods through pods.
//
// clk judges expiries and stamps records, and is required: give it the
// API server's clock (a servertime.Clock wired into the transport of the
// clients above, as cmd does), so contenders with skewed clocks agree on
// expiries (see the package doc); such a clock is asked to hear from the
// API server before the first decision. A test passes a fake clock, and a
// program that means the local clock says so with clock.RealClock{}. New
// panics when clk is nil: no Client silently judges on the local clock.
func New(cms kube.ConfigMapsGetter, pods kube.PodsGetter, namespace string, clk clock.WithTicker, o Options) *Client {
	if clk == nil {
		panic("lock.New: no clock given; pass the API server's clock (servertime.Clock), or clock.RealClock{} to mean the local one")
	}
	if o.Log == nil {
		o.Log = logutil.Discard()
	}
	if o.WaiterTTL <= 0 {
		o.WaiterTTL = defaultWaiterTTL
	}
	if o.LostPodGrace <= 0 {
		o.LostPodGrace = defaultLostPodGrace
	}
	if o.ConfirmAfter == 0 {
		o.ConfirmAfter = defaultConfirmAfter
	}
	return &Client{
		cms:       cms,
		pods:      pods,
		namespace: namespace,
		store:     configMapStore{cms: cms, namespace: namespace},
		clk:       clk,
		log:       o.Log,
		nodes:     o.Nodes,
		events:    o.Events,
		opts:      o,
	}
}

// Clock returns the clock the client judges expiries and stamps records
// on (see New).
func (c *Client) Clock() clock.WithTicker { return c.clk }

// Options returns the options the client was made with, defaults filled
// in.
func (c *Client) Options() Options { return c.opts }

// Namespace returns the lock namespace.
func (c *Client) Namespace() string { return c.namespace }

// Describe identifies the lock of target for logs and messages.
func (c *Client) Describe(target string) string {
	return c.namespace + "/" + Name(target)
}

// Request describes a contender.
type Request struct {
	// Target is the namespace to lock.
	Target string
	Identity
	// User is the contender's authenticated Kubernetes user (a
	// SelfSubjectReview's username), recorded with its claim; an enforced
	// lock admits the holder's writes by it (docs/enforcement.md). ""
	// records none: the holder of an enforced lock is then known by its
	// fencing token alone.
	User string
	// Pod, when set, is the pod the contender runs in (namespace and name;
	// the UID is looked up). The lock then lives as long as that pod.
	Pod *PodRef
	// TTL is how long the lock lasts without a pod; 0 means DefaultTTL.
	TTL time.Duration
	// Policy applies when this request creates the lock; an existing lock
	// keeps the policy it was created with. "" means PolicyNewest.
	Policy Policy
	// Priority places the contender in the queue: ahead of waiters of a
	// lower effective priority (see Claim.Priority). "" means
	// PriorityNormal. It never displaces the holder.
	Priority Priority
	// IgnoreFreeze takes the lock even while it is frozen (an emergency);
	// the freeze records who did.
	IgnoreFreeze bool
	// Cancelable says the contender, once it holds the lock, stops what it
	// runs when a newer build of its branch asks it to (it watches for a
	// *CancelRequestedError from Renew): lockctl run. acquire is not.
	Cancelable bool
	// CancelInProgress asks the holder to stop when it is an older
	// Cancelable build of the contender's branch; the contender holds the
	// lock next (docs/adr/0026-cancel-in-progress.md).
	CancelInProgress bool
	// Job is the CI job the contender runs in, when known: the unit that
	// holds the lock once (see CIJob, sameHolder and runsAgain). The zero
	// value makes the build the unit, as before jobs were known.
	Job CIJob
	// Unordered says the build number only tells this contender apart
	// (a developer's terminal, a CI without a build counter): it is served
	// first come, first served and never supersedes nor is superseded.
	Unordered bool
	// ClaimID identifies this contender's claim (Claim.ClaimID); "" means a
	// random one. Reuse it to make TryAcquire calls of one contender
	// idempotent.
	ClaimID string
	// OnProgress, when set, is called each time the contender's view of the
	// lock changes while it waits.
	OnProgress func(Progress)
	// NoWait makes Acquire try once: it takes the lock if that needs no
	// waiting, and otherwise returns a *HeldError without joining the
	// queue or writing anything.
	NoWait bool
	// OnTaking, when set, is called just before each write that makes the
	// contender the holder, and before Acquire returns a hold it re-entered
	// without a write: the lock was last read free, its holder no longer
	// alive, or handed to the contender, so no other holder can act from
	// then on. Work that must only start once no other holder is live (a
	// look for what earlier holders left behind) may start then, beside the
	// write; if the write is lost, OnTaking is called again before the next.
	// With RunJobs set, it is called only when the lock's record does not
	// vouch that no job was left behind in RunJobs.Namespace (mustLookIn).
	// A hold that begins with a hand-over (see Acquire) calls it once the
	// waiter sees the hand-over, before Acquire returns.
	OnTaking func()
	// StopBefore is how long before its hold could expire the caller
	// needs to stop what it runs under it when the hold cannot be renewed
	// (lockctl run: its kill grace and a clock margin). A lock handed over
	// to the caller is held from the hand-over on, before it is confirmed
	// (Held.Confirm): Acquire returns such a hold only when more than
	// StopBefore, a second and a sixth of the waiter TTL is left of the
	// waiter's expiry it stands on, and otherwise confirms it first; an
	// unconfirmed hold is reported lost StopBefore and a second before
	// that expiry. 0 means nothing to stop.
	StopBefore time.Duration
	// RunJobs, when set, makes the contender a lockctl run that keeps the
	// lock's account of where runs left jobs (RunJobs, record version
	// 1.7); Held.Vouched then says whether it need not look. The zero value
	// keeps none, and a lock taken so vouches for nothing.
	RunJobs RunJobsRequest
}

// Progress is what a waiting contender knows.
type Progress struct {
	Target string
	// Holder is the current holder.
	Holder Claim
	// HolderAlive is false when the holder is stale and about to be replaced.
	HolderAlive bool
	// Position is the contender's 1-based place in the queue.
	Position int
	// Ahead are the waiters in front of the contender.
	Ahead []Claim
	// Started is when the contender started waiting.
	Started time.Time
	// Freeze is set while the lock is frozen: the contender waits for it
	// to end even when nobody holds the lock (Holder.ClaimID is then "").
	Freeze *Freeze
	// Wait is what the estimate of the contender's wait is made from (see
	// Estimate); nil when there is nothing to make it from.
	Wait *EstimateInput
}

// Estimate is the contender's wait for its turn as estimateWait sees it
// at now; nil when the history says nothing.
func (p *Progress) Estimate(now time.Time) *Estimate {
	if p.Wait == nil {
		return nil
	}
	in := *p.Wait
	in.Now = now
	return estimateWait(in)
}

// Held reports whether anyone holds the lock; a frozen lock may wait with
// nobody holding it.
func (p *Progress) Held() bool { return p.Holder.Identity != (Identity{}) }

// Held is a lock the caller holds.
type Held struct {
	Target    string
	Namespace string
	Name      string
	UID       types.UID
	// ClaimID is the holder's claim (Claim.ClaimID).
	ClaimID string
	Holder  Claim
	// Token grows with every new holder of any lock in the cluster: it is the
	// resourceVersion of the write that made the caller the holder, also
	// kept in the record (Claim.Token) for re-entrant acquires.
	Token string
	// Waited is how long the caller waited.
	Waited time.Duration
	// IgnoredFreeze is the freeze the caller took the lock in spite of
	// (Request.IgnoreFreeze); nil when the lock was not frozen.
	IgnoredFreeze *Freeze
	// Reentered is true when the caller's build already held the lock (the
	// same identity, CI job and pod, or no pod; see sameHolder): nothing
	// changed, and Token is the token of that hold, unless that hold was
	// handed to the build and not yet confirmed, which the caller took.
	// Either way the hold is the process's that took it: ReleaseHeld
	// leaves it held, and renewals never shorten it.
	Reentered bool
	// Vouched is true when the lock's record vouched that no earlier run
	// left a job behind in Request.RunJobs.Namespace (see mustLookIn), so
	// the caller need not look there. False (the zero value, and always
	// without Request.RunJobs) means look.
	Vouched bool

	// last is the version of the lock this hold last wrote or read, so
	// ReleaseHeld may write on it without reading the lock first.
	last *lastSeen
	// runJobs and runMark are the caller's request to keep the account of
	// run jobs and the mark its acquisition left pending ("" for none),
	// for ReleaseHeld.
	runJobs RunJobsRequest
	runMark string
	// events is closed once the Events of the acquisition are recorded;
	// nil when they were recorded before Acquire returned.
	events <-chan struct{}
	// watching is the watch of the lock kept while it is held (see
	// Acquire); nil when none.
	watching *heldWatch
	// confirming is the background confirmation of a hold that began with
	// a hand-over (see Confirm); nil for any other hold.
	confirming *confirmation
}

// WaitEvents waits, as long as ctx allows, until the Events of the
// acquisition are recorded (see Acquire).
func (h *Held) WaitEvents(ctx context.Context) {
	if h == nil || h.events == nil {
		return
	}
	select {
	case <-h.events:
	case <-ctx.Done():
	}
}

// lastSeen is a version of the lock, safe for concurrent use.
type lastSeen struct {
	mu sync.Mutex
	cm *corev1.ConfigMap
	// changed is closed, and replaced, when cm changes; nil until asked for.
	changed chan struct{}
}

// remember keeps cm as the version of the lock h last saw.
func (h *Held) remember(cm *corev1.ConfigMap) {
	if h == nil || h.last == nil || cm == nil {
		return
	}
	h.last.mu.Lock()
	defer h.last.mu.Unlock()
	if h.last.cm == nil || h.last.cm.UID != cm.UID || !rvOlder(cm.ResourceVersion, h.last.cm.ResourceVersion) {
		h.last.cm = cm
		if h.last.changed != nil {
			close(h.last.changed)
			h.last.changed = nil
		}
	}
}

// lastCM returns the version of the lock h last saw, nil if none.
func (h *Held) lastCM() *corev1.ConfigMap {
	if h == nil || h.last == nil {
		return nil
	}
	h.last.mu.Lock()
	defer h.last.mu.Unlock()
	return h.last.cm
}

// Acquire takes the lock for req, waiting as long as ctx allows. It returns
// a *SupersededError when a newer build of the same branch waits or holds
// the lock, and a *TimeoutError when ctx's deadline passes first; in both
// cases, and when ctx is cancelled, the caller's place in the queue is given
// up so the lock is left as it was found. Whatever call ctx's deadline
// interrupts, the error is a *TimeoutError: only the wait can time out.
//
// Acquire returns as soon as the lock is held: the Events of the
// acquisition are recorded in the background, and the watch of the lock it
// waited with keeps running so that ReleaseHeld writes on the newest
// version. ReleaseHeld ends both; a caller that does not release a Held it
// got calls Held.StopWatching and Held.WaitEvents instead, or those Events
// may be lost.
//
// A lock handed over to the caller by a release (or from a stale holder)
// is held as soon as the waiter sees the write that names it holder: that
// write's resourceVersion is Held.Token, and Held.Holder.HandedOver is set
// while the hold is confirmed in the background, until which others judge
// it by the waiter's expiry (see Held.Confirm and Request.StopBefore). A
// caller that keeps the lock past its exit calls Held.Confirm first.
func (c *Client) Acquire(ctx context.Context, req Request) (*Held, error) {
	w := newWaiter(c, req, Claim{})
	defer w.stop()
	w.started = c.clk.Now()
	held, err := c.acquire(ctx, w)
	if held != nil && w.lockEvents != nil {
		// NOTE: the watch of the lock waited for is kept while it is held,
		// so ReleaseHeld writes on the newest version (waiters joined
		// meanwhile) and the next holder is not kept waiting by a lost
		// write and a read. Handed to the hold, so w.stop leaves it
		// running.
		held.keep(w.lockEvents)
		w.lockEvents = nil
	}
	if held != nil && held.confirming != nil {
		c.confirmInBackground(ctx, held)
	}
	if err != nil && errors.Is(ctx.Err(), context.DeadlineExceeded) &&
		!errors.Is(err, ErrTimeout) && !errors.Is(err, ErrSuperseded) && !errors.Is(err, ErrHeld) {
		err = &TimeoutError{Target: req.Target, Holder: w.holder, Waited: c.clk.Since(w.started), Freeze: w.freeze}
	}
	return held, err
}

func (c *Client) acquire(ctx context.Context, w *waiter) (*Held, error) {
	me, err := c.claim(ctx, w.req)
	if err != nil {
		return nil, err
	}
	w.me = me
	if w.req.NoWait {
		return c.acquireNow(ctx, w.req, me)
	}
	return w.run(ctx)
}

// holderAlive judges the holder: by its pod when it has one (see judgePod),
// else by its expiry. recheck, when not zero, is when the verdict changes
// by itself (a grace period of the pod or its node ends); why says why a
// holder is not alive, for people.
func (c *Client) holderAlive(ctx context.Context, h Claim, pod *corev1.Pod, now time.Time) (alive bool, recheck time.Time, why string, err error) {
	if h.Pod == nil {
		// NOTE: an expiry counts as passed only once the earliest the API
		// server's time may be has passed it, so a clock estimate running
		// ahead never takes a live lock early; until then it is judged
		// again when that is sure.
		slack := c.clockSlack()
		if h.Expires != nil && h.Expires.After(now.Add(-slack)) {
			if !h.Expires.After(now) {
				recheck = h.Expires.Add(slack)
			}
			return true, recheck, "", nil
		}
		why = "expired"
		if h.Expires != nil {
			why += " at " + h.Expires.UTC().Format(time.RFC3339)
		}
		return false, time.Time{}, why, nil
	}
	if pod == nil || pod.Name != h.Pod.Name || pod.Namespace != h.Pod.Namespace {
		p, err := c.pods.Pods(h.Pod.Namespace).Get(ctx, h.Pod.Name, metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, time.Time{}, "pod " + h.Pod.String() + " is gone", nil
		}
		if err != nil {
			return false, time.Time{}, "", fmt.Errorf("check holder pod %s: %w", h.Pod, err)
		}
		pod = p
	}
	v := judgePod(pod, h.Pod.UID, c.node(ctx, pod), now, c.lostPodGrace())
	if !v.Alive {
		why = "pod " + h.Pod.String()
		if v.Message != "" {
			why += ": " + v.Message
		} else {
			why += " " + string(pod.Status.Phase)
		}
	}
	return v.Alive, v.Recheck, why, nil
}

// node returns the node pod is bound to, or nil when it is unknown or may
// not be read. Reading nodes needs a cluster-scoped permission that many CI
// accounts lack (docs/rbac.md); without it the pod's own conditions stand in
// for the node's, which is said once at -v 1.
func (c *Client) node(ctx context.Context, pod *corev1.Pod) *corev1.Node {
	if c.nodes == nil || pod == nil || pod.Spec.NodeName == "" || c.nodesDenied.Load() {
		return nil
	}
	n, err := c.nodes.Nodes().Get(ctx, pod.Spec.NodeName, metav1.GetOptions{})
	switch {
	case err == nil:
		return n
	case apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err):
		if !c.nodesDenied.Swap(true) {
			c.log.WithField("err", err).Debug("cannot read nodes; judging holder pods by their own conditions (docs/rbac.md has the optional ClusterRole)")
		}
	default:
		c.log.WithField("err", err).Debug("cannot read the holder pod's node; judging it by its own conditions")
	}
	return nil
}

// judgePod applies the shared liveness rule (liveness.Judge) to a holder's
// pod: it keeps the lock while it may still be running, and not once it is
// gone, finished, replaced by another pod of the same name (uid, when given,
// differs) or lost with its node for longer than grace. node is the pod's
// node, or nil when it may not be read.
func judgePod(pod *corev1.Pod, uid types.UID, node *corev1.Node, now time.Time, grace time.Duration) liveness.Verdict {
	if pod != nil && uid != "" && pod.UID != uid {
		return liveness.Verdict{Lost: true, Message: "pod was replaced by another of the same name"}
	}
	return liveness.Judge(pod, node, now, liveness.Options{NodeGrace: grace})
}

// decode is Decode, with the target named in an *InvalidError so its hint
// can give the command that removes the lock.
func (c *Client) decode(cm *corev1.ConfigMap, target string) (*Record, error) {
	if last := c.lastDecoded.Load(); last != nil && last.cm == cm && last.rv == cm.ResourceVersion && cm.ResourceVersion != "" {
		// The caller may change what it gets: a copy.
		return last.rec.deepCopy(), nil
	}
	rec, err := Decode(cm)
	if err == nil {
		c.lastDecoded.Store(&decodedLock{cm: cm, rv: cm.ResourceVersion, rec: rec.deepCopy()})
	}
	var (
		invalid *InvalidError
		version *VersionError
	)
	switch {
	case errors.As(err, &invalid):
		invalid.Target = target
	case errors.As(err, &version):
		version.Target = target
	}
	return rec, err
}

func (c *Client) get(ctx context.Context, target string) (*corev1.ConfigMap, error) {
	var cm *corev1.ConfigMap
	err := c.readWithWindows(ctx, fmt.Sprintf("lock %s/%s", c.namespace, Name(target)), func() (err error) {
		cm, err = c.store.Get(ctx, target)
		return err
	})
	return cm, err
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

// leave removes session from the queue of target's lock, if it is there,
// so a waiter that gives up leaves the lock as it found it.
func (c *Client) leave(ctx context.Context, target, session string) error {
	return c.update(ctx, "leave the queue of", target, nil, func(cm *corev1.ConfigMap) (change, error) {
		if cm == nil {
			return change{}, nil
		}
		rec, err := c.decode(cm, target)
		if err != nil || !leaveQueue(rec, session, c.clk.Now()) {
			return change{}, err
		}
		return change{Decision: Decision{Record: rec}}, nil
	})
}

// leaveQueue is the rule of a waiter that gives up: session leaves rec's
// queue at now. It reports whether rec changed (session waited).
func leaveQueue(rec *Record, session string, now time.Time) bool {
	if !rec.remove(session) {
		return false
	}
	rec.Updated = later(now, rec.Updated)
	return true
}

// serverClock is a clock that follows the API server's once it has heard
// from it, as servertime.Clock does.
type serverClock interface {
	// Uncertainty returns how far the clock may be off the API server's,
	// and false until it has heard from it.
	Uncertainty() (time.Duration, bool)
}

// clockSlack is how far c.clk may be ahead of the API server's: the
// uncertainty of a clock that follows the API server's, 0 for others.
func (c *Client) clockSlack() time.Duration {
	if sc, ok := c.clk.(serverClock); ok {
		if u, synced := sc.Uncertainty(); synced {
			return u
		}
	}
	return 0
}

// ClockUncertainty returns how far c.clk may be off the API server's
// clock: the uncertainty of a clock that follows it (servertime.Clock) once
// it has heard from it, 0 for other clocks and before that.
func (c *Client) ClockUncertainty() time.Duration { return c.clockSlack() }

func (c *Client) waiterTTL() time.Duration { return c.opts.WaiterTTL }

func (c *Client) lostPodGrace() time.Duration { return c.opts.LostPodGrace }

func newSession() string {
	b := make([]byte, 8)
	_, _ = rand.Read(b)
	return hex.EncodeToString(b)
}

// rvOlder reports whether resourceVersion a is older than b. Resource
// versions of one resource are comparable (KEP-5504, stable since
// Kubernetes 1.35); anything unparsable counts as not older.
func rvOlder(a, b string) bool {
	c, err := resourceversion.CompareResourceVersion(a, b)
	return err == nil && c < 0
}

// withWindows returns cur frozen as the freeze windows say at now, when no
// freeze of its own holds it: a copy, or a new free lock of policy when
// there is none, so that the decision on it writes the window's freeze.
// cur itself when no window applies.
func (c *Client) withWindows(cur *Record, target string, policy Policy, now time.Time) *Record {
	ws := c.freezeWindows()
	if ws == nil {
		return cur
	}
	if cur == nil {
		f := windowFreeze(ws, target, now)
		if f == nil {
			return nil
		}
		ts := metav1.NewMicroTime(now)
		rec := &Record{Target: target, Policy: policy, Updated: ts}
		rec.free(ts)
		rec.Freeze = f
		return rec
	}
	rec := cur.deepCopy()
	dropped := rec.dropLapsedWindow(ws, now)
	if !rec.applyWindows(ws, now) && !dropped {
		return cur
	}
	return rec
}
