package lock

import (
	"context"
	"fmt"
	"strings"

	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
)

// Reasons of the Events a Client records on a lock's ConfigMap (see
// Options.Events); `kubectl get events --field-selector
// involvedObject.name=lockctl-lock-TARGET` lists them.
const (
	// reasonAcquired: a contender took the lock, or confirmed a hand-over.
	reasonAcquired = "Acquired"
	// reasonHandedOver: the lock went to the first waiter, on a release or
	// when its holder was stale.
	reasonHandedOver = "HandedOver"
	// reasonReleased: the holder released the lock and nobody waited.
	reasonReleased = "Released"
	// reasonForceReleased (a warning): someone else broke the lock with
	// --force, or deleted a lock this lockctl cannot read.
	reasonForceReleased = "ForceReleased"
	// reasonStaleHolderRemoved (a warning): a contender found the holder
	// no longer alive (expired, pod gone or finished, node lost) and took
	// its place or handed it on.
	reasonStaleHolderRemoved = "StaleHolderRemoved"
	// reasonSuperseded: a contender gave up because a newer build of its
	// branch waits or holds the lock.
	reasonSuperseded = "Superseded"
	// reasonCancelRequested: a newer build with cancel-in-progress asked
	// the holder, an older lockctl run of its branch, to stop.
	reasonCancelRequested = "CancelRequested"
	// reasonFrozen: someone froze the lock (lockctl freeze).
	reasonFrozen = "Frozen"
	// reasonUnfrozen: someone lifted the freeze (lockctl unfreeze).
	reasonUnfrozen = "Unfrozen"
	// reasonFreezeIgnored (a warning): a contender took the frozen lock
	// with --ignore-freeze.
	reasonFreezeIgnored = "FreezeIgnored"
	// reasonBreakGlass (a warning): someone declared break-glass on an
	// enforced lock (lockctl break-glass): their writes of the target are
	// admitted whatever the lock says, until the grant ends.
	reasonBreakGlass = "BreakGlass"
)

// EventRecorder records an Event about a lock's ConfigMap. It must never
// fail nor block for long: an Event that cannot be written is the
// recorder's to log. *events.Recorder implements it.
type EventRecorder interface {
	Event(ctx context.Context, cm *corev1.ConfigMap, warning bool, action, reason, note string)
}

// event records one change of the lock cm, if the client has a recorder.
func (c *Client) event(ctx context.Context, cm *corev1.ConfigMap, warning bool, reason, note string) {
	if c.events == nil || cm == nil {
		return
	}
	c.events.Event(ctx, cm, warning, "Lock", reason, note)
}

// describeClaim renders a claim for an Event note: the identity, and the
// pod it lives in or its expiry.
func describeClaim(cl record.Claim) string {
	var more []string
	if cl.Known() {
		more = append(more, cl.CIJob.Describe())
	}
	if cl.Pod != nil {
		more = append(more, "pod "+cl.Pod.String())
	}
	if len(more) == 0 {
		return cl.Identity.String()
	}
	return fmt.Sprintf("%s (%s)", cl.Identity, strings.Join(more, ", "))
}

// stepEvents records what one written decision changed; cur is the record
// it was taken on, why what made its holder stale.
func (c *Client) stepEvents(ctx context.Context, res *stepResult, cur *record.Record, me record.Claim, why string) {
	d := res.decision
	if d.StaleHolder != nil {
		next := "taken by " + describeClaim(me)
		if d.HandedTo != nil {
			next = "handed over to " + describeClaim(*d.HandedTo)
		}
		c.event(ctx, res.cm, true, reasonStaleHolderRemoved,
			fmt.Sprintf("stale holder %s removed: %s; %s", describeClaim(*d.StaleHolder), why, next))
	}
	if d.HandedTo != nil && d.StaleHolder != nil {
		c.event(ctx, res.cm, false, reasonHandedOver,
			fmt.Sprintf("handed over from %s to %s", d.StaleHolder.Identity, describeClaim(*d.HandedTo)))
	}
	confirmed := cur != nil && cur.Holder.ClaimID == me.ClaimID
	switch {
	case d.HandedTo != nil && d.HandedTo.IgnoredFreeze != "":
		c.freezeIgnoredEvent(ctx, res.cm, *d.HandedTo)
	case d.Outcome == record.Acquired && d.TookOver && !confirmed && res.rec.Holder.IgnoredFreeze != "":
		c.freezeIgnoredEvent(ctx, res.cm, res.rec.Holder)
	}
	if d.Outcome == record.Acquired && (d.TookOver || d.Confirmed) {
		note := "acquired by " + describeClaim(res.rec.Holder)
		if confirmed && cur.Holder.HandedOver {
			note = "hand-over confirmed by " + describeClaim(res.rec.Holder)
		}
		if tok := res.rec.Holder.Token; tok != "" {
			note += ", fencing token " + tok
		} else if res.cm != nil {
			note += ", fencing token " + res.cm.ResourceVersion
		}
		c.event(ctx, res.cm, false, reasonAcquired, note)
	}
}

// confirmedEvent records that holder confirmed the hand-over of the lock
// cm, whose fencing token is token.
func (c *Client) confirmedEvent(ctx context.Context, cm *corev1.ConfigMap, holder record.Claim, token string) {
	c.event(ctx, cm, false, reasonAcquired, "hand-over confirmed by "+describeClaim(holder)+", fencing token "+token)
}

// heldEvent records that holder held the lock cm was handed over in, with
// fencing token token, and released it before its confirmation was due.
func (c *Client) heldEvent(ctx context.Context, cm *corev1.ConfigMap, holder record.Claim, token string) {
	if cm == nil {
		return
	}
	c.event(ctx, cm, false, reasonAcquired, "hand-over held by "+describeClaim(holder)+", fencing token "+token+", released before its confirmation was due")
}

// releaseEvents records what a release changed on the lock cm: by is who
// released it.
func (c *Client) releaseEvents(ctx context.Context, cm *corev1.ConfigMap, res *Released, by string) {
	prev := describeClaim(*res.Previous)
	switch {
	case res.Forced:
		c.event(ctx, cm, true, reasonForceReleased, fmt.Sprintf("hold of %s broken with --force by %s", prev, by))
	case res.HandedTo == nil:
		c.event(ctx, cm, false, reasonReleased, "released by "+prev)
	}
	if res.HandedTo != nil && res.HandedTo.IgnoredFreeze != "" {
		c.freezeIgnoredEvent(ctx, cm, *res.HandedTo)
	}
	if res.HandedTo != nil {
		c.event(ctx, cm, false, reasonHandedOver, fmt.Sprintf("released by %s, handed over to %s", res.Previous.Identity, describeClaim(*res.HandedTo)))
	}
}

// freezeIgnoredEvent records that holder took the frozen lock cm with
// --ignore-freeze.
func (c *Client) freezeIgnoredEvent(ctx context.Context, cm *corev1.ConfigMap, holder record.Claim) {
	c.event(ctx, cm, true, reasonFreezeIgnored,
		fmt.Sprintf("%s took the lock with --ignore-freeze; it was %s", describeClaim(holder), holder.IgnoredFreeze))
}
