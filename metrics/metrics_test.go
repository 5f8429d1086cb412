package metrics_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/metrics"
)

// parse reads text as a Prometheus server does, failing the test on an
// error.
func parse(t *testing.T, text string) map[string]*dto.MetricFamily {
	t.Helper()
	p := expfmt.NewTextParser(model.LegacyValidation)
	fams, err := p.TextToMetricFamilies(strings.NewReader(text))
	require.NoError(t, err, text)
	return fams
}

func scrape(t *testing.T, reg *metrics.Registry) string {
	t.Helper()
	var b bytes.Buffer
	require.NoError(t, reg.WriteText(&b))
	return b.String()
}

func TestOwnFamiliesParseAndCount(t *testing.T) {
	reg := metrics.NewRegistry()
	cv := metrics.NewCounterVec("x_total", "Things done,\nby kind \\ \"quoted\".", "kind", "by")
	gv := metrics.NewGaugeVec("x_status", "Status.", "cluster", "status")
	c := metrics.NewCounter("x_errors_total", "Errors.")
	h := metrics.NewHistogram("x_seconds", "Time.", metrics.ExponentialBuckets(0.001, 2, 3))
	f := metrics.NewGaugeFunc("x_jobs", "Jobs.", []string{"state", "job"}, func(add func([]string, float64)) {
		add([]string{"pending", "b"}, 2)
		add([]string{"failure", "a"}, 1)
	})
	reg.MustRegister(cv, gv, c, h, f)
	cv.WithLabelValues("a\"b\\c\nd", "me").Inc()
	cv.WithLabelValues("a\"b\\c\nd", "me").Add(2)
	cv.WithLabelValues("b", "me")
	gv.WithLabelValues("default", "reachable").Set(1)
	for _, v := range []float64{0.0005, 0.001, 0.003, 10} {
		h.Observe(v)
	}

	text := scrape(t, reg)
	fams := parse(t, text)
	require.Len(t, fams, 5, text)

	x := fams["x_total"]
	assert.Equal(t, dto.MetricType_COUNTER, x.GetType())
	assert.Equal(t, "Things done,\nby kind \\ \"quoted\".", x.GetHelp(), "the help text round-trips")
	require.Len(t, x.Metric, 2)
	assert.Equal(t, "a\"b\\c\nd", labelValue(x.Metric[0], "kind"), "the label value round-trips")
	assert.Equal(t, 3.0, x.Metric[0].GetCounter().GetValue())
	assert.Equal(t, 0.0, x.Metric[1].GetCounter().GetValue(), "a series asked for is reported at 0")
	assert.Contains(t, text, `x_total{by="me",kind=`, "labels in name order, as client_golang writes them")

	assert.Equal(t, 1.0, fams["x_status"].Metric[0].GetGauge().GetValue())
	assert.Equal(t, 0.0, fams["x_errors_total"].Metric[0].GetCounter().GetValue(), "a plain counter is there from the start")

	hist := fams["x_seconds"].Metric[0].GetHistogram()
	assert.Equal(t, uint64(4), hist.GetSampleCount())
	assert.InDelta(t, 10.0045, hist.GetSampleSum(), 1e-9)
	var cum []uint64
	for _, b := range hist.Bucket {
		cum = append(cum, b.GetCumulativeCount())
	}
	assert.Equal(t, []uint64{2, 2, 3, 4}, cum, "le 0.001 holds 0.001 itself; 10 is only in +Inf")

	jobs := fams["x_jobs"]
	assert.Equal(t, dto.MetricType_GAUGE, jobs.GetType())
	require.Len(t, jobs.Metric, 2)
	assert.Equal(t, "a", labelValue(jobs.Metric[0], "job"), "sorted by label values")
}

func TestEmptyFamiliesAreLeftOut(t *testing.T) {
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewCounterVec("y_total", "Y.", "kind"))
	assert.Empty(t, scrape(t, reg), "as client_golang: a family without series has no lines")
}

func TestRegisterRefusesDuplicatesAndBadNames(t *testing.T) {
	reg := metrics.NewRegistry()
	require.NoError(t, reg.Register(metrics.NewCounter("z_total", "Z.")))
	assert.ErrorContains(t, reg.Register(metrics.NewCounterVec("z_total", "Z again.", "a")), "already registered")
	assert.ErrorContains(t, reg.Register(metrics.NewCounter("z-total", "Z.")), "not valid")
	assert.Panics(t, func() { metrics.NewCounterVec("w_total", "W.", "a").WithLabelValues("1", "2") }, "wrong number of label values")
}

func TestHandlerServesTheTextFormat(t *testing.T) {
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewCounter("z_total", "Z."))
	rec := httptest.NewRecorder()
	reg.Handler().ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, metrics.ContentType, rec.Header().Get("Content-Type"))
	fams := parse(t, rec.Body.String())
	assert.Contains(t, fams, "z_total")
	require.Contains(t, fams, "promhttp_metric_handler_errors_total", "as client_golang's handler registers it")
	assert.Len(t, fams["promhttp_metric_handler_errors_total"].Metric, 2, "encoding and gathering")

	reg.Handler().ServeHTTP(failingWriter{httptest.NewRecorder()}, httptest.NewRequest(http.MethodGet, "/metrics", nil))
	fams = parse(t, scrape(t, reg))
	errs := fams["promhttp_metric_handler_errors_total"]
	require.Len(t, errs.Metric, 2)
	assert.Equal(t, "encoding", labelValue(errs.Metric[0], "cause"))
	assert.Equal(t, 1.0, errs.Metric[0].GetCounter().GetValue(), "a second handler's failed write, counted in the one family")
}

// failingWriter is a client gone before the answer is written.
type failingWriter struct{ *httptest.ResponseRecorder }

func (failingWriter) Write([]byte) (int, error) { return 0, errors.New("connection reset") }

func (failingWriter) WriteString(string) (int, error) { return 0, errors.New("connection reset") }

// The Go and process families are client_golang's: same names, types,
// help texts and label names as its collectors gathered in this process.
func TestRuntimeFamiliesAreClientGolangs(t *testing.T) {
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewGoCollector(), metrics.NewProcessCollector())
	ours := parse(t, scrape(t, reg))

	theirs := prometheus.NewRegistry()
	theirs.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	want, err := theirs.Gather()
	require.NoError(t, err)

	var wantNames, gotNames []string
	for _, w := range want {
		wantNames = append(wantNames, w.GetName())
		got, ok := ours[w.GetName()]
		if !assert.True(t, ok, "%s is missing", w.GetName()) {
			continue
		}
		assert.Equal(t, w.GetType(), got.GetType(), w.GetName())
		assert.Equal(t, w.GetHelp(), got.GetHelp(), w.GetName())
		assert.Equal(t, labelNames(w.Metric[0]), labelNames(got.Metric[0]), w.GetName())
		assert.Len(t, got.Metric, len(w.Metric), w.GetName())
	}
	for n := range ours {
		gotNames = append(gotNames, n)
	}
	slices.Sort(gotNames)
	assert.Equal(t, wantNames, gotNames)

	assert.Positive(t, ours["process_resident_memory_bytes"].Metric[0].GetGauge().GetValue())
	assert.Positive(t, ours["process_start_time_seconds"].Metric[0].GetGauge().GetValue())
	assert.Positive(t, ours["go_goroutines"].Metric[0].GetGauge().GetValue())
	assert.Equal(t, 5, len(ours["go_gc_duration_seconds"].Metric[0].GetSummary().GetQuantile()))
}

func labelValue(m *dto.Metric, name string) string {
	for _, l := range m.Label {
		if l.GetName() == name {
			return l.GetValue()
		}
	}
	return ""
}

func labelNames(m *dto.Metric) []string {
	var ns []string
	for _, l := range m.Label {
		ns = append(ns, l.GetName())
	}
	return ns
}
