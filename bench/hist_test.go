package bench

import (
	"bufio"
	"bytes"
	"math"
	"strconv"
	"strings"
	"testing"
	"time"
)

func TestHistogramMergePercentiles(t *testing.T) {
	// Two shards: 1..500 µs and 501..1000 µs; merged, the percentiles are
	// those of 1..1000 µs.
	a, b := NewHistogram(), NewHistogram()
	for i := 1; i <= 1000; i++ {
		h := a
		if i > 500 {
			h = b
		}
		RecordLatency(h, time.Duration(i)*time.Microsecond)
	}
	m := NewHistogram()
	if d := m.Merge(a) + m.Merge(b); d != 0 {
		t.Fatalf("merge dropped %d values", d)
	}
	if m.TotalCount() != 1000 {
		t.Fatalf("merged count %d; want 1000", m.TotalCount())
	}
	p := PercentilesOf(m)
	tests := []struct {
		name      string
		got, want float64
	}{
		{"p50", p.P50, 500}, {"p90", p.P90, 900}, {"p99", p.P99, 990}, {"p999", p.P999, 999}, {"max", p.Max, 1000},
	}
	for _, tt := range tests {
		// Three significant digits: within 0.1%.
		if math.Abs(tt.got-tt.want) > tt.want*0.001+0.001 {
			t.Errorf("%s = %.3f µs; want %.0f", tt.name, tt.got, tt.want)
		}
	}
}

func TestPercentilesEmpty(t *testing.T) {
	if p := PercentilesOf(NewHistogram()); p != (Percentiles{}) {
		t.Fatalf("empty histogram percentiles %+v; want zero", p)
	}
	if c := Curve(NewHistogram()); c != nil {
		t.Fatalf("empty histogram curve %v; want nil", c)
	}
}

func TestRecordLatencyClamps(t *testing.T) {
	h := NewHistogram()
	RecordLatency(h, -time.Second)
	RecordLatency(h, time.Hour)
	if h.TotalCount() != 2 {
		t.Fatalf("recorded %d of 2 out-of-range values", h.TotalCount())
	}
	if h.Min() != histLowest || !h.ValuesAreEquivalent(h.Max(), histHighest) {
		t.Fatalf("min %d max %d; want clamped to %d and %d", h.Min(), h.Max(), histLowest, histHighest)
	}
}

func TestCurveMonotonic(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 100000; i++ {
		RecordLatency(h, time.Duration(i)*time.Microsecond)
	}
	c := Curve(h)
	if c[0].Percentile != 0 || c[len(c)-1].Percentile != 100 {
		t.Fatalf("curve from %v to %v; want 0 to 100", c[0].Percentile, c[len(c)-1].Percentile)
	}
	for i := 1; i < len(c); i++ {
		if c[i].Percentile <= c[i-1].Percentile || c[i].Micros < c[i-1].Micros {
			t.Fatalf("curve not increasing at %d: %+v after %+v", i, c[i], c[i-1])
		}
	}
}

func TestWriteHgrm(t *testing.T) {
	h := NewHistogram()
	for i := 1; i <= 1000; i++ {
		RecordLatency(h, time.Duration(i)*time.Microsecond)
	}
	var buf bytes.Buffer
	if err := WriteHgrm(&buf, h); err != nil {
		t.Fatal(err)
	}
	sc := bufio.NewScanner(&buf)
	sc.Scan()
	if got := sc.Text(); got != " Value\tPercentile\tTotalCount\t1/(1-Percentile)" {
		t.Fatalf("header %q", got)
	}
	rows, lastCount, lastValue := 0, int64(0), 0.0
	var footer []string
	for sc.Scan() {
		line := sc.Text()
		switch {
		case line == "":
		case strings.HasPrefix(line, "#["):
			footer = append(footer, line)
		default:
			f := strings.Fields(line)
			if len(f) != 4 {
				t.Fatalf("row %q: want 4 columns", line)
			}
			v, err1 := strconv.ParseFloat(f[0], 64)
			p, err2 := strconv.ParseFloat(f[1], 64)
			n, err3 := strconv.ParseInt(f[2], 10, 64)
			if err1 != nil || err2 != nil || err3 != nil || p < 0 || p > 1 || n < lastCount || v < lastValue {
				t.Fatalf("row %q: want value (µs), percentile 0..1, count, rising", line)
			}
			lastCount, lastValue = n, v
			rows++
		}
	}
	if rows < 10 || lastCount != 1000 {
		t.Fatalf("%d rows ending at count %d; want many rows ending at 1000", rows, lastCount)
	}
	// Values are in microseconds: the largest is 1000, not 1000000.
	if math.Abs(lastValue-1000) > 1 {
		t.Fatalf("last value %.3f; want about 1000 (µs)", lastValue)
	}
	if len(footer) != 3 || !strings.HasPrefix(footer[0], "#[Mean") || !strings.Contains(footer[1], "Total count") {
		t.Fatalf("footer %q", footer)
	}
}
