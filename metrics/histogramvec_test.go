package metrics_test

import (
	"bytes"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/common/expfmt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/lockctl/lockctl/metrics"
)

// TestHistogramVecIsClientGolangs: a family of histograms by label values,
// and one removed, is written as client_golang writes the same family.
func TestHistogramVecIsClientGolangs(t *testing.T) {
	t.Parallel()
	bounds := []float64{1, 2.5, 5}
	ours := metrics.NewHistogramVec("x_wait_seconds", "Waits.", bounds, "target", "namespace")
	theirs := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "x_wait_seconds", Help: "Waits.", Buckets: bounds}, []string{"target", "namespace"})
	observe := func(target string, vs ...float64) {
		for _, v := range vs {
			ours.WithLabelValues(target, "ci").Observe(v)
			theirs.WithLabelValues(target, "ci").Observe(v)
		}
	}
	observe("staging", 0.5, 2, 3, 7)
	observe("prod", 1)
	observe("gone", 4)
	assert.True(t, ours.DeleteLabelValues("gone", "ci"))
	assert.False(t, ours.DeleteLabelValues("gone", "ci"), "deleted once")
	theirs.DeleteLabelValues("gone", "ci")

	reg := metrics.NewRegistry()
	reg.MustRegister(ours)
	creg := prometheus.NewPedanticRegistry()
	creg.MustRegister(theirs)
	fams, err := creg.Gather()
	require.NoError(t, err)
	var want bytes.Buffer
	enc := expfmt.NewEncoder(&want, expfmt.NewFormat(expfmt.TypeTextPlain))
	for _, f := range fams {
		require.NoError(t, enc.Encode(f))
	}
	assert.Equal(t, want.String(), scrape(t, reg))
}
