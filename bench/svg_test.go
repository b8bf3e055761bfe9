package bench

import (
	"bytes"
	"encoding/xml"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestWritePlotSVG(t *testing.T) {
	series := []PlotSeries{
		{Label: "mmsg <64B>", Points: []CurvePoint{{0, 50}, {90, 80}, {99, 150}, {99.9, 400}, {100, 900}}},
		{Label: "single & 1200B", Points: []CurvePoint{{0, 70}, {90, 120}, {99.99, 800}, {100, 2000}}},
	}
	var buf bytes.Buffer
	if err := WritePlotSVG(&buf, "netcode echo latency", series); err != nil {
		t.Fatal(err)
	}
	// Well-formed XML, and collect the texts and the polylines.
	dec := xml.NewDecoder(bytes.NewReader(buf.Bytes()))
	var texts []string
	polylines, root := 0, ""
	inText := false
	for {
		tok, err := dec.Token()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed XML: %v\n%s", err, buf.String())
		}
		switch e := tok.(type) {
		case xml.StartElement:
			if root == "" {
				root = e.Name.Local
			}
			inText = e.Name.Local == "text"
			if e.Name.Local == "polyline" {
				polylines++
			}
		case xml.CharData:
			if inText {
				texts = append(texts, string(e))
			}
		case xml.EndElement:
			inText = false
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q; want svg", root)
	}
	if polylines != len(series) {
		t.Fatalf("%d lines; want one per series (%d)", polylines, len(series))
	}
	all := strings.Join(texts, "|")
	for _, want := range []string{"netcode echo latency", "Percentile", "Latency (µs)", "mmsg <64B>", "single & 1200B",
		"0%", "90%", "99%", "99.9%", "99.99%", "99.999%"} {
		if !strings.Contains("|"+all+"|", "|"+want+"|") {
			t.Errorf("no text %q in %q", want, all)
		}
	}
}

func TestNinesScale(t *testing.T) {
	tests := []struct{ p, want float64 }{{0, 0}, {90, 1}, {99, 2}, {99.9, 3}, {100, plotMaxNines}, {99.99999999, plotMaxNines}}
	for _, tt := range tests {
		if got := nines(tt.p); got < tt.want-1e-9 || got > tt.want+1e-9 {
			t.Errorf("nines(%v) = %v; want %v", tt.p, got, tt.want)
		}
	}
}
