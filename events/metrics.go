package events

import "github.com/prometheus/client_golang/prometheus"

// Results of writing an Event, the result label of lockctl_events_total.
const (
	resultWritten = "written"
	resultFailed  = "failed"
	resultDropped = "dropped"
)

// Metrics count what became of the Events a Recorder was asked to record.
type Metrics struct {
	events *prometheus.CounterVec
}

// NewMetrics creates the metrics and registers them on reg:
//
//   - lockctl_events_total{result}: Events written, failed (the API server
//     refused them or did not answer) and dropped (the background queue
//     was full, see Recorder.Background)
func NewMetrics(reg prometheus.Registerer) (*Metrics, error) {
	m := &Metrics{events: prometheus.NewCounterVec(prometheus.CounterOpts{
		Name: "lockctl_events_total",
		Help: "Events about job records and locks, by what became of them: written, failed, dropped.",
	}, []string{"result"})}
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
