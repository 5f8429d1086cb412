package lock

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"slices"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
	utilnet "k8s.io/apimachinery/pkg/util/net"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/tools/cache"
	watchtools "k8s.io/client-go/tools/watch"
)

// leaveTimeout bounds the write that gives up a waiter's place after its
// context ended.
const leaveTimeout = 10 * time.Second

// waiter is one contender waiting for a lock: it reacts to changes of the
// lock and of the holder's pod, both watched through informers that list
// again and re-establish their watch after errors, expiry or an API server
// restart, and to the deadlines the last decision named.
type waiter struct {
	c   *Client
	req Request
	me  record.Claim

	// lockEvents watches the lock; turnEvents, instead, the lock's turn
	// object while the waiter is deep in the queue (see turn.go). One of
	// them is nil once the waiter has joined.
	lockEvents watch.Interface
	turnEvents watch.Interface
	podEvents  watch.Interface
	podRef     *record.PodRef
	// pod is the holder's pod as its watch last brought it.
	pod *corev1.Pod

	// st is where the wait stands; it changes only through its methods.
	st waitState

	// denied receives the first Forbidden or Unauthorized answer to the
	// watches' list or watch calls, which their informers would otherwise
	// retry forever while the caller waits in vain.
	denied chan error
}

// waitState is where a waiter stands: what it knows of the lock (the
// version to decide on next, the holder and freeze it last saw, the
// progress it last reported) and where it is in its round of a read and a
// write (in the queue or not, writes lost, the back-off window, the pause
// after API errors). Each transition of a wait is one of its methods, so
// they read here in one place; the waiter's code only calls them.
type waitState struct {
	// started is when the wait started (Held.Waited, the timeout error).
	started time.Time
	// cm is the version of the lock to decide on next; nil when the lock
	// is gone (or not read yet).
	cm *corev1.ConfigMap
	// refresh says cm must be read again before the next decision.
	refresh bool
	// joined says the contender is in the queue: a lost write is then
	// read again at once, and API errors are waited out.
	joined bool
	// holder is the holder last seen, for the error when the wait ends.
	holder record.Claim
	// freeze is the freeze the last decision met, for the timeout error.
	freeze *record.Freeze
	// last is the Progress reported last.
	last *Progress
	// lost counts the writes lost to other contenders before joining the
	// queue.
	lost int
	// window is the last back-off window after a lost write (see backOff).
	window time.Duration
	// roundStart is when the current round (a read and a write) started,
	// for the back-off after a lost write.
	roundStart time.Time
	// delay is the last pause after a transient API error; 0 after a
	// decision.
	delay time.Duration
}

// start starts the wait at now.
func (s *waitState) start(now time.Time) { s.started = now }

// reading starts a round at now when cm must be read again, and reports
// whether it must.
func (s *waitState) reading(now time.Time) bool {
	if s.refresh {
		s.roundStart = now
	}
	return s.refresh
}

// read takes cm, just read, as the version to decide on.
func (s *waitState) read(cm *corev1.ConfigMap) { s.cm, s.refresh = cm, false }

// saw takes holder as the holder last seen.
func (s *waitState) saw(holder record.Claim) { s.holder = holder }

// reread marks the version at hand as not to be decided on: a decision or
// read failed, or a waiter that does not watch the lock must see its
// latest version. The lock is read again before the next decision.
func (s *waitState) reread() { s.refresh = true }

// decided takes what a decision that was written saw: the holder (when
// there is a lock) and the freeze; the pause after API errors starts over.
func (s *waitState) decided(rec *record.Record, freeze *record.Freeze) {
	s.delay = 0
	if rec != nil {
		s.holder = rec.HolderOrNone()
	}
	s.freeze = freeze
}

// queued marks the contender in the queue, on the version cm its write
// made: the next decision needs no read.
func (s *waitState) queued(cm *corev1.ConfigMap) { s.cm, s.joined = cm, true }

// lostWrite marks a write lost to another contender's: the lock is read
// again. Before the contender joined the queue it backs off first: it
// reports true and the count of writes lost so far.
func (s *waitState) lostWrite() (backOff bool, lost int) {
	s.refresh = true
	if s.joined {
		return false, 0
	}
	s.lost++
	return true, s.lost
}

// backedOff ends a back-off at now: one the watch of the lock ended by
// seeing it free decides on that version, without a read, in a new round.
func (s *waitState) backedOff(woken bool, now time.Time) {
	if woken {
		s.refresh, s.roundStart = false, now
	}
}

// nextWindow returns the back-off window after the lost-th lost write,
// whose round took round, and keeps it (see backOff).
func (s *waitState) nextWindow(lost int, round time.Duration) time.Duration {
	s.window = min(max(16*round<<min(lost-1, 10), 2*s.window), maxJoinBackOff)
	return s.window
}

// paused takes d as the pause after the last API error.
func (s *waitState) paused(d time.Duration) { s.delay = d }

// reported takes p as the progress reported last.
func (s *waitState) reported(p *Progress) { s.last = p }

// event takes cm, brought by the watch of the lock, as the version to
// decide on: a deletion of the version it has forgets it, and a version
// older than it has (events can trail the waiter's own writes) is dropped.
func (s *waitState) event(typ watch.EventType, cm *corev1.ConfigMap) {
	if typ == watch.Deleted {
		if s.cm != nil && s.cm.UID == cm.UID {
			s.cm = nil
		}
		return
	}
	if s.cm != nil && s.cm.UID == cm.UID && rvOlder(cm.ResourceVersion, s.cm.ResourceVersion) {
		return
	}
	s.cm = cm
}

func newWaiter(c *Client, req Request, me record.Claim) *waiter {
	return &waiter{c: c, req: req, me: me, denied: make(chan error, 1)}
}

func (w *waiter) stop() {
	if w.lockEvents != nil {
		w.lockEvents.Stop()
	}
	if w.turnEvents != nil {
		w.turnEvents.Stop()
	}
	if w.podEvents != nil {
		w.podEvents.Stop()
	}
}

func (w *waiter) run(ctx context.Context) (*Held, error) {
	held, err := w.begin(ctx)
	for held == nil && err == nil {
		held, err = w.turn(ctx)
	}
	return held, err
}

// begin reads the lock and decides on it once, before anything is
// watched: a free lock costs a read and a write. Unless that took the lock
// or failed, it starts the watch of the lock and leaves the version to
// decide on next in w.st.cm (or w.st.refresh set to read it).
//
// NOTE: a clock that follows the API server's has to hear from it before
// the first decision: an expiry stamped on a slow local clock would be
// over at once for everyone else, one on a fast clock would keep a dead
// holder's lock for the difference. The read that teaches it is the lock
// itself, and the freeze windows are read beside it while they are not
// loaded. Locks usually exist (one is kept, free, after its first release,
// for its history), so a create without a read would mostly be lost.
func (w *waiter) begin(ctx context.Context) (*Held, error) {
	c := w.c
	cm, err := c.get(ctx, w.req.Target)
	if err != nil {
		return nil, err
	}
	w.saw(cm)
	// The wait counts on the clock as it now is.
	w.st.start(c.clk.Now())
	res, err := c.step(ctx, w.req, w.me, cm, nil)
	switch {
	case err == nil && res.held != nil:
		return w.took(res.held), nil
	case err != nil && !errors.Is(err, errRetry):
		return nil, w.giveUp(err)
	}
	if err != nil {
		// Lost to another contender: back off, then decide on the version
		// the watch saw free, or on a fresh read (the watch's may lag).
		// NOTE: watched before the back-off, which a lock turning free
		// ends. A contender the first write queued starts the watch its
		// place needs (watchFrom) after its next decision instead.
		w.watchFrom(false)
		_, lost := w.st.lostWrite()
		woken, err := w.backOff(ctx, lost, c.clk.Since(w.st.started))
		if err != nil {
			return nil, w.giveUp(w.waitError(ctx, err, w.st.holder))
		}
		w.st.backedOff(woken, c.clk.Now())
		return nil, nil
	}
	// The first write queued us: the version it made needs no read.
	w.st.saw(res.rec.Holder)
	w.st.queued(res.cm)
	w.st.reported(w.report(res, w.st.last))
	return nil, nil
}

// turn decides once more on the newest version of the lock, reading it
// first when it must, and then waits for what may change the decision
// next. It returns the hold once the lock is taken, an error that ends the
// wait (the place in the queue given up), or neither to go on.
func (w *waiter) turn(ctx context.Context) (*Held, error) {
	c := w.c
	if w.st.reading(c.clk.Now()) {
		cm, err := c.get(ctx, w.req.Target)
		if err != nil {
			return nil, w.waitOut(ctx, err)
		}
		w.st.read(cm)
	}
	if h := w.handedToMe(); h != nil {
		// Handed over: held from the write that names us, confirmed in
		// the background (see Acquire).
		return h, nil
	}
	res, err := c.step(ctx, w.req, w.me, w.st.cm, w.pod)
	switch {
	case errors.Is(err, errRetry):
		return nil, w.lostWrite(ctx)
	case err != nil:
		w.st.reread()
		return nil, w.waitOut(ctx, err)
	}
	w.st.decided(res.rec, res.decision.Freeze)
	if res.held != nil {
		return w.took(res.held), nil
	}
	w.st.queued(res.cm)
	w.st.reported(w.report(res, w.st.last))
	deep := res.decision.Position > record.HeadWatchers
	w.watchFrom(deep)
	if deep {
		// The head waiters take over from a stale holder: no need to
		// follow its pod from back here.
		w.followHolderPod(nil)
	} else {
		w.followHolderPod(res.rec.Holder.Pod)
	}
	if err := w.next(ctx, res.decision.NextCheck); err != nil {
		holder := record.Claim{}
		if res.rec != nil {
			holder = res.rec.Holder
		}
		return nil, w.giveUp(w.waitError(ctx, err, holder))
	}
	return nil, nil
}

// took returns h, held after the wait.
func (w *waiter) took(h *Held) *Held {
	h.Waited = w.c.clk.Since(w.st.started)
	return h
}

// lostWrite handles a write lost to another: the lock is read again, after
// a back-off while the contender has not joined the queue yet; a back-off
// that the watch ended by seeing the lock free decides on that version.
func (w *waiter) lostWrite(ctx context.Context) error {
	backOff, lost := w.st.lostWrite()
	if !backOff {
		return nil
	}
	woken, err := w.backOff(ctx, lost, w.c.clk.Since(w.st.roundStart))
	if err != nil {
		return w.giveUp(w.waitError(ctx, err, w.st.holder))
	}
	w.st.backedOff(woken, w.c.clk.Now())
	return nil
}

// waitOut pauses after an API error that may pass (mayRetry) and returns
// nil to go on; any other error ends the wait, and is returned.
func (w *waiter) waitOut(ctx context.Context, err error) error {
	if !w.mayRetry(ctx, err) {
		return w.giveUp(err)
	}
	d, perr := w.pause(ctx, w.st.delay, err)
	w.st.paused(d)
	if perr != nil {
		return w.giveUp(w.waitError(ctx, perr, w.st.holder))
	}
	return nil
}

// maxJoinBackOff bounds the random pause after a write lost while joining.
const maxJoinBackOff = 2 * time.Second

// backOff pauses for a random part of a window after the contender's lost-th
// write lost to another contender's before it joined the queue: contenders
// arriving together would otherwise all write again at once and all but one
// lose again. The window is 16 times the lost round trip (so it grows with
// the server's answer time under the burst), doubled for every further
// loss, and never less than twice the previous window: the round trip of a
// lost update is shorter than that of the first, lost create, which the
// whole burst answered, and a window that shrank sent the losers back into
// the contenders still spread over the first one. At most maxJoinBackOff.
//
// The pause ends early, reporting true, when the watch of the lock sees it
// free (nobody holds it, nobody waits) or gone: the queue was served while
// this contender paused, and the lock would otherwise stay free for the
// rest of the pause. w.st.cm is then the version the watch saw.
func (w *waiter) backOff(ctx context.Context, lost int, round time.Duration) (bool, error) {
	window := w.st.nextWindow(lost, round)
	if window <= 0 {
		return false, nil
	}
	t := w.c.clk.NewTimer(rand.N(window))
	defer t.Stop()
	var events <-chan watch.Event
	if w.lockEvents != nil {
		events = w.lockEvents.ResultChan()
	}
	for {
		select {
		case <-ctx.Done():
			return false, ctx.Err()
		case <-t.C():
			return false, nil
		case ev, ok := <-events:
			if !ok {
				events = nil
				continue
			}
			w.onLockEvent(ev)
			if ev.Type == watch.Deleted && w.st.cm == nil {
				return true, nil
			}
			// NOTE: decoded through the client, which keeps the version for
			// the decision that follows.
			if cm := w.st.cm; cm != nil {
				if rec, err := w.c.decode(cm, w.req.Target); err == nil && record.Idle(rec) {
					return true, nil
				}
			}
		}
	}
}

// Pauses after transient API errors while waiting: the first, and the
// longest they grow to by doubling.
const (
	firstRetryDelay = 250 * time.Millisecond
	maxRetryDelay   = 5 * time.Second
)

// mayRetry reports whether err, met while waiting in the queue, is one to
// wait out rather than give up for: the API server unreachable, restarting,
// overloaded or failing (5xx, 429). A contender that has not joined the
// queue yet fails at once, so a wrong kubeconfig is reported at once.
func (w *waiter) mayRetry(ctx context.Context, err error) bool {
	return w.st.joined && ctx.Err() == nil && transient(err)
}

// transient reports whether err is an API failure that may pass: the API
// server unreachable, restarting, overloaded or failing (5xx, 429).
func transient(err error) bool {
	var status apierrors.APIStatus
	if errors.As(err, &status) {
		code := status.Status().Code
		return code >= 500 || code == 429
	}
	var netErr net.Error
	return errors.As(err, &netErr) || utilnet.IsConnectionRefused(err) ||
		utilnet.IsConnectionReset(err) || utilnet.IsProbableEOF(err)
}

// ambiguous reports whether a request that failed with err may still have
// been applied: its answer was lost (timeout, connection reset, EOF) or the
// server failed after accepting it (5xx). A refused connection or a 429 was
// never applied.
func ambiguous(err error) bool {
	if utilnet.IsConnectionRefused(err) || apierrors.IsTooManyRequests(err) {
		return false
	}
	return transient(err)
}

// pause waits after a transient error, doubling the previous delay up to
// maxRetryDelay, and returns the delay used; it returns ctx's error if ctx
// ends first. The waiter keeps its place meanwhile: the next step renews it
// or, if it expired, joins the queue again.
func (w *waiter) pause(ctx context.Context, prev time.Duration, cause error) (time.Duration, error) {
	d := min(max(2*prev, firstRetryDelay), maxRetryDelay)
	w.c.log.Warn(fmt.Sprintf("API call failed while waiting; trying again in %s", d), "lock", w.c.Describe(w.req.Target), "err", cause)
	t := w.c.clk.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return d, ctx.Err()
	case <-t.C():
		return d, nil
	}
}

// watchFrom watches the lock's turn object when deep, else the lock,
// stopping the other watch: a waiter deep in the queue does not receive
// the record at every write (see turn.go).
func (w *waiter) watchFrom(deep bool) {
	c := w.c
	cms := func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.cms.ConfigMaps(c.namespace).List(ctx, o)
	}
	watchCMs := func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return c.cms.ConfigMaps(c.namespace).Watch(ctx, o)
	}
	switch {
	case deep && w.turnEvents == nil:
		if w.lockEvents != nil {
			w.lockEvents.Stop()
			w.lockEvents = nil
		}
		w.turnEvents = w.watchOne(cms, watchCMs, record.TurnName(w.req.Target), &corev1.ConfigMap{})
	case !deep && w.lockEvents == nil:
		if w.turnEvents != nil {
			w.turnEvents.Stop()
			w.turnEvents = nil
		}
		w.lockEvents = w.watchOne(cms, watchCMs, record.Name(w.req.Target), &corev1.ConfigMap{})
	}
}

// next blocks until something may change the decision: a lock or pod event,
// the deadline at, or the end of ctx.
func (w *waiter) next(ctx context.Context, at time.Time) error {
	if w.lockEvents == nil {
		return w.nextDeep(ctx, at)
	}
	timer, stop := w.timerAt(at)
	defer stop()
	var podCh <-chan watch.Event
	if w.podEvents != nil {
		podCh = w.podEvents.ResultChan()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err := <-w.denied:
		return err
	case <-timer:
	case ev, ok := <-w.lockEvents.ResultChan():
		if !ok {
			return errors.New("lock watch closed")
		}
		w.onLockEvent(ev)
	case ev, ok := <-podCh:
		if !ok {
			return errors.New("holder pod watch closed")
		}
		w.onPodEvent(ev)
	}
	// Take whatever else is already queued, so one decision covers a burst.
	for {
		select {
		case ev := <-w.lockEvents.ResultChan():
			w.onLockEvent(ev)
		case ev := <-podCh:
			w.onPodEvent(ev)
		default:
			return nil
		}
	}
}

// timerAt returns a channel that fires at at (nil, never, when at is
// zero) and the function that stops its timer.
func (w *waiter) timerAt(at time.Time) (<-chan time.Time, func()) {
	if at.IsZero() {
		return nil, func() {}
	}
	t := w.c.clk.NewTimer(at.Sub(w.c.clk.Now()))
	return t.C(), func() { t.Stop() }
}

// nextDeep blocks, for a waiter deep in the queue, until it must decide
// again: the turn object names the waiter (it then watches the lock, and
// decides on the version that watch brings first), the turn object is
// gone, the deadline at (its renewal) comes, or the turn object has not
// changed for a waiter TTL (a writer that does not publish the turn may
// have moved the queue); but for the first, the lock is read again.
// Meanwhile the progress follows the turn object.
func (w *waiter) nextDeep(ctx context.Context, at time.Time) error {
	c := w.c
	renew, stop := w.timerAt(at)
	defer stop()
	quiet := c.clk.NewTimer(c.waiterTTL())
	defer quiet.Stop()
	for {
		select {
		case <-ctx.Done():
			return ctx.Err()
		case err := <-w.denied:
			return err
		case <-renew:
			w.st.reread()
			return nil
		case <-quiet.C():
			w.st.reread()
			return nil
		case ev, ok := <-w.turnEvents.ResultChan():
			if !ok {
				return errors.New("turn watch closed")
			}
			if ev.Type == watch.Deleted {
				w.st.reread()
				return nil
			}
			if w.onTurnEvent(ev) {
				// At the head: watch the lock, and decide on the version
				// its watch starts with rather than read it as well.
				w.watchFrom(false)
				return w.firstLockEvent(ctx, renew, quiet.C())
			}
			quiet.Reset(c.waiterTTL())
		}
	}
}

// firstLockEvent waits for the first version of the lock the watch brings
// (its initial list) and takes it as the version to decide on; if renew
// or quiet comes first, the lock is read instead.
func (w *waiter) firstLockEvent(ctx context.Context, renew, quiet <-chan time.Time) error {
	select {
	case <-ctx.Done():
		return ctx.Err()
	case err := <-w.denied:
		return err
	case <-renew:
	case <-quiet:
	case ev, ok := <-w.lockEvents.ResultChan():
		if ok && ev.Type != watch.Deleted {
			w.onLockEvent(ev)
			return nil
		}
	}
	w.st.reread()
	return nil
}

// onTurnEvent takes a change of the lock's turn object, and reports
// whether the waiter is at the head now: the turn names it, or puts it
// there. Otherwise the waiters ahead of the turn's head in the queue last
// read are gone, and the progress says so.
func (w *waiter) onTurnEvent(ev watch.Event) bool {
	cm, ok := ev.Object.(*corev1.ConfigMap)
	if !ok || cm.Name != record.TurnName(w.req.Target) {
		return false
	}
	t, ok := readTurn(cm)
	if !ok {
		return false
	}
	if t.names(w.me.ClaimID) {
		return true
	}
	p := moved(w.st.last, t, w.c.clk.Now())
	if p == nil {
		return false
	}
	if p.Position <= record.HeadWatchers {
		return true
	}
	if w.req.Callbacks.OnProgress != nil && !sameProgress(w.st.last, p) {
		w.req.Callbacks.OnProgress(*p)
	}
	w.st.reported(p)
	return false
}

// moved returns the progress last after turn t, read at now: the waiters
// ahead of t's first waiter in last's queue are gone (served, or left),
// and t's holder, when it was one of them, holds the lock since about now.
// nil when t says nothing of last's queue.
func moved(last *Progress, t turn, now time.Time) *Progress {
	if last == nil || len(t.head) == 0 {
		return nil
	}
	i := slices.IndexFunc(last.Ahead, func(c record.Claim) bool { return c.ClaimID == t.head[0] })
	if i <= 0 {
		return nil
	}
	p := *last
	if h := slices.IndexFunc(last.Ahead[:i], func(c record.Claim) bool { return c.ClaimID == t.holder }); h >= 0 {
		p.Holder, p.HolderAlive = last.Ahead[h], true
	}
	p.Ahead = last.Ahead[i:]
	p.Position = last.Position - i
	if p.Wait != nil {
		in := *p.Wait
		in.Ahead = p.Position - 1
		if p.Holder.ClaimID != last.Holder.ClaimID {
			in.HolderSince = &now
		}
		p.Wait = &in
	}
	return &p
}

func (w *waiter) onLockEvent(ev watch.Event) {
	cm, ok := ev.Object.(*corev1.ConfigMap)
	if !ok || cm.Name != record.Name(w.req.Target) {
		return
	}
	w.st.event(ev.Type, cm)
}

func (w *waiter) onPodEvent(ev watch.Event) {
	pod, ok := ev.Object.(*corev1.Pod)
	if !ok || w.podRef == nil || pod.Name != w.podRef.Name {
		return
	}
	if ev.Type == watch.Deleted {
		w.pod = nil
		return
	}
	w.pod = pod
}

// followHolderPod (re)starts the watch of the holder's pod when the holder
// changes.
func (w *waiter) followHolderPod(ref *record.PodRef) {
	if ref != nil && w.podRef != nil && *ref == *w.podRef {
		return
	}
	if w.podEvents != nil {
		w.podEvents.Stop()
		w.podEvents, w.pod = nil, nil
	}
	w.podRef = nil
	if ref == nil {
		return
	}
	r := *ref
	w.podRef = &r
	pods := w.c.pods.Pods(r.Namespace)
	w.podEvents = w.watchOne(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return pods.List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return pods.Watch(ctx, o)
	}, r.Name, &corev1.Pod{})
}

// giveUp leaves the queue, with a fresh short context since ctx may be
// over, and returns err.
func (w *waiter) giveUp(err error) error {
	// A first write whose answer was lost may have queued us all the same.
	if !w.st.joined && !ambiguous(err) {
		return err
	}
	var sup *SupersededError
	if errors.As(err, &sup) {
		return err // the superseding write already removed us
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	if lerr := w.c.leave(ctx, w.req.Target, w.me.ClaimID); lerr != nil {
		w.c.log.Warn("could not leave the queue; the place expires by itself", "lock", w.c.Describe(w.req.Target), "err", lerr)
	}
	return err
}

func (w *waiter) waitError(ctx context.Context, err error, holder record.Claim) error {
	if errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &TimeoutError{Target: w.req.Target, Holder: holder, Waited: w.c.clk.Since(w.st.started), Freeze: w.st.freeze}
	}
	return fmt.Errorf("wait for lock %s: %w", w.c.Describe(w.req.Target), err)
}

// watchOne watches the single object called name through an informer, which
// lists again and re-establishes its watch by itself. A list or watch the
// API server refuses for lack of permission is reported on w.denied.
func (w *waiter) watchOne(list cache.ListWithContextFunc, wat cache.WatchFuncWithContext, name string, obj runtime.Object) watch.Interface {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	deny := func(err error) {
		if apierrors.IsForbidden(err) || apierrors.IsUnauthorized(err) {
			select {
			case w.denied <- err:
			default:
			}
		}
	}
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			out, err := list(ctx, o)
			deny(err)
			return out, err
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			out, err := wat(ctx, o)
			deny(err)
			return out, err
		},
	}
	_, _, events, _ := watchtools.NewIndexerInformerWatcher(lw, obj)
	return events
}

// report tells req.OnProgress of the wait after res, when it changed since
// last, and returns what was reported last.
func (w *waiter) report(res *stepResult, last *Progress) *Progress {
	p := res.progress(w.c, w.req.Target, w.st.started)
	if p == nil || w.req.Callbacks.OnProgress == nil || sameProgress(last, p) {
		return last
	}
	w.req.Callbacks.OnProgress(*p)
	return p
}

func sameProgress(a, b *Progress) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Holder.ClaimID == b.Holder.ClaimID && a.HolderAlive == b.HolderAlive &&
		a.Position == b.Position && len(a.Ahead) == len(b.Ahead) && a.Freeze.Same(b.Freeze)
}

// saw notes the holder of a version of the lock the waiter read, so that a
// wait that times out before the waiter joins the queue still says who held
// the lock.
func (w *waiter) saw(cm *corev1.ConfigMap) {
	if cm == nil {
		return
	}
	if rec, err := w.c.decode(cm, w.req.Target); err == nil {
		w.st.saw(rec.HolderOrNone())
	}
}
