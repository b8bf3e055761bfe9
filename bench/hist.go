package bench

import (
	"fmt"
	"io"
	"math"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"
)

// Histogram range: latencies are recorded in nanoseconds from 1 ns to a
// minute with three significant digits (about 220 KiB per histogram).
const (
	histLowest  = 1
	histHighest = int64(time.Minute)
	histDigits  = 3
)

// NewHistogram returns an empty latency histogram of nanoseconds.
func NewHistogram() *hdrhistogram.Histogram {
	return hdrhistogram.New(histLowest, histHighest, histDigits)
}

// RecordLatency records d, clamped into the histogram's range so that no
// value is silently lost. It does not allocate.
func RecordLatency(h *hdrhistogram.Histogram, d time.Duration) {
	v := min(max(int64(d), histLowest), histHighest)
	_ = h.RecordValue(v) // cannot fail: v is in range
}

// Percentiles are the summary points of a latency distribution, in
// microseconds.
type Percentiles struct {
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

func nsToMicros(ns int64) float64 { return float64(ns) / 1e3 }

// PercentilesOf extracts the summary percentiles of h (all zero if h is
// empty).
func PercentilesOf(h *hdrhistogram.Histogram) Percentiles {
	if h.TotalCount() == 0 {
		return Percentiles{}
	}
	return Percentiles{
		P50:  nsToMicros(h.ValueAtPercentile(50)),
		P90:  nsToMicros(h.ValueAtPercentile(90)),
		P99:  nsToMicros(h.ValueAtPercentile(99)),
		P999: nsToMicros(h.ValueAtPercentile(99.9)),
		Max:  nsToMicros(h.Max()),
	}
}

// CurvePoint is one point of a latency-by-percentile curve.
type CurvePoint struct {
	Percentile float64 `json:"percentile"`
	Micros     float64 `json:"us"`
}

// curveNines is how far into the tail a curve goes: 1 - 10^-curveNines.
const curveNines = 5

// Curve samples h at percentiles evenly spaced on the "number of nines"
// scale HdrHistogram plots use (0, 90, 99, 99.9, ... with 10 points per
// decade), ending with the maximum. It is what a JSON report keeps so that
// runs can be plotted together later.
func Curve(h *hdrhistogram.Histogram) []CurvePoint {
	if h.TotalCount() == 0 {
		return nil
	}
	const perDecade = 10
	pts := make([]CurvePoint, 0, curveNines*perDecade+2)
	for i := 0; i <= curveNines*perDecade; i++ {
		p := 100 * (1 - math.Pow(10, -float64(i)/perDecade))
		pts = append(pts, CurvePoint{Percentile: p, Micros: nsToMicros(h.ValueAtPercentile(p))})
	}
	pts = append(pts, CurvePoint{Percentile: 100, Micros: nsToMicros(h.Max())})
	return pts
}

// WriteHgrm writes h as HdrHistogram's percentile distribution text (the
// .hgrm format its plotter reads), with values in microseconds.
func WriteHgrm(w io.Writer, h *hdrhistogram.Histogram) error {
	if _, err := h.PercentilesPrint(w, 5, 1e3); err != nil {
		return fmt.Errorf("bench: write hgrm: %w", err)
	}
	return nil
}
