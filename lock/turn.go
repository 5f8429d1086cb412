package lock

import (
	"context"
	"slices"
	"strings"

	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// A long queue wakes through a small object beside the lock, its turn
// (docs/adr/0098-long-queue-turn-object.md). Every write of the record
// sends the whole record, which grows with the queue, to every watcher of
// the lock: with N waiters watching, a hand-over costs N² bytes. So only
// the first HeadWatchers waiters watch the record; the others watch the
// turn object, which names the holder and those first waiters, and read
// the record when it names them, when their place must be renewed, and
// when the turn has not changed for a waiter TTL (a writer that does not
// publish the turn, an older lockctl, may have moved the queue). The
// record stays the one truth: the turn is a hint, and a stale one only
// delays a read.
const (
	// turnAnnotation, on the lock, is the key of the turn its last writer
	// published; it is absent while the queue is short enough that nobody
	// watches the turn object.
	turnAnnotation = "lockctl.dev/turn"
	// turnKindValue is the KindLabel of a turn object: never a lock.
	turnKindValue = "turn"
	turnHolderKey = "holder"
	turnHeadKey   = "head"
	turnRecordKey = "record"
	// turnAttempts bounds the compare-and-swap rounds of one publication.
	turnAttempts = 3
)

// turn is what a turn object says: the holder's claim ID, the claim IDs of
// the first HeadWatchers waiters, and the resourceVersion of the lock they
// were read from.
type turn struct {
	holder string
	head   []string
	record string
}

// turnOf returns the turn of rec.
func turnOf(rec *record.Record) turn {
	t := turn{holder: rec.Holder.ClaimID}
	for i := 0; i < len(rec.Waiters) && i < record.HeadWatchers; i++ {
		t.head = append(t.head, rec.Waiters[i].ClaimID)
	}
	return t
}

// key is what turnAnnotation records of t.
func (t turn) key() string { return t.holder + "/" + strings.Join(t.head, ",") }

// names reports whether the turn names claim as holder or at the head.
func (t turn) names(claim string) bool {
	return claim != "" && (t.holder == claim || slices.Contains(t.head, claim))
}

// readTurn returns the turn a turn object says; false when cm is not one.
func readTurn(cm *corev1.ConfigMap) (turn, bool) {
	if cm == nil || cm.Labels[record.ManagedByLabel] != record.ManagedByValue || cm.Labels[record.KindLabel] != turnKindValue {
		return turn{}, false
	}
	t := turn{holder: cm.Data[turnHolderKey], record: cm.Data[turnRecordKey]}
	if h := cm.Data[turnHeadKey]; h != "" {
		t.head = strings.Split(h, ",")
	}
	return t, true
}

// turnChange returns the turn to publish after rec replaces the version
// was of a lock (was is nil for a new lock): the annotation to write with
// rec ("" removes it) and whether the turn object must be written.
func turnChange(was *corev1.ConfigMap, rec *record.Record) (annotation string, publish bool) {
	prev := ""
	if was != nil {
		prev = was.Annotations[turnAnnotation]
	}
	if len(rec.Waiters) <= record.HeadWatchers {
		// Everyone watches the record; a last publication tells those who
		// watched the turn.
		return "", prev != ""
	}
	k := turnOf(rec).key()
	return k, k != prev
}

// publishTurn writes t, read from version t.record of target's lock (lock
// is that version), to the lock's turn object: a compare-and-swap on the
// object, which a newer turn already there wins. It is a hint, so a
// failure is logged and dropped: the waiters behind the head read the
// record within a waiter TTL all the same.
func (c *Client) publishTurn(ctx context.Context, target string, t turn, lock *corev1.ConfigMap) {
	cms := c.cms.ConfigMaps(c.namespace)
	name := record.TurnName(target)
	var err error
attempts:
	for range turnAttempts {
		var cur *corev1.ConfigMap
		cur, err = cms.Get(ctx, name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			next := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: c.namespace}}
			t.encode(next, target, lock)
			if _, err = cms.Create(ctx, next, metav1.CreateOptions{}); err == nil || !apierrors.IsAlreadyExists(err) {
				break attempts
			}
			continue
		case err != nil:
			break attempts
		}
		if old, ok := readTurn(cur); ok && old.record != "" && !rvOlder(old.record, t.record) {
			return // a newer version of the lock published already
		}
		next := cur.DeepCopy()
		t.encode(next, target, lock)
		if _, err = cms.Update(ctx, next, metav1.UpdateOptions{}); err == nil || !apierrors.IsConflict(err) {
			break
		}
	}
	if err != nil {
		c.log.Debug("could not publish the turn", "lock", c.Describe(target), "err", err)
	}
}

// encode writes t into cm, the turn object of target's lock (lock: the
// version t was read from, which owns it, so it goes with the lock).
func (t turn) encode(cm *corev1.ConfigMap, target string, lock *corev1.ConfigMap) {
	if cm.Labels == nil {
		cm.Labels = map[string]string{}
	}
	cm.Labels[record.ManagedByLabel] = record.ManagedByValue
	cm.Labels[record.KindLabel] = turnKindValue
	cm.Labels[record.TargetLabel] = record.TargetLabelValue(target)
	cm.Data = map[string]string{
		turnHolderKey: t.holder,
		turnHeadKey:   strings.Join(t.head, ","),
		turnRecordKey: t.record,
	}
	if lock != nil && lock.UID != "" {
		cm.OwnerReferences = []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: lock.Name, UID: lock.UID}}
	}
}

// dropTurn deletes the turn object of target's lock, once the lock is
// gone; best effort, like every publication.
func (c *Client) dropTurn(ctx context.Context, target string) {
	err := c.cms.ConfigMaps(c.namespace).Delete(ctx, record.TurnName(target), metav1.DeleteOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		c.log.Debug("could not delete the turn object", "lock", c.Describe(target), "err", err)
	}
}
