package lock

import (
	"context"
	"errors"
	"fmt"

	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
)

// Freeze freezes target's lock until req.Until, creating the lock (with no
// holder) if there is none. A freeze already there is replaced; the holder
// and the queue stay as they are.
func (c *Client) Freeze(ctx context.Context, req record.FreezeRequest) (*LockView, error) {
	if err := req.By.Validate(); err != nil {
		return nil, fmt.Errorf("invalid identity: %w", err)
	}
	if err := record.ValidateFreezeReason(req.Reason); err != nil {
		return nil, err
	}
	var out *corev1.ConfigMap
	var user string
	err := c.update(ctx, "freeze", req.Target, nil, func(cm *corev1.ConfigMap) (change, error) {
		var rec *record.Record
		if cm != nil {
			var err error
			if rec, err = c.decode(cm, req.Target); err != nil {
				return change{}, err
			}
		}
		if req.LookupUser != nil && c.enforcedLock(cm, req.Target) {
			req.LookupUser, user = nil, req.LookupUser(ctx).Name
		}
		rec, err := record.DecideFreeze(rec, req, user, c.clk.Now())
		if err != nil {
			return change{}, err
		}
		return change{Decision: record.Decision{Record: rec, Create: cm == nil}, stored: func(ctx context.Context, written *corev1.ConfigMap) {
			out = written
			c.log.Debug(rec.Freeze.Describe(), "lock", c.Describe(req.Target))
			c.event(ctx, written, false, reasonFrozen, rec.Freeze.Describe())
		}}, nil
	})
	if err != nil {
		return nil, err
	}
	l := c.view(ctx, out)
	return &l, nil
}

// Unfreeze lifts target's freeze. A lock left with no holder goes to its
// first waiter, or stays free when nobody waits. Unfreezing a lock that is
// not frozen succeeds with an empty Unfrozen.
func (c *Client) Unfreeze(ctx context.Context, target string) (*record.Unfrozen, error) {
	res := &record.Unfrozen{}
	err := c.update(ctx, "unfreeze", target, nil, func(cm *corev1.ConfigMap) (change, error) {
		res = &record.Unfrozen{}
		if cm == nil {
			return change{}, nil
		}
		rec, err := c.decode(cm, target)
		if err != nil {
			return change{}, err
		}
		var write bool
		res, write, err = record.DecideUnfreeze(target, rec, c.freezeWindows(), c.clk.Now())
		if err != nil || !write {
			if we := (*record.WindowError)(nil); errors.As(err, &we) {
				we.Namespace = c.namespace
			}
			return change{}, err
		}
		return change{Decision: record.Decision{Record: rec}, stored: func(ctx context.Context, written *corev1.ConfigMap) {
			note := "freeze lifted; it was " + res.Previous.Describe()
			if res.HandedTo != nil {
				note += "; handed over to " + describeClaim(*res.HandedTo)
			}
			c.event(ctx, written, false, reasonUnfrozen, note)
		}}, nil
	})
	if err != nil {
		return nil, err
	}
	return res, nil
}
