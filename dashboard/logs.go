package dashboard

import (
	"bytes"
	"context"
	"net/http"
	"sync"
	"time"

	"github.com/lockctl/lockctl/job"
	"github.com/lockctl/lockctl/podwatch"
	"github.com/lockctl/lockctl/run"
)

// serveLogStream follows the pod of a job as `lockctl logs -f` does
// (run.FollowJob: it waits for the pod, streams its containers' logs and
// follows the pod that replaces a lost one) and sends each log line as an
// event "line", each change of the pod as an event "status", and, once the
// pod has finished (or the follow failed), an event "end", after which the
// page stops listening. The follow ends when the page is closed.
func (h *Hub) serveLogStream(w http.ResponseWriter, r *http.Request) {
	name := r.PathValue("name")
	j, err := h.job(name)
	switch {
	case err != nil:
		http.Error(w, "job not found", http.StatusNotFound)
		return
	case h.o.Jobs == nil || h.o.PodsFor == nil:
		http.Error(w, "this dashboard shows no logs", http.StatusNotFound)
		return
	}
	pods, podNS, err := h.o.PodsFor(j)
	if err != nil {
		http.Error(w, "cannot read the logs of job: "+err.Error(), http.StatusInternalServerError)
		return
	}
	select {
	case h.logSlots <- struct{}{}:
		defer func() { <-h.logSlots }()
	default:
		http.Error(w, "too many log pages open: close one", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	es := newEventStream(w)
	lw := &lineWriter{es: es, cancel: cancel}
	done := make(chan error, 1)
	go func() {
		done <- run.FollowJob(ctx, h.o.Jobs, pods, podNS, job.PodName(j), run.FollowOptions{
			Out:   lw,
			Clock: h.o.Clock,
			Log:   h.o.Log.With("job", j.Name),
			OnEvent: func(ev podwatch.Event) {
				lw.send("status", []byte(ev.String()))
			},
			OnReplace: func(rep run.Replacement) { lw.send("status", []byte(rep.String())) },
		})
	}()
	lw.send("status", []byte("following pod "+podNS+"/"+job.PodName(j)))
	t := time.NewTicker(heartbeat)
	defer t.Stop()
	for {
		select {
		case err := <-done:
			lw.flush()
			end := "the pod has finished"
			if err != nil && ctx.Err() == nil {
				end = "cannot follow the pod: " + err.Error()
			}
			lw.send("end", []byte(end))
			return
		case <-ctx.Done():
			if err := <-done; err != nil {
				h.o.Log.Debug("log page closed", "job", j.Name, "err", err)
			}
			return
		case <-t.C:
			lw.mu.Lock()
			err := es.comment()
			lw.mu.Unlock()
			if err != nil {
				return
			}
		}
	}
}

// lineWriter turns what a follow writes into one event "line" per line.
// A write to the page that fails ends the follow.
type lineWriter struct {
	mu      sync.Mutex
	es      *eventStream
	partial []byte
	cancel  func()
}

// Write sends every complete line of p, keeping the rest for the next.
func (lw *lineWriter) Write(p []byte) (int, error) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	lw.partial = append(lw.partial, p...)
	for {
		i := bytes.IndexByte(lw.partial, '\n')
		if i < 0 {
			return len(p), nil
		}
		line := lw.partial[:i]
		lw.partial = lw.partial[i+1:]
		if err := lw.es.send("line", line); err != nil {
			lw.cancel()
			return 0, err
		}
	}
}

// flush sends what is left of the last line.
func (lw *lineWriter) flush() {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if len(lw.partial) > 0 {
		_ = lw.es.send("line", lw.partial)
		lw.partial = nil
	}
}

func (lw *lineWriter) send(event string, data []byte) {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	if lw.es.send(event, data) != nil {
		lw.cancel()
	}
}
