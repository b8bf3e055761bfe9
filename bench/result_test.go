package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

func TestResultJSONFields(t *testing.T) {
	r := &Result{Mode: "sweep", Clients: 2, Connected: 2, RTT: Percentiles{P50: 1, P99: 2}}
	max := 1000.0
	r.MaxSustainedPPS = &max
	r.SetServer(&ServerWindow{PacketsIn: 100, CPUNanos: 5000, Mallocs: 10, GCCycles: 1})
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]any
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"mode", "clients", "connected", "payload_bytes", "offered_pps", "delivered_pps",
		"loss_ratio", "rtt_us", "server_cpu_ns_per_packet", "server_allocs_per_packet", "server_gc_cycles",
		"duration_s", "receive_mode", "shards", "batch", "max_sustained_pps"} {
		if _, ok := m[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	rtt, _ := m["rtt_us"].(map[string]any)
	for _, k := range []string{"p50", "p90", "p99", "p999", "max"} {
		if _, ok := rtt[k]; !ok {
			t.Errorf("rtt_us lacks %q", k)
		}
	}
	if m["server_cpu_ns_per_packet"] != 50.0 || m["server_allocs_per_packet"] != 0.1 {
		t.Errorf("per packet: cpu %v allocs %v; want 50 and 0.1", m["server_cpu_ns_per_packet"], m["server_allocs_per_packet"])
	}
}

// TestResultJSONUnknownServer: with -target the server's numbers are
// unknown and must be null, not 0.
func TestResultJSONUnknownServer(t *testing.T) {
	r := &Result{Mode: "echo"}
	r.SetServer(nil)
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{`"server_cpu_ns_per_packet":null`, `"server_allocs_per_packet":null`, `"server_gc_cycles":null`} {
		if !bytes.Contains(b, []byte(k)) {
			t.Errorf("JSON lacks %s", k)
		}
	}
	if bytes.Contains(b, []byte("max_sustained_pps")) {
		t.Errorf("max_sustained_pps outside a sweep")
	}
}

func TestResultFileRoundTrip(t *testing.T) {
	path := filepath.Join(t.TempDir(), "r.json")
	in := &Result{Mode: "echo", Label: "x", Curve: []CurvePoint{{0, 10}, {90, 20}, {100, 30}}}
	if err := in.WriteJSONFile(path); err != nil {
		t.Fatal(err)
	}
	out, err := ReadResultFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if out.Label != "x" || len(out.Curve) != 3 || out.Curve[2].Micros != 30 {
		t.Fatalf("read back %+v", out)
	}
}

func TestWriteSummary(t *testing.T) {
	r := &Result{Mode: "sweep", Latency: "echo", Clients: 3, Connected: 3, RTT: Percentiles{P99: 123.4},
		Steps: []Step{{RateHz: 60, Sustained: true}, {RateHz: 120, Why: "loss > 1%"}}}
	var buf bytes.Buffer
	if err := r.WriteSummary(&buf); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"3 connected of 3", "123.4", "p99.9", "n/a", "loss > 1%"} {
		if !strings.Contains(buf.String(), want) {
			t.Errorf("summary lacks %q:\n%s", want, buf.String())
		}
	}
}

// Busy is a side's cores' busy time where known, else its CPU plus wait,
// and Saturation names the sides at or over SaturatedAt.
func TestBusySaturation(t *testing.T) {
	f := func(v float64) *float64 { return &v }
	val := func(p *float64) string {
		if p == nil {
			return "nil"
		}
		return fmt.Sprintf("%.2f", *p)
	}
	for _, c := range []struct {
		cpu, wait, core *float64
		want            string
	}{
		{nil, nil, nil, "nil"},
		{f(0.5), nil, nil, "0.50"},
		{f(0.5), f(0.3), nil, "0.80"},
		{f(0.5), f(0.3), f(0.95), "0.95"}, // NAPI work on the core, outside the process
		{f(0.5), f(0.4), f(0.6), "0.60"},  // threads waiting for each other on a core 60% busy
		{nil, nil, f(0.4), "0.40"},
	} {
		if got := val(Busy(c.cpu, c.wait, c.core)); got != c.want {
			t.Errorf("Busy(%s, %s, %s) = %s, want %s", val(c.cpu), val(c.wait), val(c.core), got, c.want)
		}
	}
	for _, c := range []struct {
		server, load *float64
		lag, dropped uint64
		want         string
	}{
		{f(0.95), f(0.5), 0, 0, "server"},
		{f(0.5), f(0.9), 0, 0, "load"},
		{f(0.5), f(0.5), 3, 0, "load"},
		{f(0.5), f(0.5), 0, 7, "load"}, // its AF_XDP ring overflowed
		{f(0.95), f(0.5), 0, 7, "both"},
		{f(0.91), f(0.92), 0, 0, "both"},
		{f(0.89), nil, 0, 0, "neither"},
		{nil, Busy(f(0.4), nil, f(0.93)), 0, 0, "load"},
	} {
		if got := Saturation(c.server, c.load, c.lag, c.dropped); got != c.want {
			t.Errorf("Saturation(%s, %s, %d, %d) = %s, want %s", val(c.server), val(c.load), c.lag, c.dropped, got, c.want)
		}
	}
}
