// Package metrics is what the reconcile loop exports on /metrics: counters,
// gauges and a histogram of its own, the Go runtime's and the process's
// metrics, written in Prometheus's text exposition format (version 0.0.4)
// under the names, types, labels and help texts client_golang gives them.
//
// NOTE: lockctl used client_golang for these few metrics; every command
// linked it (12 package inits, about 1,400 allocations at each process
// start, and procfs) for reconcile's /metrics alone. docs/adr/0071 has the
// figures; the tests check the output with Prometheus's own parser.
package metrics

import (
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/lockctl/lockctl/internal/base/lazy"
)

// Type is a metric family's type, as its # TYPE line names it.
type Type string

// The types lockctl's families have.
const (
	CounterType   Type = "counter"
	GaugeType     Type = "gauge"
	HistogramType Type = "histogram"
	SummaryType   Type = "summary"
)

// Label is a label's name and value.
type Label struct{ Name, Value string }

// Sample is one line of a family: Suffix after the family's name
// ("_bucket", "_sum", "_count" or ""), its labels and its value.
type Sample struct {
	Suffix string
	Labels []Label
	Value  float64
}

// Family is a metric family as a scrape shows it.
type Family struct {
	Name, Help string
	Type       Type
	Samples    []Sample
}

// Collector is a source of metric families.
type Collector interface {
	// Describe returns the names of the families Collect may add.
	Describe() []string
	// Collect adds the collector's families as they are now.
	Collect(add func(Family))
}

// Registerer is what registers a Collector: a Registry.
type Registerer interface {
	Register(Collector) error
}

// nameRE matches a valid metric name; compiled on first use, so that a
// command that registers no metric does not.
var nameRE = lazy.Regexp{Expr: `^[a-zA-Z_:][a-zA-Z0-9_:]*$`}

// Registry holds collectors and writes what they collect.
type Registry struct {
	mu         sync.Mutex
	collectors []Collector
	names      map[string]bool
	// handlerErrors counts the errors of every Handler of the registry.
	handlerErrors *CounterVec
}

// NewRegistry returns an empty Registry.
func NewRegistry() *Registry { return &Registry{names: map[string]bool{}} }

// Register adds c, unless one of its family names is invalid or already
// registered.
func (r *Registry) Register(c Collector) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := c.Describe()
	for _, n := range names {
		if !nameRE.Get().MatchString(n) {
			return fmt.Errorf("metric name %q is not valid", n)
		}
		if r.names[n] {
			return fmt.Errorf("metric %q is already registered", n)
		}
	}
	for _, n := range names {
		r.names[n] = true
	}
	r.collectors = append(r.collectors, c)
	return nil
}

// MustRegister registers every collector and panics on the first error.
func (r *Registry) MustRegister(cs ...Collector) {
	for _, c := range cs {
		if err := r.Register(c); err != nil {
			panic(err)
		}
	}
}

// Gather returns the families of every collector, those without samples
// left out, sorted by name, each family's samples sorted by their labels.
func (r *Registry) Gather() []Family {
	r.mu.Lock()
	cs := slices.Clone(r.collectors)
	r.mu.Unlock()
	var fams []Family
	for _, c := range cs {
		c.Collect(func(f Family) {
			if len(f.Samples) > 0 {
				fams = append(fams, f)
			}
		})
	}
	slices.SortFunc(fams, func(a, b Family) int { return strings.Compare(a.Name, b.Name) })
	return fams
}

// WriteText writes every family in Prometheus's text format.
func (r *Registry) WriteText(w io.Writer) error {
	var b strings.Builder
	for _, f := range r.Gather() {
		writeFamily(&b, f)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// ContentType is the media type of WriteText's output, as client_golang's
// handler names it.
const ContentType = "text/plain; version=0.0.4; charset=utf-8; escaping=underscores"

// Handler serves WriteText's output, as a Prometheus server scrapes it, and
// registers on r, as client_golang's handler does,
// promhttp_metric_handler_errors_total{cause}: scrapes whose answer could
// not be written ("encoding"; "gathering" cannot fail here and stays 0).
// Every handler of r counts in that one family.
func (r *Registry) Handler() http.Handler {
	r.mu.Lock()
	if r.handlerErrors == nil {
		r.handlerErrors = NewCounterVec("promhttp_metric_handler_errors_total",
			"Total number of internal errors encountered by the promhttp metric handler.", "cause")
		r.handlerErrors.WithLabelValues("gathering")
	}
	errs := r.handlerErrors
	r.mu.Unlock()
	encoding := errs.WithLabelValues("encoding")
	_ = r.Register(errs) // refused, as already registered, from the second handler on
	return http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", ContentType)
		if err := r.WriteText(w); err != nil {
			encoding.Inc()
		}
	})
}

func writeFamily(w *strings.Builder, f Family) {
	fmt.Fprintf(w, "# HELP %s %s\n# TYPE %s %s\n", f.Name, escape(f.Help, false), f.Name, f.Type)
	for _, s := range f.Samples {
		w.WriteString(f.Name)
		w.WriteString(s.Suffix)
		if len(s.Labels) > 0 {
			w.WriteByte('{')
			for i, l := range s.Labels {
				if i > 0 {
					w.WriteByte(',')
				}
				fmt.Fprintf(w, `%s="%s"`, l.Name, escape(l.Value, true))
			}
			w.WriteByte('}')
		}
		w.WriteByte(' ')
		w.WriteString(formatFloat(s.Value))
		w.WriteByte('\n')
	}
}

// escape escapes a help text (backslash, newline) or a label value (and
// the double quote) as the text format requires.
func escape(s string, quote bool) string {
	if !strings.ContainsAny(s, "\\\n\"") {
		return s
	}
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\\':
			b.WriteString(`\\`)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '"' && quote:
			b.WriteString(`\"`)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, 1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}

// desc is what a family of series is: name, help, type, label names.
type desc struct {
	name, help string
	typ        Type
	labels     []string
}

func (d *desc) Describe() []string { return []string{d.name} }

// labelPairs pairs d's label names with values, sorted by name as
// client_golang writes them.
func (d *desc) labelPairs(values []string) []Label {
	if len(values) != len(d.labels) {
		panic(fmt.Sprintf("metric %s has %d labels, got %d values", d.name, len(d.labels), len(values)))
	}
	ls := make([]Label, len(values))
	for i, v := range values {
		ls[i] = Label{d.labels[i], v}
	}
	slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	return ls
}

// sortSamples sorts samples by their label values, in label name order.
func sortSamples(ss []Sample) {
	slices.SortStableFunc(ss, func(a, b Sample) int {
		for i := range min(len(a.Labels), len(b.Labels)) {
			if c := strings.Compare(a.Labels[i].Value, b.Labels[i].Value); c != 0 {
				return c
			}
		}
		return 0
	})
}

// value is a float64 updated atomically.
type value struct{ bits atomic.Uint64 }

func (v *value) load() float64 { return math.Float64frombits(v.bits.Load()) }

func (v *value) set(f float64) { v.bits.Store(math.Float64bits(f)) }

func (v *value) add(d float64) {
	for {
		old := v.bits.Load()
		if v.bits.CompareAndSwap(old, math.Float64bits(math.Float64frombits(old)+d)) {
			return
		}
	}
}

// Counter is a value that only goes up.
type Counter struct {
	v      value
	d      *desc // nil for a series of a CounterVec
	labels []Label
}

// NewCounter returns a counter without labels, reported from the start.
func NewCounter(name, help string) *Counter {
	return &Counter{d: &desc{name: name, help: help, typ: CounterType}}
}

// Inc adds 1.
func (c *Counter) Inc() { c.v.add(1) }

// Add adds d, which must not be negative.
func (c *Counter) Add(d float64) {
	if d < 0 {
		panic("counter cannot decrease")
	}
	c.v.add(d)
}

// Value returns the count.
func (c *Counter) Value() float64 { return c.v.load() }

// Describe implements Collector.
func (c *Counter) Describe() []string { return c.d.Describe() }

// Collect implements Collector.
func (c *Counter) Collect(add func(Family)) {
	add(Family{Name: c.d.name, Help: c.d.help, Type: c.d.typ, Samples: []Sample{{Value: c.Value()}}})
}

// Gauge is a value that is set.
type Gauge struct {
	v      value
	labels []Label
}

// Set sets the gauge to f.
func (g *Gauge) Set(f float64) { g.v.set(f) }

// Value returns the gauge's value.
func (g *Gauge) Value() float64 { return g.v.load() }

// vec is a family of series told apart by their label values; a series
// is reported once asked for.
type vec[T any] struct {
	desc
	mu     sync.Mutex
	series map[string]*T
	keys   []string
	make   func(labels []Label) *T
}

func (v *vec[T]) get(values []string) *T {
	key := strings.Join(values, "\xff")
	v.mu.Lock()
	defer v.mu.Unlock()
	if s, ok := v.series[key]; ok {
		return s
	}
	s := v.make(v.labelPairs(values))
	v.series[key] = s
	v.keys = append(v.keys, key)
	return s
}

func (v *vec[T]) collect(add func(Family), sample func(*T) Sample) {
	v.mu.Lock()
	ss := make([]Sample, 0, len(v.keys))
	for _, k := range v.keys {
		ss = append(ss, sample(v.series[k]))
	}
	v.mu.Unlock()
	sortSamples(ss)
	add(Family{Name: v.name, Help: v.help, Type: v.typ, Samples: ss})
}

// CounterVec is a family of counters by label values.
type CounterVec struct{ v vec[Counter] }

// NewCounterVec returns a family of counters with these label names.
func NewCounterVec(name, help string, labels ...string) *CounterVec {
	return &CounterVec{v: vec[Counter]{
		desc: desc{name: name, help: help, typ: CounterType, labels: labels}, series: map[string]*Counter{},
		make: func(ls []Label) *Counter { return &Counter{labels: ls} },
	}}
}

// WithLabelValues returns the counter of these label values (in the order
// of the label names), creating it at 0.
func (c *CounterVec) WithLabelValues(values ...string) *Counter { return c.v.get(values) }

// Describe implements Collector.
func (c *CounterVec) Describe() []string { return c.v.Describe() }

// Collect implements Collector.
func (c *CounterVec) Collect(add func(Family)) {
	c.v.collect(add, func(s *Counter) Sample { return Sample{Labels: s.labels, Value: s.Value()} })
}

// GaugeVec is a family of gauges by label values.
type GaugeVec struct{ v vec[Gauge] }

// NewGaugeVec returns a family of gauges with these label names.
func NewGaugeVec(name, help string, labels ...string) *GaugeVec {
	return &GaugeVec{v: vec[Gauge]{
		desc: desc{name: name, help: help, typ: GaugeType, labels: labels}, series: map[string]*Gauge{},
		make: func(ls []Label) *Gauge { return &Gauge{labels: ls} },
	}}
}

// WithLabelValues returns the gauge of these label values, creating it at 0.
func (g *GaugeVec) WithLabelValues(values ...string) *Gauge { return g.v.get(values) }

// Describe implements Collector.
func (g *GaugeVec) Describe() []string { return g.v.Describe() }

// Collect implements Collector.
func (g *GaugeVec) Collect(add func(Family)) {
	g.v.collect(add, func(s *Gauge) Sample { return Sample{Labels: s.labels, Value: s.Value()} })
}

// Histogram counts observations in buckets of upper bounds.
type Histogram struct {
	desc
	labels []Label // of a series of a HistogramVec
	bounds []float64
	mu     sync.Mutex
	counts []uint64 // per bucket, not cumulative; the last is +Inf
	sum    float64
}

// NewHistogram returns a histogram of these increasing upper bounds (a
// +Inf bucket is added).
func NewHistogram(name, help string, bounds []float64) *Histogram {
	return &Histogram{
		desc:   desc{name: name, help: help, typ: HistogramType},
		bounds: slices.Clone(bounds), counts: make([]uint64, len(bounds)+1),
	}
}

// ExponentialBuckets returns count upper bounds: start, start×factor, …
func ExponentialBuckets(start, factor float64, count int) []float64 {
	b := make([]float64, count)
	for i := range b {
		b[i] = start
		start *= factor
	}
	return b
}

// Observe counts f in the first bucket whose bound is at least f.
func (h *Histogram) Observe(f float64) {
	i, _ := slices.BinarySearch(h.bounds, f)
	h.mu.Lock()
	h.counts[i]++
	h.sum += f
	h.mu.Unlock()
}

// Collect implements Collector.
func (h *Histogram) Collect(add func(Family)) {
	h.mu.Lock()
	counts, sum := slices.Clone(h.counts), h.sum
	h.mu.Unlock()
	ss := make([]Sample, 0, len(counts)+2)
	var n uint64
	for i, c := range counts {
		n += c
		le := math.Inf(1)
		if i < len(h.bounds) {
			le = h.bounds[i]
		}
		ss = append(ss, Sample{Suffix: "_bucket", Labels: []Label{{"le", formatFloat(le)}}, Value: float64(n)})
	}
	ss = append(ss, Sample{Suffix: "_sum", Value: sum}, Sample{Suffix: "_count", Value: float64(n)})
	add(Family{Name: h.name, Help: h.help, Type: h.typ, Samples: ss})
}

// Func is a collector of one family computed when collected, as lockctl_jobs
// counts the reconciler's cache at scrape time.
type Func struct {
	desc
	collect func(add func(labelValues []string, v float64))
}

// NewGaugeFunc returns a gauge family whose series collect gives at each
// scrape, with label values in the order of labels.
func NewGaugeFunc(name, help string, labels []string, collect func(add func(labelValues []string, v float64))) *Func {
	return &Func{desc: desc{name: name, help: help, typ: GaugeType, labels: labels}, collect: collect}
}

// Collect implements Collector.
func (f *Func) Collect(add func(Family)) {
	var ss []Sample
	f.collect(func(values []string, v float64) {
		ss = append(ss, Sample{Labels: f.labelPairs(values), Value: v})
	})
	sortSamples(ss)
	add(Family{Name: f.name, Help: f.help, Type: f.typ, Samples: ss})
}

// delete removes the series of these label values; it reports whether
// there was one.
func (v *vec[T]) delete(values []string) bool {
	key := strings.Join(values, "\xff")
	v.mu.Lock()
	defer v.mu.Unlock()
	if _, ok := v.series[key]; !ok {
		return false
	}
	delete(v.series, key)
	v.keys = slices.DeleteFunc(v.keys, func(k string) bool { return k == key })
	return true
}

// DeleteLabelValues removes the counter of these label values, as
// client_golang's does for an object that is gone; it reports whether
// there was one.
func (c *CounterVec) DeleteLabelValues(values ...string) bool { return c.v.delete(values) }

// HistogramVec is a family of histograms by label values, all of the same
// buckets.
type HistogramVec struct {
	v      vec[Histogram]
	bounds []float64
}

// NewHistogramVec returns a family of histograms of these increasing
// upper bounds (a +Inf bucket is added) with these label names.
func NewHistogramVec(name, help string, bounds []float64, labels ...string) *HistogramVec {
	h := &HistogramVec{bounds: slices.Clone(bounds)}
	h.v = vec[Histogram]{
		desc: desc{name: name, help: help, typ: HistogramType, labels: labels}, series: map[string]*Histogram{},
		make: func(ls []Label) *Histogram {
			s := NewHistogram(name, help, h.bounds)
			s.labels = ls
			return s
		},
	}
	return h
}

// WithLabelValues returns the histogram of these label values, creating
// it empty.
func (h *HistogramVec) WithLabelValues(values ...string) *Histogram { return h.v.get(values) }

// DeleteLabelValues removes the histogram of these label values; it
// reports whether there was one.
func (h *HistogramVec) DeleteLabelValues(values ...string) bool { return h.v.delete(values) }

// Describe implements Collector.
func (h *HistogramVec) Describe() []string { return h.v.Describe() }

// Collect implements Collector: each series' buckets, sum and count, the
// series in the order of their label values.
func (h *HistogramVec) Collect(add func(Family)) {
	h.v.mu.Lock()
	series := make([]*Histogram, 0, len(h.v.keys))
	for _, k := range h.v.keys {
		series = append(series, h.v.series[k])
	}
	h.v.mu.Unlock()
	slices.SortStableFunc(series, func(a, b *Histogram) int {
		for i := range min(len(a.labels), len(b.labels)) {
			if c := strings.Compare(a.labels[i].Value, b.labels[i].Value); c != 0 {
				return c
			}
		}
		return 0
	})
	var ss []Sample
	for _, s := range series {
		s.Collect(func(f Family) {
			for _, smp := range f.Samples {
				smp.Labels = append(slices.Clone(s.labels), smp.Labels...)
				ss = append(ss, smp)
			}
		})
	}
	add(Family{Name: h.v.name, Help: h.v.help, Type: HistogramType, Samples: ss})
}
