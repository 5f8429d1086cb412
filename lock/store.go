package lock

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock/record"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// store is where the locks of one lock namespace live, one ConfigMap a
// lock: the seam between the rules of this package and the API server, as
// resourcelock.Interface is for client-go's leader election. Every write is
// a compare-and-swap: Update and Delete apply only to the version read,
// Create only when there is no lock. A write that lost to another returns
// errRetry, and the caller reads again (Client.update); any other error is
// the API's, wrapped.
type store interface {
	// Get returns target's lock, nil when there is none.
	Get(ctx context.Context, target string) (*corev1.ConfigMap, error)
	// Create stores a new lock.
	Create(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error)
	// Update stores cm over the version it was copied from.
	Update(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error)
	// Delete removes cm, only if it is still the lock's version.
	Delete(ctx context.Context, cm *corev1.ConfigMap) error
}

// configMapStore is the store of the ConfigMaps of one namespace.
type configMapStore struct {
	cms       kube.ConfigMapsGetter
	namespace string
}

var _ store = configMapStore{}

func (s configMapStore) describe(name string) string { return s.namespace + "/" + name }

func (s configMapStore) Get(ctx context.Context, target string) (*corev1.ConfigMap, error) {
	cm, err := s.cms.ConfigMaps(s.namespace).Get(ctx, record.Name(target), metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("read lock %s: %w", s.describe(record.Name(target)), err)
	}
	return cm, nil
}

func (s configMapStore) Create(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	out, err := s.cms.ConfigMaps(s.namespace).Create(ctx, cm, metav1.CreateOptions{})
	switch {
	case err == nil:
		return out, nil
	case apierrors.IsNotFound(err):
		// NOTE: a create is only ever NotFound for its namespace; retrying
		// it as a race would wait for ever.
		return nil, &NamespaceError{Namespace: s.namespace}
	case apierrors.IsAlreadyExists(err), apierrors.IsConflict(err):
		return nil, errRetry
	}
	return nil, fmt.Errorf("write lock %s: %w", s.describe(cm.Name), err)
}

func (s configMapStore) Update(ctx context.Context, cm *corev1.ConfigMap) (*corev1.ConfigMap, error) {
	out, err := s.cms.ConfigMaps(s.namespace).Update(ctx, cm, metav1.UpdateOptions{})
	switch {
	case err == nil:
		return out, nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return nil, errRetry
	}
	return nil, fmt.Errorf("write lock %s: %w", s.describe(cm.Name), err)
}

func (s configMapStore) Delete(ctx context.Context, cm *corev1.ConfigMap) error {
	uid, rv := cm.UID, cm.ResourceVersion
	err := s.cms.ConfigMaps(cm.Namespace).Delete(ctx, cm.Name, metav1.DeleteOptions{
		Preconditions: &metav1.Preconditions{UID: &uid, ResourceVersion: &rv},
	})
	switch {
	case err == nil:
		return nil
	case apierrors.IsConflict(err), apierrors.IsNotFound(err):
		return errRetry
	}
	return fmt.Errorf("delete lock %s/%s: %w", cm.Namespace, cm.Name, err)
}

// errRetry means the lock changed under a write; read it again and decide
// again.
var errRetry = errors.New("lock changed, retry")

// maxConflicts bounds how many writes in a row one change may lose to
// others before it gives up.
const maxConflicts = 20

// change is what a rule decided on one version of a lock.
type change struct {
	// Decision holds the record to store (nil: store nothing), and whether
	// to create the lock and whether the write makes a new holder.
	record.Decision
	// remove deletes the version decided on instead (an unreadable lock
	// broken with --force).
	remove bool
	// stored, when set, is called with the version the write made (nil for
	// remove) once it is stored: the change's Events and what the caller
	// keeps of it.
	stored func(ctx context.Context, cm *corev1.ConfigMap)
	// annotate sets these annotations of the lock with the record ("" as
	// a value removes one): the marks that are not the record's, such as
	// EnforcedAnnotation.
	annotate map[string]string
}

// reader returns the version of target's lock to decide on next; lost is
// the version the last write lost on, nil at first.
type reader func(ctx context.Context, target string, lost *corev1.ConfigMap, attempt int) (*corev1.ConfigMap, error)

// update is the one write path of the locks: it reads target's lock
// (through read; nil reads it afresh), asks decide what to do with that
// version (cm is nil when there is no lock) and stores the answer with a
// compare-and-swap on that version, then calls the change's stored hook.
// A write lost to another is read and decided again, up to maxConflicts
// times; op names the operation in the error that ends it.
func (c *Client) update(ctx context.Context, op, target string, read reader, decide func(cm *corev1.ConfigMap) (change, error)) error {
	if read == nil {
		read = c.fresh
	}
	var lost *corev1.ConfigMap
	return retryLost(fmt.Sprintf("%s lock %s", op, c.Describe(target)), func(attempt int) error {
		cm, err := read(ctx, target, lost, attempt)
		if err != nil {
			return err
		}
		ch, err := decide(cm)
		if err != nil {
			return err
		}
		lost = cm
		err = c.apply(ctx, target, cm, ch)
		if attempt < policyRetries && refusedByPolicy(err) {
			// NOTE: an enforced lock's policy judges a write at the
			// API server's stamp of it, which keeps whole seconds and is
			// not renewed by a second write of the same manager in the
			// same second: a take-over of a hold that just lapsed, or
			// the drop of a freeze that just ended, may be judged a
			// second early. Decided again a second later, it stands or
			// falls on its own.
			select {
			case <-ctx.Done():
				return err
			case <-c.clk.After(stampResolution + stampResolution/10):
			}
			return errRetry
		}
		return err
	})
}

// policyRetries is how many times a write of a lock that an enforced
// lock's policy refused is decided again, a second apart, before the
// refusal is returned.
const policyRetries = 2

// refusedByPolicy reports whether err is the refusal of a write of a lock
// by the admission policy of an enforced lock.
func refusedByPolicy(err error) bool {
	return err != nil && (apierrors.IsForbidden(err) || apierrors.IsInvalid(err)) &&
		strings.Contains(err.Error(), "lockctl refused this change of lock")
}

// retryLost runs round, one read, decision and compare-and-swap write,
// again as long as its write loses to another's (it returns errRetry), up
// to maxConflicts times; what names the change in the error that ends it.
// Every write of this package loops here.
func retryLost(what string, round func(attempt int) error) error {
	for attempt := 0; attempt < maxConflicts; attempt++ {
		if err := round(attempt); !errors.Is(err, errRetry) {
			return err
		}
	}
	return fmt.Errorf("%s: too many concurrent changes, try again", what)
}

// fresh is the reader that reads the lock from the API server every time.
func (c *Client) fresh(ctx context.Context, target string, _ *corev1.ConfigMap, _ int) (*corev1.ConfigMap, error) {
	return c.get(ctx, target)
}

// apply stores ch, decided on cm (nil: no lock), and calls its stored hook
// with the version written (cm when there was nothing to write, nil after
// a delete); errRetry when cm is no longer the lock's version.
func (c *Client) apply(ctx context.Context, target string, cm *corev1.ConfigMap, ch change) error {
	var out *corev1.ConfigMap
	switch {
	case ch.remove:
		if err := c.store.Delete(ctx, cm); err != nil {
			return err
		}
		if cm.Annotations[turnAnnotation] != "" {
			c.dropTurn(ctx, target)
		}
	case ch.Record != nil:
		written, err := c.write(ctx, target, cm, ch.Decision, ch.annotate)
		if err != nil {
			return err
		}
		out = written
	default:
		out = cm
	}
	if ch.stored != nil {
		ch.stored(ctx, out)
	}
	return nil
}

// write stores d.Record by creating or updating the lock read as cm.
// Conflicts and races with creation or deletion return errRetry.
func (c *Client) write(ctx context.Context, target string, cm *corev1.ConfigMap, d record.Decision, annotate map[string]string) (*corev1.ConfigMap, error) {
	create := d.Create || cm == nil
	var next *corev1.ConfigMap
	if create {
		next = &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: record.Name(target), Namespace: c.namespace}}
	} else {
		next = cm.DeepCopy()
	}
	d.Record.Target = target
	if h := &d.Record.Holder; h.TokenPending && !d.TookOver && !h.HandedNow && cm != nil {
		// cm is the version the holder's take-over (or the hand-over to
		// it) wrote (every later write records the token): its
		// resourceVersion is the token.
		h.Token, h.TokenPending = cm.ResourceVersion, false
	}
	if err := record.Encode(next, d.Record); err != nil {
		return nil, err
	}
	for k, v := range annotate {
		if v == "" {
			delete(next.Annotations, k)
		} else {
			next.Annotations[k] = v
		}
	}
	if _, set := annotate[record.EnforcedAnnotation]; !set && next.Annotations[record.EnforcedAnnotation] == "" {
		if mode := c.markOf(target); mode != "" {
			next.Annotations[record.EnforcedAnnotation] = mode
		}
	}
	if err := c.summarizeWindows(ctx, next, target); err != nil {
		return nil, err
	}
	dropEndedGrant(next, d.Record)
	key, publish := turnChange(cm, d.Record)
	switch {
	case c.turnless:
		publish = false
	case key == "":
		delete(next.Annotations, turnAnnotation)
	default:
		next.Annotations[turnAnnotation] = key
	}
	var out *corev1.ConfigMap
	var err error
	if create {
		out, err = c.store.Create(ctx, next)
	} else {
		out, err = c.store.Update(ctx, next)
	}
	if _, set := annotate[record.EnforcedAnnotation]; !set && c.learnMark(target, err) {
		// The target is enforced and the lock not marked (or created
		// anew): decide again, as a contender of an enforced lock.
		return nil, errRetry
	}
	if err == nil && publish {
		t := turnOf(d.Record)
		t.record = out.ResourceVersion
		c.publishTurn(ctx, target, t, out)
	}
	return out, err
}
