// Package events writes events.k8s.io Events about lockctl's objects (job
// records, locks), so `kubectl get events` and `kubectl describe configmap`
// show what happened to them. Writing is best-effort: an Event that cannot
// be written is logged at debug level and never fails the operation it
// reports. A long-running loop writes them in the background
// (Recorder.Background), from a bounded queue.
package events

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"os"
	"sync"
	"sync/atomic"

	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"

	"github.com/lockctl/lockctl/internal/base/logutil"
	"github.com/lockctl/lockctl/kube"
	"github.com/lockctl/lockctl/lock"
)

// Controller is the reportingController of every Event lockctl writes.
const Controller = "lockctl.dev/lockctl"

// maxNote is the longest note the API server accepts, in bytes.
const maxNote = 1024

var _ lock.EventRecorder = (*Recorder)(nil)

// Recorder writes Events. The zero value and a nil *Recorder write nothing.
type Recorder struct {
	events   kube.EventsGetter
	instance string
	clock    clock.PassiveClock
	logger   *slog.Logger
	jobs     JobEvents
	metrics  *Metrics

	bgMu  sync.RWMutex
	bg    *background // set by Background
	drops atomic.Int64
}

// Options configure a Recorder. The zero value is usable.
type Options struct {
	// Instance is the reportingInstance: the pod or host lockctl runs on;
	// empty means the pod lockctl runs in (POD_NAME), or else the host name.
	Instance string
	// Clock stamps eventTime; nil means clock.RealClock{}.
	Clock clock.PassiveClock
	// Log receives the Events that could not be written; nil discards.
	Log *slog.Logger
	// Jobs says which job state changes JobChanged records; "" means
	// JobEventsAll.
	Jobs JobEvents
	// Metrics counts the Events written, failed and dropped; nil counts
	// nothing.
	Metrics *Metrics
}

// NewRecorder returns a Recorder writing through events.
func NewRecorder(events kube.EventsGetter, o Options) *Recorder {
	if o.Instance == "" {
		o.Instance = os.Getenv("POD_NAME")
	}
	if o.Instance == "" {
		o.Instance, _ = os.Hostname()
	}
	if o.Instance == "" {
		o.Instance = "lockctl"
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	return &Recorder{events: events, instance: o.Instance, clock: o.Clock, logger: o.Log, jobs: o.Jobs, metrics: o.Metrics}
}

// Event records that action happened to the ConfigMap cm, for reason (a
// CamelCase word, such as "Acquired"), with a note for people. Warning
// events are for what went wrong (a job that failed, a lock broken).
func (r *Recorder) Event(ctx context.Context, cm *corev1.ConfigMap, warning bool, action, reason, note string) {
	if r == nil || r.events == nil || cm == nil {
		return
	}
	typ := corev1.EventTypeNormal
	if warning {
		typ = corev1.EventTypeWarning
	}
	if len(note) > maxNote {
		note = note[:maxNote-3] + "..."
	}
	now := metav1.NewMicroTime(r.clock.Now())
	ev := &eventsv1.Event{
		// NOTE: named as client-go's recorder names Events: generateName
		// would end in a dot, which the API server refuses.
		ObjectMeta:          metav1.ObjectMeta{Name: fmt.Sprintf("%s.%x%04x", cm.Name, now.UnixNano(), rand.IntN(1<<16)), Namespace: cm.Namespace},
		EventTime:           now,
		ReportingController: Controller,
		ReportingInstance:   r.instance,
		Action:              action,
		Reason:              reason,
		Note:                note,
		Type:                typ,
		Regarding: corev1.ObjectReference{
			APIVersion: "v1", Kind: "ConfigMap", Namespace: cm.Namespace, Name: cm.Name,
			UID: cm.UID, ResourceVersion: cm.ResourceVersion,
		},
	}
	r.bgMu.RLock()
	bg := r.bg
	r.bgMu.RUnlock()
	if bg != nil && bg.enqueue(r, ev) {
		return
	}
	r.write(context.WithoutCancel(ctx), ev)
}

func (r *Recorder) log() *slog.Logger {
	return logutil.OrDiscard(r.logger)
}
