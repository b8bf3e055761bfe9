package dedicated_test

import (
	"context"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/backend"
	"github.com/netcode-go/netcode/engine/dedicated"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrapeValues GETs /metrics and returns "name{labels}" -> value of the
// samples (histograms as their _bucket, _sum and _count samples).
func (r *running) scrapeValues() map[string]float64 {
	r.t.Helper()
	code, body := r.get("/metrics")
	if code != 200 {
		r.t.Fatalf("GET /metrics: %d", code)
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		r.t.Fatalf("/metrics does not parse: %v", err)
	}
	out := make(map[string]float64)
	for name, mf := range families {
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, l := range m.GetLabel() {
				labels = append(labels, l.GetName()+"="+strconv.Quote(l.GetValue()))
			}
			k := name + "{" + strings.Join(labels, ",") + "}"
			switch {
			case m.GetCounter() != nil:
				out[k] = m.GetCounter().GetValue()
			case m.GetGauge() != nil:
				out[k] = m.GetGauge().GetValue()
			case m.GetHistogram() != nil:
				out[name+"_count{"+strings.Join(labels, ",")+"}"] = float64(m.GetHistogram().GetSampleCount())
			}
		}
	}
	return out
}

// TestEndpoints: the default-mode server's /metrics agrees with its stats
// (counters between a read before and one after the scrape; the shards
// run on), has the tick histogram and the Go runtime's metrics, and the
// token service's HealthDirectory reads /readyz and /metrics as it
// should: a ready server with its free slots, and none once draining.
func TestEndpoints(t *testing.T) {
	r := start(t, dedicated.Config{Server: engine.ServerConfig{MaxClients: 10}, TickRate: 200}, dedicated.Echo())
	p := newPlayers(t)
	p.dial(r.token(1))
	p.dial(r.token(2))
	p.connected(0, 2)
	for range 10 {
		p.clients[0].SendPacket([]byte("x"))
	}
	p.until(5*time.Second, "10 echoes", func() bool { return p.got[0] == 10 })
	time.Sleep(50 * time.Millisecond)

	before := r.srv.Stats()
	got := r.scrapeValues()
	after := r.srv.Stats()
	sumOf := func(prefix string) float64 {
		var s float64
		for k, v := range got {
			if strings.HasPrefix(k, prefix+"{") {
				s += v
			}
		}
		return s
	}
	for _, c := range []struct {
		name      string
		lo, hi    uint64
		exactWant bool
	}{
		{"netcode_packets_received_total", before.PacketsIn, after.PacketsIn, false},
		{"netcode_packets_sent_total", before.PacketsOut, after.PacketsOut, false},
		{"netcode_handshakes_completed_total", 2, 2, true},
		{"netcode_connected_clients", 2, 2, true},
		{"netcode_max_clients", 10, 10, true},
		{"netcode_shard_loops_total", before.Loops, after.Loops, false},
	} {
		if v := sumOf(c.name); v < float64(c.lo) || v > float64(c.hi) {
			t.Errorf("%s = %v; the server's stats say %d..%d", c.name, v, c.lo, c.hi)
		}
	}
	for _, k := range []string{"netcode_ready{}", "netcode_live{}"} {
		if got[k] != 1 {
			t.Errorf("%s = %v; want 1", k, got[k])
		}
	}
	if got["netcode_tick_duration_seconds_count{}"] < 1 {
		t.Errorf("no ticks in netcode_tick_duration_seconds: %v", got["netcode_tick_duration_seconds_count{}"])
	}
	if got["go_goroutines{}"] < 1 {
		t.Error("no go_goroutines: the Go collector is missing")
	}

	dir, err := backend.NewHealthDirectory(backend.HealthConfig{CacheFor: -1,
		Targets: []backend.HealthTarget{{URL: r.url, Server: backend.Server{Public: r.srv.PublicAddresses()[0]}}}})
	if err != nil {
		t.Fatal(err)
	}
	servers, err := dir.Servers(context.Background(), nil)
	if err != nil || len(servers) != 1 {
		t.Fatalf("health directory while serving: %v %v", servers, err)
	}
	r.cancel()
	eventually(t, 5*time.Second, "the directory to drop the draining server", func() bool {
		_, err := dir.Servers(context.Background(), nil)
		return errors.Is(err, backend.ErrNoServers)
	})
	if v := r.scrapeValues()["netcode_draining{}"]; v != 1 {
		t.Errorf("netcode_draining %v while draining", v)
	}
}
