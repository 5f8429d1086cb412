package events

import "github.com/lockctl/lockctl/metrics"

// Results of writing an Event, the result label of lockctl_events_total.
const (
	resultWritten = "written"
	resultFailed  = "failed"
	resultDropped = "dropped"
)

// Metrics count what became of the Events a Recorder was asked to record.
type Metrics struct {
	events *metrics.CounterVec
}

// NewMetrics creates the metrics and registers them on reg:
//
//   - lockctl_events_total{result}: Events written, failed (the API server
//     refused them or did not answer) and dropped (the background queue
//     was full, see Recorder.Background)
func NewMetrics(reg metrics.Registerer) (*Metrics, error) {
	m := &Metrics{events: metrics.NewCounterVec("lockctl_events_total",
		"Events about job records and locks, by what became of them: written, failed, dropped.", "result")}
	for _, r := range []string{resultWritten, resultFailed, resultDropped} {
		m.events.WithLabelValues(r)
	}
	if err := reg.Register(m.events); err != nil {
		return nil, err
	}
	return m, nil
}

func (m *Metrics) count(result string) {
	if m != nil {
		m.events.WithLabelValues(result).Inc()
	}
}
