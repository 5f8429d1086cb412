package events

import (
	"context"
	"hash/fnv"
	"sync"

	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Defaults of Background for a long-running loop: 1,000 Events queued at
// most (well under 1 MB), written by 16 goroutines. A loop records at most
// one Event per state write, so writers as many as its workers keep up
// with it; 4 writers for 16 workers dropped 3,021 of 10,000 Events at
// 5,000 jobs (docs/benchmarks-history.md §3).
const (
	DefaultQueueCapacity = 1000
	DefaultWriters       = 16
)

// background is a Recorder's queue of Events waiting to be written: one
// bounded channel per writer goroutine, an object's Events always on the
// same one.
type background struct {
	mu      sync.RWMutex
	stopped bool
	shards  []chan *eventsv1.Event
	done    sync.WaitGroup
	// abandon ends the writes still queued when Stop's context ends.
	abandon context.Context
	cancel  context.CancelFunc
}

// Background makes r write its Events in the background: Event returns at
// once, having put the Event (stamped with the time it was recorded) on a
// queue of at most capacity Events, which writers goroutines write. All the
// Events of one object go through one writer, in the order they were
// recorded, so `kubectl describe` lists a job's state changes in order. An
// Event recorded while its writer's share of the queue (capacity/writers) is
// full is dropped and counted (Metrics, Dropped): a slow or throttled API
// server never holds up the caller, and the queue never grows without
// bound. capacity or writers below 1 mean the defaults. The returned stop
// writes what is queued, for as long as its context allows (what is left
// then is dropped), and waits for the writers; Events recorded after it are
// written at once, as without Background.
func (r *Recorder) Background(capacity, writers int) (stop func(context.Context)) {
	if r == nil || r.events == nil {
		return func(context.Context) {}
	}
	if capacity < 1 {
		capacity = DefaultQueueCapacity
	}
	if writers < 1 {
		writers = DefaultWriters
	}
	per := max(capacity/writers, 1)
	bg := &background{shards: make([]chan *eventsv1.Event, writers)}
	bg.abandon, bg.cancel = context.WithCancel(context.Background())
	for i := range bg.shards {
		ch := make(chan *eventsv1.Event, per)
		bg.shards[i] = ch
		bg.done.Go(func() {
			for ev := range ch {
				if bg.abandon.Err() != nil {
					r.dropped(ev)
					continue
				}
				r.write(bg.abandon, ev)
			}
		})
	}
	r.bgMu.Lock()
	r.bg = bg
	r.bgMu.Unlock()
	return func(ctx context.Context) {
		bg.mu.Lock()
		if !bg.stopped {
			bg.stopped = true
			for _, ch := range bg.shards {
				close(ch)
			}
		}
		bg.mu.Unlock()
		flushed := make(chan struct{})
		go func() {
			bg.done.Wait()
			close(flushed)
		}()
		select {
		case <-flushed:
		case <-ctx.Done():
			bg.cancel()
			<-flushed
		}
		bg.cancel()
	}
}

// enqueue puts ev on its object's writer's queue and reports whether it was
// taken: false means write it now (no background, or stopped).
func (bg *background) enqueue(r *Recorder, ev *eventsv1.Event) bool {
	bg.mu.RLock()
	defer bg.mu.RUnlock()
	if bg.stopped {
		return false
	}
	h := fnv.New32a()
	_, _ = h.Write([]byte(ev.Regarding.Namespace + "/" + ev.Regarding.Name))
	select {
	case bg.shards[h.Sum32()%uint32(len(bg.shards))] <- ev:
	default:
		r.dropped(ev)
	}
	return true
}

// dropped counts and logs an Event given up for a full queue or a stop.
func (r *Recorder) dropped(ev *eventsv1.Event) {
	r.drops.Add(1)
	r.metrics.count(resultDropped)
	r.log().Debug("event dropped: the queue of events to write is full", "reason", ev.Reason, "object", ev.Regarding.Name)
}

// Dropped returns how many Events were not written because the background
// queue was full (or Stop's context ended first).
func (r *Recorder) Dropped() int64 {
	if r == nil {
		return 0
	}
	return r.drops.Load()
}

// write creates ev, within writeTimeout, on a context of its own (so an
// Event still goes out when what it reports was interrupted just after)
// that ends early only when base does.
func (r *Recorder) write(base context.Context, ev *eventsv1.Event) {
	ctx, cancel := context.WithTimeout(base, writeTimeout)
	defer cancel()
	if _, err := r.events.Events(ev.Namespace).Create(ctx, ev, metav1.CreateOptions{}); err != nil {
		r.metrics.count(resultFailed)
		r.log().Debug("could not write an event", "error", err, "reason", ev.Reason)
		return
	}
	r.metrics.count(resultWritten)
}
