package lock

import (
	"context"

	"github.com/lockctl/lockctl/lock/record"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// History returns the past holds of target's lock, newest first, and its
// current holder. A lock that was never taken (or whose holder pod was
// deleted with it) has an empty history.
func (c *Client) History(ctx context.Context, target string) (*record.History, error) {
	out := c.newHistory(target)
	// NOTE: the history needs no freeze windows: the lock alone is read.
	cm, err := c.store.Get(ctx, target)
	if err != nil || cm == nil {
		return out, err
	}
	rec, err := c.decode(cm, target)
	if err != nil {
		return nil, err
	}
	out.Fill(rec)
	return out, nil
}

// newHistory is the empty history of target's lock.
func (c *Client) newHistory(target string) *record.History {
	return &record.History{
		TypeMeta:   metav1.TypeMeta{APIVersion: APIVersion, Kind: record.KindLockHistory},
		ObjectMeta: metav1.ObjectMeta{Name: record.Name(target), Namespace: c.namespace},
		Context:    c.opts.Context, Target: target, Entries: []record.HistoryEntry{},
	}
}
