package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/liveness"
	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// acquireNow takes the lock for me if that needs no waiting; otherwise it
// returns a *HeldError (or a *SupersededError) and writes nothing.
func (c *Client) acquireNow(ctx context.Context, req Request, me record.Claim) (*Held, error) {
	res, err := c.acquireOnce(ctx, req, me, true)
	if err != nil {
		return nil, err
	}
	return res.held, nil
}

// TryAcquire takes one step towards the lock: it takes it if it is free,
// or joins (or keeps) the queue. It never waits for the lock. The returned
// Progress is set when the caller is queued. Call it again with the same
// req.ClaimID to stay queued (each call renews the place).
func (c *Client) TryAcquire(ctx context.Context, req Request) (*Held, *Progress, error) {
	me, err := c.claim(ctx, req)
	if err != nil {
		return nil, nil, err
	}
	now := c.clk.Now()
	res, err := c.acquireOnce(ctx, req, me, false)
	if err != nil {
		return nil, nil, err
	}
	if res.held != nil {
		res.held.Waited = 0
		return res.held, nil, nil
	}
	return nil, res.progress(c, req.Target, now), nil
}

// acquireOnce decides and writes for me on fresh reads of the lock until a
// write is not lost (Client.update). background records the Events of an
// acquisition in the background (see acquireChange).
func (c *Client) acquireOnce(ctx context.Context, req Request, me record.Claim, background bool) (*stepResult, error) {
	var res *stepResult
	err := c.update(ctx, "acquire", req.Target, req.known, func(cm *corev1.ConfigMap) (change, error) {
		var (
			ch  change
			err error
		)
		res, ch, err = c.acquireChange(ctx, req, me, cm, nil, background)
		return ch, err
	})
	if err != nil {
		return nil, err
	}
	return res, c.settle(ctx, req, me, res)
}

// claim builds the contender's claim from req.
func (c *Client) claim(ctx context.Context, req Request) (record.Claim, error) {
	if err := req.Identity.Validate(); err != nil {
		return record.Claim{}, fmt.Errorf("invalid holder identity: %w", err)
	}
	if req.Target == "" {
		return record.Claim{}, errors.New("no target namespace given")
	}
	if _, err := record.ParsePriority(string(req.Priority)); err != nil {
		return record.Claim{}, err
	}
	if len(req.Apps) > record.MaxApps {
		return record.Claim{}, fmt.Errorf("%d applications named, more than the %d a hold may name", len(req.Apps), record.MaxApps)
	}
	me := record.Claim{Identity: req.Identity, CIJob: req.Job, RunURL: req.RunURL, User: req.User, Apps: record.AppStrings(req.Apps), ClaimID: req.ClaimID, Unordered: req.Unordered, Priority: req.Priority.Stored(), IgnoreFreeze: req.IgnoreFreeze, Target: req.Target,
		Cancelable: req.Cancelable, CancelInProgress: req.CancelInProgress}
	if me.ClaimID == "" {
		me.ClaimID = newSession()
	}
	me.TTL = metav1.Duration{Duration: req.TTL}
	if me.TTL.Duration <= 0 {
		me.TTL.Duration = record.DefaultTTL
	}
	if req.Pod != nil {
		ref := *req.Pod
		if ref.UID == "" {
			pod, err := c.pods.Pods(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return record.Claim{}, fmt.Errorf("look up holder pod %s: %w", ref, err)
			}
			ref.UID = pod.UID
		}
		me.Pod = &ref
	}
	return me, nil
}

// stepResult is the outcome of one decide-and-write round.
type stepResult struct {
	cm       *corev1.ConfigMap // the lock after the round; nil if none
	rec      *record.Record
	decision record.Decision
	held     *Held
	// events is closed once the Events of the write, recorded in the
	// background, are written; nil when they were recorded before.
	events <-chan struct{}
	// mustLook and ledgerMark are what takeLedger decided for an
	// acquisition: whether to look for what earlier holders left behind,
	// and the mark left in the ledger.
	mustLook   bool
	ledgerMark string
}

func (r *stepResult) progress(c *Client, target string, started time.Time) *Progress {
	if r.rec == nil {
		return nil
	}
	p := &Progress{
		Context:     c.opts.Context,
		Target:      target,
		Holder:      r.rec.HolderOrNone(),
		HolderAlive: r.decision.StaleHolder == nil || r.decision.HandedTo != nil,
		Position:    r.decision.Position,
		Started:     started,
		Freeze:      r.decision.Freeze,
	}
	if p.Position > 0 {
		p.Ahead = append([]record.Claim(nil), r.rec.Waiters[:p.Position-1]...)
		p.Wait = &record.EstimateInput{Target: target, History: r.rec.History, Ahead: p.Position - 1, Freeze: r.rec.Freeze, Windows: c.freezeWindows()}
		if p.Held() && p.HolderAlive {
			since := p.Holder.Since.Time
			p.Wait.HolderSince = &since
		}
	}
	return p
}

// step decides on cm (nil when there is no lock) and writes the decision,
// once: a write lost to another returns errRetry. pod is the latest known
// state of the holder's pod, if any. It is Acquire's: the Events of an
// acquisition are recorded in the background.
func (c *Client) step(ctx context.Context, req Request, me record.Claim, cm *corev1.ConfigMap, pod *corev1.Pod) (*stepResult, error) {
	res, ch, err := c.acquireChange(ctx, req, me, cm, pod, true)
	if err != nil {
		return nil, err
	}
	if err := c.apply(ctx, req.Target, cm, ch); err != nil {
		return nil, err
	}
	return res, c.settle(ctx, req, me, res)
}

// acquireChange judges the lock cm for contender me (decide) and returns
// the change that carries the decision out: OnTaking is called before a
// write that makes me the holder, and the stored hook records the Events
// of the write: those of an acquisition in the background when background
// (Acquire, whose Held waits for them: Held.WaitEvents, ReleaseHeld).
func (c *Client) acquireChange(ctx context.Context, req Request, me record.Claim, cm *corev1.ConfigMap, pod *corev1.Pod, background bool) (*stepResult, change, error) {
	res, why, err := c.judge(ctx, req, me, cm, pod)
	if err != nil {
		return nil, change{}, err
	}
	d := res.decision
	if d.Outcome == record.Acquired && req.Callbacks.OnTaking != nil && res.mustLook {
		req.Callbacks.OnTaking()
	}
	judged := res.rec
	stored := func(ctx context.Context, written *corev1.ConfigMap) {
		if d.Record == nil {
			return
		}
		res.cm, res.rec = written, d.Record
		if background && c.events != nil && d.Outcome == record.Acquired {
			// NOTE: the holder's work starts a round trip sooner; ReleaseHeld
			// waits for these Events before its own, so a lock's Events keep
			// their order.
			done := make(chan struct{})
			snap := *res
			go func() {
				defer close(done)
				c.stepEvents(context.WithoutCancel(ctx), &snap, judged, me, why)
			}()
			res.events = done
		} else {
			c.stepEvents(ctx, res, judged, me, why)
		}
		if d.CancelRequested != nil {
			c.event(ctx, res.cm, false, reasonCancelRequested, fmt.Sprintf("%s asked %s to stop (cancel-in-progress)", me.Identity, d.CancelRequested.Identity))
		}
	}
	return res, change{Decision: d, stored: stored}, nil
}

// judge decides on the lock cm for contender me: it reads the record,
// judges its holder, applies the freeze windows and Decide, and writes the
// end of a stale holder's hold into the decided record's history. why says
// what made the holder stale.
func (c *Client) judge(ctx context.Context, req Request, me record.Claim, cm *corev1.ConfigMap, pod *corev1.Pod) (*stepResult, string, error) {
	var cur *record.Record
	if cm != nil {
		rec, err := c.decode(cm, req.Target)
		if err != nil {
			return nil, "", err
		}
		cur = rec
	}
	enforced := c.enforcedLock(cm, req.Target)
	if me.User == "" && req.Callbacks.LookupUser != nil && enforced {
		u := req.Callbacks.LookupUser(ctx)
		me.User, me.Credential = u.Name, u.Credential
	}
	now := c.clk.Now()
	alive, recheck, why := true, time.Time{}, ""
	if cur != nil && !cur.IsFree() {
		var err error
		alive, recheck, why, err = c.holderAlive(ctx, cur.Holder, pod, now, enforced)
		if err != nil {
			return nil, "", err
		}
	}
	policy := req.Policy
	if cur != nil && (!cur.IsFree() || len(cur.Waiters) > 0) {
		// A frozen free lock keeps its queue, and the policy it was made with.
		policy = cur.Policy
	} else if policy == "" {
		policy = record.PolicyNewest
	}
	cur = c.withWindows(cur, req.Target, policy, now)
	d := record.Decide(cur, me, policy, now, alive, c.waiterTTL())
	if d.Freeze != nil {
		// Shown to the contender: until when the lock really stays frozen.
		d.Freeze = record.EffectiveFreeze(d.Freeze, c.freezeWindows(), req.Target, now)
	}
	if req.NoWait && d.Outcome == record.Waiting {
		// Joining the queue would mean waiting: write nothing.
		h := cur.HolderOrNone()
		if d.HandedTo != nil {
			h = *d.HandedTo
		}
		return nil, "", &HeldError{Target: req.Target, Holder: h, Waiters: len(cur.Waiters), Freeze: d.Freeze}
	}
	if d.Outcome == record.Waiting && d.Record != nil && cur != nil && cur.Position(me.ClaimID) == 0 {
		if err := queueRoom(req.Target, cur, d); err != nil {
			return nil, "", err
		}
	}
	if !recheck.IsZero() && (d.NextCheck.IsZero() || recheck.Before(d.NextCheck) || !d.NextCheck.After(now)) {
		// A grace period of the holder's pod ends, or the holder's expiry
		// is surely past: take over then, not at the next renewal.
		d.NextCheck = recheck
	}
	if d.StaleHolder != nil {
		c.log.Debug("holder is no longer alive", "lock", c.Describe(req.Target), "holder", d.StaleHolder.Identity.String())
	}
	if d.RanAgain {
		why = "its job runs again: " + me.CIJob.Describe()
	}
	endStaleHold(d, me, why)
	mustLook, mark, err := takeLedger(cur, &d, me, req.Ledger, now)
	if err != nil {
		return nil, "", fmt.Errorf("lock %s: %w", c.Describe(req.Target), err)
	}
	return &stepResult{cm: cm, rec: cur, decision: d, mustLook: mustLook, ledgerMark: mark}, why, nil
}

// queueRoom returns a *QueueFullError when d, which queues a contender not
// yet in cur's queue, makes the record larger than MaxQueueBytes. The
// queue goes before the history's oldest holds: those beyond the newest
// KeptHistory are dropped from d's record, oldest first, until it fits.
func queueRoom(target string, cur *record.Record, d record.Decision) error {
	raw, err := json.Marshal(d.Record)
	for err == nil && len(raw) > record.MaxQueueBytes && len(d.Record.History) > record.KeptHistory {
		drop := max(min(len(d.Record.History)-record.KeptHistory, (len(raw)-record.MaxQueueBytes)/record.HistoryEntryBytes), 1)
		d.Record.History = d.Record.History[drop:]
		raw, err = json.Marshal(d.Record)
	}
	if err != nil {
		return fmt.Errorf("encode lock record: %w", err)
	}
	if len(raw) <= record.MaxQueueBytes {
		return nil
	}
	h := cur.HolderOrNone()
	if d.HandedTo != nil {
		h = *d.HandedTo
	}
	return &QueueFullError{Target: target, Holder: h, Waiters: len(cur.Waiters), Bytes: len(raw)}
}

// endStaleHold writes the end of a stale holder's hold into the history of
// the record d decided, when it removes one: who takes it next (a waiter
// handed the lock, or me) and why the holder was stale.
func endStaleHold(d record.Decision, me record.Claim, why string) {
	if d.StaleHolder == nil || d.Record == nil {
		return
	}
	by := ""
	if d.HandedTo != nil {
		by = d.HandedTo.Identity.String()
	} else if d.Outcome == record.Acquired {
		by = me.Identity.String()
	}
	ending := record.StaleEnding(*d.StaleHolder)
	if d.RanAgain {
		ending = record.EndRanAgain
	}
	d.Record.Ended(*d.StaleHolder, d.Record.Updated, ending, by, why)
}

// settle turns a written decision into its result: the Held of a contender
// that holds the lock, or a *SupersededError.
func (c *Client) settle(ctx context.Context, req Request, me record.Claim, res *stepResult) error {
	log := c.log.With("lock", c.Describe(req.Target), "holder", me.Identity.String())
	d := res.decision
	switch d.Outcome {
	case record.Acquired:
		// The take-over write's version, or the token recorded since.
		token := res.rec.Holder.Token
		if token == "" {
			token = res.cm.ResourceVersion
		}
		res.held = &Held{
			Context:    c.opts.Context,
			Target:     req.Target,
			Namespace:  c.namespace,
			Name:       res.cm.Name,
			UID:        res.cm.UID,
			ClaimID:    res.rec.Holder.ClaimID,
			Holder:     res.rec.Holder,
			Token:      token,
			Reentered:  d.Reentered,
			Vouched:    !res.mustLook,
			last:       &lastSeen{cm: res.cm},
			events:     res.events,
			ledger:     req.Ledger,
			ledgerMark: res.ledgerMark,
		}
		if f := res.rec.Freeze; f != nil && (d.TookOver || d.Confirmed) && res.rec.Holder.IgnoredFreeze != "" {
			res.held.IgnoredFreeze = f
			log.Warn("took a frozen lock (--ignore-freeze): " + f.Describe())
		}
		if d.Reentered {
			log.Debug("lock already held by this build")
		} else {
			log.Debug("lock acquired")
		}
	case record.Superseded:
		c.event(ctx, res.cm, false, reasonSuperseded, fmt.Sprintf("%s gave up: superseded by %s", me.Identity, d.By.Identity))
		return &SupersededError{Target: req.Target, By: *d.By, holding: d.By.ClaimID == res.rec.Holder.ClaimID}
	}
	return nil
}

// Callbacks are the hooks a Request hands the lock client, as client-go's
// leaderelection.LeaderCallbacks are a LeaderElectionConfig's. Each is
// optional: nil means no hook.
type Callbacks struct {
	// LookupUser, when set and Request.User is "", tells the contender's
	// user on demand: asked only when the lock read carries
	// EnforcedAnnotation, so a lock that is not enforced costs no request
	// for it. It is asked on every decision on such a lock; the caller
	// remembers the answer.
	LookupUser func(ctx context.Context) record.User
	// OnProgress, when set, is called each time the contender's view of the
	// lock changes while it waits.
	OnProgress func(Progress)
	// OnTaking, when set, is called just before each write that makes the
	// contender the holder, and before Acquire returns a hold it re-entered
	// without a write: the lock was last read free, its holder no longer
	// alive, or handed to the contender, so no other holder can act from
	// then on. Work that must only start once no other holder is live (a
	// look for what earlier holders left behind) may start then, beside the
	// write; if the write is lost, OnTaking is called again before the next.
	// With a Ledger, it is called only when the Ledger says the contender
	// must look (Ledger.Take).
	// A hold that begins with a hand-over (see Acquire) calls it once the
	// waiter sees the hand-over, before Acquire returns.
	OnTaking func()
}

// Request describes a contender.
type Request struct {
	// Target is the namespace to lock.
	Target string
	record.Identity
	// User is the contender's authenticated Kubernetes user (a
	// SelfSubjectReview's username), recorded with its claim; an enforced
	// lock admits the holder's writes by it (docs/enforcement.md). ""
	// records none: the holder of an enforced lock is then known by its
	// fencing token alone.
	User string
	// Apps are the GitOps applications the contender deploys, recorded
	// with its claim (Claim.Apps): an enforced lock admits a GitOps
	// controller's writes of their objects while the contender holds it
	// (docs/enforcement.md). At most 16; none names no application.
	Apps []record.App
	// Pod, when set, is the pod the contender runs in (namespace and name;
	// the UID is looked up). The lock then lives as long as that pod.
	Pod *record.PodRef
	// TTL is how long the lock lasts without a pod; 0 means DefaultTTL.
	TTL time.Duration
	// Policy applies when this request creates the lock; an existing lock
	// keeps the policy it was created with. "" means PolicyNewest.
	Policy record.Policy
	// Priority places the contender in the queue: ahead of waiters of a
	// lower effective priority (see Claim.Priority). "" means
	// PriorityNormal. It never displaces the holder.
	Priority record.Priority
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
	Job record.CIJob
	// RunURL is the web page of the contender's CI run, recorded with its
	// claim (Claim.RunURL); "" for none.
	RunURL string
	// Unordered says the build number only tells this contender apart
	// (a developer's terminal, a CI without a build counter): it is served
	// first come, first served and never supersedes nor is superseded.
	Unordered bool
	// ClaimID identifies this contender's claim (Claim.ClaimID); "" means a
	// random one. Reuse it to make TryAcquire calls of one contender
	// idempotent.
	ClaimID string
	// NoWait makes Acquire try once: it takes the lock if that needs no
	// waiting, and otherwise returns a *HeldError without joining the
	// queue or writing anything.
	NoWait bool
	// Callbacks are the caller's hooks into the acquisition; the zero
	// value sets none.
	Callbacks Callbacks
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
	// Ledger, when set, keeps the contender's own bookkeeping in the lock's
	// record beside its hold (lockctl run's account of run jobs, package
	// runjobs); Held.Vouched then says whether it need not look for what
	// earlier holders left behind. nil keeps none, and a lock taken so
	// drops the one it had.
	Ledger Ledger

	// known, when set, reads the lock for a try without waiting (NoWait):
	// the newest version a lookout has seen (AcquireAcross).
	known reader
}

// Progress is what a waiting contender knows.
type Progress struct {
	// Context is the kubeconfig context of the lock's cluster in a hold
	// across clusters (Options.Context); "" for one cluster.
	Context string
	Target  string
	// Unreachable is set, in a hold across clusters (AcquireAcross), while
	// the lock's API server has not answered: why ("no answer for 5s", or
	// the error of the last request). The contender tries again until its
	// context ends; the other fields are then zero but Started.
	Unreachable string
	// Holder is the current holder.
	Holder record.Claim
	// HolderAlive is false when the holder is stale and about to be replaced.
	HolderAlive bool
	// Position is the contender's 1-based place in the queue.
	Position int
	// Ahead are the waiters in front of the contender.
	Ahead []record.Claim
	// Started is when the contender started waiting.
	Started time.Time
	// Freeze is set while the lock is frozen: the contender waits for it
	// to end even when nobody holds the lock (Holder.ClaimID is then "").
	Freeze *record.Freeze
	// Wait is what the estimate of the contender's wait is made from (see
	// Estimate); nil when there is nothing to make it from.
	Wait *record.EstimateInput
}

// Estimate is the contender's wait for its turn as EstimateWait sees it
// at now; nil when the history says nothing.
func (p *Progress) Estimate(now time.Time) *record.Estimate {
	if p.Wait == nil {
		return nil
	}
	in := *p.Wait
	in.Now = now
	return record.EstimateWait(in)
}

// Held reports whether anyone holds the lock; a frozen lock may wait with
// nobody holding it.
func (p *Progress) Held() bool { return p.Holder.Identity != (record.Identity{}) }

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
	w := newWaiter(c, req, record.Claim{})
	defer w.stop()
	w.st.start(c.clk.Now())
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
		err = &TimeoutError{Target: req.Target, Holder: w.st.holder, Waited: c.clk.Since(w.st.started), Freeze: w.st.freeze}
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
func (c *Client) holderAlive(ctx context.Context, h record.Claim, pod *corev1.Pod, now time.Time, enforced bool) (alive bool, recheck time.Time, why string, err error) {
	if h.Pod == nil {
		// NOTE: an expiry counts as passed only once the earliest the API
		// server's time may be has passed it, so a clock estimate running
		// ahead never takes a live lock early; until then it is judged
		// again when that is sure. On an enforced lock the API server
		// judges it too, at its stamp of the write, which keeps whole
		// seconds.
		slack := c.clockSlack()
		if enforced {
			slack += stampResolution
		}
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
			c.log.Debug("cannot read nodes; judging holder pods by their own conditions (docs/rbac.md has the optional ClusterRole)", "err", err)
		}
	default:
		c.log.Debug("cannot read the holder pod's node; judging it by its own conditions", "err", err)
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

// withWindows returns cur frozen as the freeze windows say at now, when no
// freeze of its own holds it: a copy, or a new free lock of policy when
// there is none, so that the decision on it writes the window's freeze.
// cur itself when no window applies.
func (c *Client) withWindows(cur *record.Record, target string, policy record.Policy, now time.Time) *record.Record {
	ws := c.freezeWindows()
	if ws == nil {
		return cur
	}
	if cur == nil {
		f := record.WindowFreeze(ws, target, now)
		if f == nil {
			return nil
		}
		ts := metav1.NewMicroTime(now)
		rec := &record.Record{Target: target, Policy: policy, Updated: ts}
		rec.Free(ts)
		rec.Freeze = f
		return rec
	}
	rec := cur.DeepCopy()
	dropped := rec.DropLapsedWindow(ws, now)
	if !rec.ApplyWindows(ws, now) && !dropped {
		return cur
	}
	return rec
}
