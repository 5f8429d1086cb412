package lock

import (
	"context"
	"fmt"
	"time"

	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
)

// Renew pushes the expiry of a held lock ttl past now, for holders that stay
// alive without a pod (a terminal running a command); an expiry already
// later stays (DecideRenew). It returns an error
// matching ErrLost when the caller no longer holds the lock, and a
// *CancelRequestedError, having renewed, while a newer build asks the
// holder to stop (Request.CancelInProgress).
func (c *Client) Renew(ctx context.Context, h *Held, ttl time.Duration) error {
	var rec *record.Record
	err := c.update(ctx, "renew", h.Target, nil, func(cm *corev1.ConfigMap) (change, error) {
		if cm == nil {
			return change{}, fmt.Errorf("renew lock %s: %w: it was deleted", c.Describe(h.Target), record.ErrLost)
		}
		var err error
		if rec, err = c.decode(cm, h.Target); err != nil {
			return change{}, err
		}
		if err := record.DecideRenew(rec, h.ClaimID, h.Token, ttl, c.clk.Now()); err != nil {
			return change{}, fmt.Errorf("renew lock %s: %w", c.Describe(h.Target), err)
		}
		return change{Decision: record.Decision{Record: rec}, stored: func(_ context.Context, written *corev1.ConfigMap) {
			h.remember(written)
		}}, nil
	})
	if err != nil {
		return err
	}
	if r := rec.Holder.CancelRequest; r != nil {
		// Renewed all the same: the holder keeps the lock while it stops.
		return &CancelRequestedError{Target: h.Target, By: r.Identity}
	}
	return nil
}
