package lock

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// acquireNow takes the lock for me if that needs no waiting; otherwise it
// returns a *HeldError (or a *SupersededError) and writes nothing.
func (c *Client) acquireNow(ctx context.Context, req Request, me Claim) (*Held, error) {
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
func (c *Client) acquireOnce(ctx context.Context, req Request, me Claim, background bool) (*stepResult, error) {
	var res *stepResult
	err := c.update(ctx, "acquire", req.Target, nil, func(cm *corev1.ConfigMap) (change, error) {
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
func (c *Client) claim(ctx context.Context, req Request) (Claim, error) {
	if err := req.Identity.Validate(); err != nil {
		return Claim{}, fmt.Errorf("invalid holder identity: %w", err)
	}
	if req.Target == "" {
		return Claim{}, errors.New("no target namespace given")
	}
	if _, err := ParsePriority(string(req.Priority)); err != nil {
		return Claim{}, err
	}
	me := Claim{Identity: req.Identity, CIJob: req.Job, User: req.User, ClaimID: req.ClaimID, Unordered: req.Unordered, Priority: req.Priority.stored(), IgnoreFreeze: req.IgnoreFreeze, target: req.Target,
		Cancelable: req.Cancelable, cancelInProgress: req.CancelInProgress}
	if me.ClaimID == "" {
		me.ClaimID = newSession()
	}
	me.TTL = metav1.Duration{Duration: req.TTL}
	if me.TTL.Duration <= 0 {
		me.TTL.Duration = DefaultTTL
	}
	if req.Pod != nil {
		ref := *req.Pod
		if ref.UID == "" {
			pod, err := c.pods.Pods(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
			if err != nil {
				return Claim{}, fmt.Errorf("look up holder pod %s: %w", ref, err)
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
	rec      *Record
	decision Decision
	held     *Held
	// events is closed once the Events of the write, recorded in the
	// background, are written; nil when they were recorded before.
	events <-chan struct{}
	// mustLook and runMark are what takeRunJobs decided for an
	// acquisition: whether to look for jobs left behind, and the mark
	// left pending.
	mustLook bool
	runMark  string
}

func (r *stepResult) progress(c *Client, target string, started time.Time) *Progress {
	if r.rec == nil {
		return nil
	}
	p := &Progress{
		Target:      target,
		Holder:      r.rec.holderOrNone(),
		HolderAlive: r.decision.StaleHolder == nil || r.decision.HandedTo != nil,
		Position:    r.decision.Position,
		Started:     started,
		Freeze:      r.decision.Freeze,
	}
	if p.Position > 0 {
		p.Ahead = append([]Claim(nil), r.rec.Waiters[:p.Position-1]...)
		p.Wait = &EstimateInput{Target: target, History: r.rec.History, Ahead: p.Position - 1, Freeze: r.rec.Freeze, Windows: c.freezeWindows()}
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
func (c *Client) step(ctx context.Context, req Request, me Claim, cm *corev1.ConfigMap, pod *corev1.Pod) (*stepResult, error) {
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
func (c *Client) acquireChange(ctx context.Context, req Request, me Claim, cm *corev1.ConfigMap, pod *corev1.Pod, background bool) (*stepResult, change, error) {
	res, why, err := c.judge(ctx, req, me, cm, pod)
	if err != nil {
		return nil, change{}, err
	}
	d := res.decision
	if d.Outcome == Acquired && req.OnTaking != nil && res.mustLook {
		req.OnTaking()
	}
	judged := res.rec
	stored := func(ctx context.Context, written *corev1.ConfigMap) {
		if d.Record == nil {
			return
		}
		res.cm, res.rec = written, d.Record
		if background && c.events != nil && d.Outcome == Acquired {
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
func (c *Client) judge(ctx context.Context, req Request, me Claim, cm *corev1.ConfigMap, pod *corev1.Pod) (*stepResult, string, error) {
	var cur *Record
	if cm != nil {
		rec, err := c.decode(cm, req.Target)
		if err != nil {
			return nil, "", err
		}
		cur = rec
	}
	now := c.clk.Now()
	alive, recheck, why := true, time.Time{}, ""
	if cur != nil && !cur.IsFree() {
		var err error
		alive, recheck, why, err = c.holderAlive(ctx, cur.Holder, pod, now)
		if err != nil {
			return nil, "", err
		}
	}
	policy := req.Policy
	if cur != nil && (!cur.IsFree() || len(cur.Waiters) > 0) {
		// A frozen free lock keeps its queue, and the policy it was made with.
		policy = cur.Policy
	} else if policy == "" {
		policy = PolicyNewest
	}
	cur = c.withWindows(cur, req.Target, policy, now)
	d := Decide(cur, me, policy, now, alive, c.waiterTTL())
	if d.Freeze != nil {
		// Shown to the contender: until when the lock really stays frozen.
		d.Freeze = effectiveFreeze(d.Freeze, c.freezeWindows(), req.Target, now)
	}
	if req.NoWait && d.Outcome == Waiting {
		// Joining the queue would mean waiting: write nothing.
		h := cur.holderOrNone()
		if d.HandedTo != nil {
			h = *d.HandedTo
		}
		return nil, "", &HeldError{Target: req.Target, Holder: h, Waiters: len(cur.Waiters), Freeze: d.Freeze}
	}
	if d.Outcome == Waiting && d.Record != nil && cur != nil && cur.Position(me.ClaimID) == 0 {
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
		c.log.WithField("lock", c.Describe(req.Target)).WithField("holder", d.StaleHolder.Identity.String()).Debug("holder is no longer alive")
	}
	if d.RanAgain {
		why = "its job runs again: " + me.CIJob.Describe()
	}
	endStaleHold(d, me, why)
	mustLook, mark := takeRunJobs(cur, &d, me, req.RunJobs, now)
	return &stepResult{cm: cm, rec: cur, decision: d, mustLook: mustLook, runMark: mark}, why, nil
}

// queueRoom returns a *QueueFullError when d, which queues a contender not
// yet in cur's queue, makes the record larger than MaxQueueBytes.
func queueRoom(target string, cur *Record, d Decision) error {
	raw, err := json.Marshal(d.Record)
	if err != nil {
		return fmt.Errorf("encode lock record: %w", err)
	}
	if len(raw) <= MaxQueueBytes {
		return nil
	}
	h := cur.holderOrNone()
	if d.HandedTo != nil {
		h = *d.HandedTo
	}
	return &QueueFullError{Target: target, Holder: h, Waiters: len(cur.Waiters), Bytes: len(raw)}
}

// endStaleHold writes the end of a stale holder's hold into the history of
// the record d decided, when it removes one: who takes it next (a waiter
// handed the lock, or me) and why the holder was stale.
func endStaleHold(d Decision, me Claim, why string) {
	if d.StaleHolder == nil || d.Record == nil {
		return
	}
	by := ""
	if d.HandedTo != nil {
		by = d.HandedTo.Identity.String()
	} else if d.Outcome == Acquired {
		by = me.Identity.String()
	}
	ending := staleEnding(*d.StaleHolder)
	if d.RanAgain {
		ending = EndRanAgain
	}
	d.Record.ended(*d.StaleHolder, d.Record.Updated, ending, by, why)
}

// settle turns a written decision into its result: the Held of a contender
// that holds the lock, or a *SupersededError.
func (c *Client) settle(ctx context.Context, req Request, me Claim, res *stepResult) error {
	log := c.log.WithField("lock", c.Describe(req.Target)).WithField("holder", me.Identity.String())
	d := res.decision
	switch d.Outcome {
	case Acquired:
		// The take-over write's version, or the token recorded since.
		token := res.rec.Holder.Token
		if token == "" {
			token = res.cm.ResourceVersion
		}
		res.held = &Held{
			Target:    req.Target,
			Namespace: c.namespace,
			Name:      res.cm.Name,
			UID:       res.cm.UID,
			ClaimID:   res.rec.Holder.ClaimID,
			Holder:    res.rec.Holder,
			Token:     token,
			Reentered: d.Reentered,
			Vouched:   !res.mustLook,
			last:      &lastSeen{cm: res.cm},
			events:    res.events,
			runJobs:   req.RunJobs,
			runMark:   res.runMark,
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
	case Superseded:
		c.event(ctx, res.cm, false, reasonSuperseded, fmt.Sprintf("%s gave up: superseded by %s", me.Identity, d.By.Identity))
		return &SupersededError{Target: req.Target, By: *d.By, Holding: d.By.ClaimID == res.rec.Holder.ClaimID}
	}
	return nil
}
