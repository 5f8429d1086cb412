package lock

import (
	"context"
	"errors"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime"
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
	me  Claim

	lockEvents watch.Interface
	podEvents  watch.Interface
	podRef     *PodRef

	cm      *corev1.ConfigMap
	pod     *corev1.Pod
	started time.Time
	joined  bool
}

func newWaiter(c *Client, req Request, me Claim) *waiter {
	return &waiter{c: c, req: req, me: me}
}

func (w *waiter) stop() {
	if w.lockEvents != nil {
		w.lockEvents.Stop()
	}
	if w.podEvents != nil {
		w.podEvents.Stop()
	}
}

func (w *waiter) run(ctx context.Context) (*Held, error) {
	c := w.c
	w.started = c.Clock.Now()
	w.lockEvents = watchOne(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return c.cms.ConfigMaps(c.namespace).List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return c.cms.ConfigMaps(c.namespace).Watch(ctx, o)
	}, Name(w.req.Target), &corev1.ConfigMap{})

	cm, err := c.get(ctx, w.req.Target)
	if err != nil {
		return nil, err
	}
	w.cm = cm
	var last *Progress
	for {
		res, err := c.step(ctx, w.req, w.me, w.cm, w.pod)
		if errors.Is(err, errRetry) {
			if w.cm, err = c.get(ctx, w.req.Target); err != nil {
				return nil, w.giveUp(err)
			}
			continue
		}
		if err != nil {
			return nil, w.giveUp(err)
		}
		if res.held != nil {
			res.held.Waited = c.Clock.Since(w.started)
			return res.held, nil
		}
		w.cm, w.joined = res.cm, true
		if p := res.progress(w.req.Target, w.started); p != nil && w.req.OnProgress != nil && !sameProgress(last, p) {
			w.req.OnProgress(*p)
			last = p
		}
		w.followHolderPod(res.rec.Holder.Pod)
		if err := w.next(ctx, res.decision.NextCheck); err != nil {
			holder := Claim{}
			if res.rec != nil {
				holder = res.rec.Holder
			}
			return nil, w.giveUp(w.waitError(ctx, err, holder))
		}
	}
}

// next blocks until something may change the decision: a lock or pod event,
// the deadline at, or the end of ctx.
func (w *waiter) next(ctx context.Context, at time.Time) error {
	var timer <-chan time.Time
	if !at.IsZero() {
		t := w.c.Clock.NewTimer(at.Sub(w.c.Clock.Now()))
		defer t.Stop()
		timer = t.C()
	}
	var podCh <-chan watch.Event
	if w.podEvents != nil {
		podCh = w.podEvents.ResultChan()
	}
	select {
	case <-ctx.Done():
		return ctx.Err()
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

func (w *waiter) onLockEvent(ev watch.Event) {
	cm, ok := ev.Object.(*corev1.ConfigMap)
	if !ok || cm.Name != Name(w.req.Target) {
		return
	}
	if ev.Type == watch.Deleted {
		if w.cm != nil && w.cm.UID == cm.UID {
			w.cm = nil
		}
		return
	}
	// Events can trail our own writes; never step back to an older version.
	if w.cm != nil && w.cm.UID == cm.UID && rvOlder(cm.ResourceVersion, w.cm.ResourceVersion) {
		return
	}
	w.cm = cm
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
func (w *waiter) followHolderPod(ref *PodRef) {
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
	w.podEvents = watchOne(func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
		return pods.List(ctx, o)
	}, func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
		return pods.Watch(ctx, o)
	}, r.Name, &corev1.Pod{})
}

// giveUp leaves the queue, with a fresh short context since ctx may be
// over, and returns err.
func (w *waiter) giveUp(err error) error {
	if !w.joined {
		return err
	}
	var sup *SupersededError
	if errors.As(err, &sup) {
		return err // the superseding write already removed us
	}
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	if lerr := w.c.leave(ctx, w.req.Target, w.me.Session); lerr != nil {
		w.c.Log.WithField("lock", w.c.Describe(w.req.Target)).WithField("err", lerr).
			Warn("could not leave the queue; the place expires by itself")
	}
	return err
}

func (w *waiter) waitError(ctx context.Context, err error, holder Claim) error {
	if errors.Is(err, context.DeadlineExceeded) && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		return &TimeoutError{Target: w.req.Target, Holder: holder, Waited: w.c.Clock.Since(w.started)}
	}
	return fmt.Errorf("wait for lock %s: %w", w.c.Describe(w.req.Target), err)
}

// watchOne watches the single object called name through an informer, which
// lists again and re-establishes its watch by itself.
func watchOne(list cache.ListWithContextFunc, wat cache.WatchFuncWithContext, name string, obj runtime.Object) watch.Interface {
	sel := fields.OneTermEqualSelector("metadata.name", name).String()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, o metav1.ListOptions) (runtime.Object, error) {
			o.FieldSelector = sel
			return list(ctx, o)
		},
		WatchFuncWithContext: func(ctx context.Context, o metav1.ListOptions) (watch.Interface, error) {
			o.FieldSelector = sel
			return wat(ctx, o)
		},
	}
	_, _, w, _ := watchtools.NewIndexerInformerWatcher(lw, obj)
	return w
}

func sameProgress(a, b *Progress) bool {
	if a == nil || b == nil {
		return a == b
	}
	return a.Holder.Session == b.Holder.Session && a.HolderAlive == b.HolderAlive &&
		a.Position == b.Position && len(a.Ahead) == len(b.Ahead)
}
