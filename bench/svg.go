package bench

import (
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strings"
)

// Plot geometry, in SVG user units.
const (
	plotW, plotH                 = 900, 560
	plotLeft, plotRight          = 90, 230
	plotTop, plotBottom          = 60, 70
	plotMaxNines                 = curveNines // x axis ends at 99.999%
	plotInnerW                   = plotW - plotLeft - plotRight
	plotInnerH                   = plotH - plotTop - plotBottom
	plotLegendX, plotLegendLineH = plotW - plotRight + 20, 20
)

var plotColors = []string{"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#17becf", "#7f7f7f", "#bcbd22"}

// PlotSeries is one line of a latency-by-percentile chart.
type PlotSeries struct {
	Label  string
	Points []CurvePoint
}

// nines maps a percentile to the chart's x scale: the number of nines,
// -log10(1 - p/100), so 0%, 90%, 99%, 99.9% are evenly spaced.
func nines(p float64) float64 {
	if p >= 100 {
		return plotMaxNines
	}
	return min(-math.Log10(1-p/100), plotMaxNines)
}

// niceCeil rounds v up to 1, 2 or 5 times a power of ten.
func niceCeil(v float64) float64 {
	if v <= 0 {
		return 1
	}
	e := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*e >= v {
			return m * e
		}
	}
	return 10 * e
}

func xmlText(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// WritePlotSVG writes a latency-by-percentile chart like HdrHistogram's
// plotter: the x axis is the percentile on a log scale of nines (0%, 90%,
// 99%, 99.9%, 99.99%, 99.999%), the y axis the latency in microseconds, one
// line per series with a legend. Only the standard library is used.
func WritePlotSVG(w io.Writer, title string, series []PlotSeries) error {
	maxY := 0.0
	for _, s := range series {
		for _, p := range s.Points {
			if p.Percentile < 100 { // the max is drawn as the curve's end
				maxY = max(maxY, p.Micros)
			}
		}
	}
	maxY = niceCeil(maxY * 1.05)
	x := func(p float64) float64 { return plotLeft + nines(p)/plotMaxNines*plotInnerW }
	y := func(us float64) float64 { return plotTop + plotInnerH - min(us/maxY, 1)*plotInnerH }

	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(&b, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d" font-family="sans-serif" font-size="13">`+"\n", plotW, plotH, plotW, plotH)
	fmt.Fprintf(&b, `<rect width="%d" height="%d" fill="white"/>`+"\n", plotW, plotH)
	fmt.Fprintf(&b, `<text x="%d" y="30" text-anchor="middle" font-size="17" font-weight="bold">%s</text>`+"\n", (plotLeft+plotW-plotRight)/2, xmlText(title))

	// Grid and x ticks: one per nine.
	for n := 0; n <= plotMaxNines; n++ {
		p := 100 * (1 - math.Pow(10, -float64(n)))
		xp := x(p)
		label := fmt.Sprintf("%.*f%%", max(n-2, 0), p) // 0%, 90%, 99%, 99.9%, ...
		fmt.Fprintf(&b, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", xp, plotTop, xp, plotTop+plotInnerH)
		fmt.Fprintf(&b, `<text x="%.1f" y="%d" text-anchor="middle">%s</text>`+"\n", xp, plotTop+plotInnerH+20, label)
	}
	// y ticks: five steps.
	const yTicks = 5
	for i := 0; i <= yTicks; i++ {
		v := maxY * float64(i) / yTicks
		yp := y(v)
		fmt.Fprintf(&b, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", plotLeft, yp, plotLeft+plotInnerW, yp)
		fmt.Fprintf(&b, `<text x="%d" y="%.1f" text-anchor="end">%s</text>`+"\n", plotLeft-8, yp+4, formatMicros(v))
	}
	fmt.Fprintf(&b, `<rect x="%d" y="%d" width="%d" height="%d" fill="none" stroke="black"/>`+"\n", plotLeft, plotTop, plotInnerW, plotInnerH)
	fmt.Fprintf(&b, `<text x="%d" y="%d" text-anchor="middle">Percentile</text>`+"\n", plotLeft+plotInnerW/2, plotH-20)
	fmt.Fprintf(&b, `<text x="20" y="%d" text-anchor="middle" transform="rotate(-90 20 %d)">Latency (µs)</text>`+"\n", plotTop+plotInnerH/2, plotTop+plotInnerH/2)

	for i, s := range series {
		color := plotColors[i%len(plotColors)]
		var pts strings.Builder
		for _, p := range s.Points {
			fmt.Fprintf(&pts, "%.1f,%.1f ", x(p.Percentile), y(p.Micros))
		}
		fmt.Fprintf(&b, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.TrimSpace(pts.String()))
		ly := plotTop + 10 + i*plotLegendLineH
		fmt.Fprintf(&b, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="3"/>`+"\n", plotLegendX, ly, plotLegendX+24, ly, color)
		fmt.Fprintf(&b, `<text x="%d" y="%d">%s</text>`+"\n", plotLegendX+30, ly+4, xmlText(s.Label))
	}
	b.WriteString("</svg>\n")
	_, err := io.WriteString(w, b.String())
	return err
}

func formatMicros(v float64) string {
	if v >= 10 || v == 0 {
		return fmt.Sprintf("%.0f", v)
	}
	return fmt.Sprintf("%.1f", v)
}
