package bench

import (
	"encoding/xml"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestPlotSVG(t *testing.T) {
	p := Plot{Title: "Gap <by> queue", XLabel: "waiters", YLabel: "ms", LogX: true, Series: []Series{
		{Name: "p50", X: []float64{2, 10, 50, 200}, Y: []float64{8, 9, 11, 14}},
		{Name: "p99", X: []float64{2, 10, 50, 200}, Y: []float64{12, 15, 30, 61}},
	}}
	svg := p.SVG()
	require.NoError(t, xml.Unmarshal([]byte(svg), new(struct{ XMLName xml.Name })), "well-formed XML:\n%s", svg)
	assert.Contains(t, svg, "Gap &lt;by&gt; queue", "text escaped")
	assert.Equal(t, 2, strings.Count(svg, "<polyline"), "one line per series")
	assert.Equal(t, 8, strings.Count(svg, "<circle"), "one dot per point")
	for _, tick := range []string{">2<", ">10<", ">50<", ">200<", ">0<", ">80<"} {
		assert.Contains(t, svg, tick, "axis label")
	}
	// On a log axis 10 is as far from 2 as 50 from 10.
	assert.Contains(t, svg, `cx="70.0"`, "the first x at the left edge")
	assert.Contains(t, svg, `cx="620.0"`, "the last x at the right edge")
}

func TestPlotSVGEmpty(t *testing.T) {
	svg := Plot{Title: "nothing"}.SVG()
	require.NoError(t, xml.Unmarshal([]byte(svg), new(struct{ XMLName xml.Name })))
}

func TestWritePlot(t *testing.T) {
	dir := t.TempDir()
	t.Setenv("LOCKCTL_BENCH_PLOTS", "")
	path, err := WritePlot("x", Plot{})
	require.NoError(t, err)
	assert.Empty(t, path, "nothing written without LOCKCTL_BENCH_PLOTS")
	t.Setenv("LOCKCTL_BENCH_PLOTS", dir)
	path, err = WritePlot("x", Plot{})
	require.NoError(t, err)
	assert.Equal(t, filepath.Join(dir, "x.svg"), path)
	_, err = os.Stat(path)
	assert.NoError(t, err)
}

func TestNiceStep(t *testing.T) {
	for in, want := range map[float64]float64{0: 1, 0.3: 0.5, 1: 1, 1.2: 2, 3: 5, 7: 10, 140: 200} {
		assert.InDelta(t, want, niceStep(in), 1e-9, "niceStep(%v)", in)
	}
}

func TestParseStatCPU(t *testing.T) {
	// Fields 14 and 15 (utime, stime) are 250 and 50 ticks; the command
	// name holds a space and a parenthesis.
	stat := "1234 (kube apiserver)) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 50 0 0 20 0 12 0 100 1000000 5000"
	got, err := parseStatCPU(stat)
	require.NoError(t, err)
	assert.Equal(t, 3*time.Second, got)
	_, err = parseStatCPU("1234 (x) S 1")
	assert.Error(t, err)
}
