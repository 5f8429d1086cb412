package bench

import (
	"fmt"
	"html"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Plot is a line chart of a benchmark's own figures, written as SVG with
// no dependency: a curve says how a cost grows where a table only lists it.
type Plot struct {
	Title, XLabel, YLabel string
	// LogX spaces the x axis logarithmically (sizes 2, 10, 50, 200).
	LogX   bool
	Series []Series
}

// Series is one curve: Y[i] measured at X[i].
type Series struct {
	Name string
	X, Y []float64
}

// palette colours the series in order.
var palette = []string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

const (
	plotW, plotH             = 640, 360
	padL, padR, padT, padB   = 70, 20, 40, 50
	innerW, innerH           = plotW - padL - padR, plotH - padT - padB
	legendLine, legendIndent = 16, 10
)

// SVG renders the plot.
func (p Plot) SVG() string {
	xmin, xmax := math.Inf(1), math.Inf(-1)
	ymax := 0.0
	for _, s := range p.Series {
		for i, x := range s.X {
			xmin, xmax = math.Min(xmin, x), math.Max(xmax, x)
			if i < len(s.Y) {
				ymax = math.Max(ymax, s.Y[i])
			}
		}
	}
	if math.IsInf(xmin, 0) {
		xmin, xmax = 0, 1
	}
	fx := func(x float64) float64 { return x }
	if p.LogX && xmin > 0 {
		fx = math.Log10
	}
	lo, hi := fx(xmin), fx(xmax)
	if hi == lo {
		hi = lo + 1
	}
	step := niceStep(ymax / 4)
	top := step * math.Ceil(ymax/step)
	if top == 0 {
		top = 1
	}
	px := func(x float64) float64 { return padL + (fx(x)-lo)/(hi-lo)*innerW }
	py := func(y float64) float64 { return padT + innerH - y/top*innerH }

	var b strings.Builder
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="12">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="20" font-size="14" font-weight="bold">%s</text>`+"\n", padL, html.EscapeString(p.Title))
	for y := 0.0; y <= top+step/2; y += step {
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%.1f" y2="%.1f" stroke="#ddd"/>`+"\n", padL, padL+innerW, py(y), py(y))
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", padL-6, py(y)+4, formatTick(y))
	}
	ticks := map[float64]bool{}
	for _, s := range p.Series {
		for _, x := range s.X {
			if !ticks[x] {
				ticks[x] = true
				fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", px(x), padT+innerH+16, formatTick(x))
			}
		}
	}
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>`+"\n", padL, padL+innerW, padT+innerH, padT+innerH)
	fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="black"/>`+"\n", padL, padL, padT, padT+innerH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">%s</text>`+"\n", padL+innerW/2, plotH-10, html.EscapeString(p.XLabel))
	fmt.Fprintf(&b, `<text transform="translate(16 %d) rotate(-90)" text-anchor="middle">%s</text>`+"\n", padT+innerH/2, html.EscapeString(p.YLabel))
	for i, s := range p.Series {
		colour := palette[i%len(palette)]
		var pts []string
		for j, x := range s.X {
			if j >= len(s.Y) {
				break
			}
			pts = append(pts, fmt.Sprintf("%.1f,%.1f", px(x), py(s.Y[j])))
			fmt.Fprintf(&b, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"/>`+"\n", px(x), py(s.Y[j]), colour)
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", colour, strings.Join(pts, " "))
		ly := padT + legendIndent + i*legendLine
		fmt.Fprintf(&b, `<line x1="%d" x2="%d" y1="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", padL+legendIndent, padL+legendIndent+20, ly, ly, colour)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", padL+legendIndent+26, ly+4, html.EscapeString(s.Name))
	}
	b.WriteString("</svg>\n")
	return b.String()
}

// niceStep rounds d up to 1, 2 or 5 times a power of ten.
func niceStep(d float64) float64 {
	if d <= 0 {
		return 1
	}
	exp := math.Pow(10, math.Floor(math.Log10(d)))
	for _, m := range []float64{1, 2, 5, 10} {
		if d <= m*exp {
			return m * exp
		}
	}
	return 10 * exp
}

// formatTick renders an axis value without trailing zeros: 0.5, 2, 5000.
func formatTick(v float64) string {
	return strconv.FormatFloat(v, 'g', 6, 64)
}

// WritePlot writes p as NAME.svg into the directory LOCKCTL_BENCH_PLOTS
// names (the Makefile's scale target names docs/images), and reports
// where; it writes nothing without it.
func WritePlot(name string, p Plot) (string, error) {
	dir := os.Getenv("LOCKCTL_BENCH_PLOTS")
	if dir == "" {
		return "", nil
	}
	path := filepath.Join(dir, name+".svg")
	if err := os.WriteFile(path, []byte(p.SVG()), 0o644); err != nil {
		return "", fmt.Errorf("write plot %s: %w", path, err)
	}
	return path, nil
}
