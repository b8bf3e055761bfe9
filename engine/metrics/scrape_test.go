package metrics_test

import (
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/metrics"
	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// series flattens metric families to "name{k="v",...}" -> value, histograms
// as their _bucket, _count and _sum series, for the netcode_ families.
func series(families map[string]*dto.MetricFamily) map[string]float64 {
	out := make(map[string]float64)
	for name, mf := range families {
		if !strings.HasPrefix(name, "netcode_") {
			continue
		}
		for _, m := range mf.GetMetric() {
			var labels []string
			for _, lp := range m.GetLabel() {
				labels = append(labels, lp.GetName(), lp.GetValue())
			}
			switch mf.GetType() {
			case dto.MetricType_COUNTER:
				out[key(name, labels...)] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key(name, labels...)] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					out[key(name+"_bucket", append(slices.Clone(labels), "le", fmtBound(b.GetUpperBound()))...)] = float64(b.GetCumulativeCount())
				}
				out[key(name+"_bucket", append(slices.Clone(labels), "le", "+Inf")...)] = float64(h.GetSampleCount())
				out[key(name+"_count", labels...)] = float64(h.GetSampleCount())
				out[key(name+"_sum", labels...)] = h.GetSampleSum()
			default:
				out[key(name+" unexpected type "+mf.GetType().String(), labels...)] = 0
			}
		}
	}
	return out
}

func fmtBound(f float64) string { return strconv.FormatFloat(f, 'g', -1, 64) }

// key is name{k1="v1",...} with the labels sorted by name.
func key(name string, kv ...string) string {
	var pairs []string
	for i := 0; i+1 < len(kv); i += 2 {
		pairs = append(pairs, fmt.Sprintf("%s=%q", kv[i], kv[i+1]))
	}
	sort.Strings(pairs)
	return name + "{" + strings.Join(pairs, ",") + "}"
}

// expected is what the scrape must say, written from the stats field by
// field, independently of the collector's tables.
func expected(srv *engine.Server, shards []engine.ServerStats, total engine.ServerStats) map[string]float64 {
	want := make(map[string]float64)
	put := func(v uint64, name string, kv ...string) { want[key(name, kv...)] = float64(v) }
	for i := range shards {
		st, s := &shards[i], strconv.Itoa(i)
		put(st.PacketsIn, "netcode_packets_received_total", "shard", s)
		put(st.PacketsOut, "netcode_packets_sent_total", "shard", s)
		put(st.BytesIn, "netcode_received_bytes_total", "shard", s)
		put(st.BytesOut, "netcode_sent_bytes_total", "shard", s)
		put(st.SendFailures, "netcode_send_failures_total", "shard", s)
		put(st.ReadErrors, "netcode_read_errors_total", "shard", s)
		put(st.HandshakesStarted, "netcode_handshakes_started_total", "shard", s)
		put(st.Connects, "netcode_handshakes_completed_total", "shard", s)
		put(st.ChallengesSent, "netcode_challenges_sent_total", "shard", s)
		put(st.DeniedSent, "netcode_denied_sent_total", "shard", s)
		put(st.Timeouts, "netcode_timeouts_total", "shard", s)
		put(st.ClientDisconnects, "netcode_disconnects_total", "shard", s, "by", "client")
		put(st.ServerDisconnects, "netcode_disconnects_total", "shard", s, "by", "server")
		put(uint64(st.Connected), "netcode_connected_clients", "shard", s)
		put(uint64(st.ShedShift), "netcode_request_shed_shift", "shard", s)
		put(st.ShedChanges, "netcode_request_shed_changes_total", "shard", s)
		put(st.ShedErrors, "netcode_request_shed_errors_total", "shard", s)
		put(st.KernelDrops, "netcode_kernel_dropped_packets_total", "shard", s)
		put(st.SourceDrops, "netcode_source_limited_packets_total", "shard", s)
		put(st.Loops, "netcode_shard_loops_total", "shard", s)
		put(st.Parks, "netcode_shard_parks_total", "shard", s)
		put(st.StaleSends, "netcode_stale_sends_total", "shard", s)
		put(st.SendQueueFull, "netcode_send_queue_full_total", "shard", s)
		put(st.RecvCalls, "netcode_socket_calls_total", "shard", s, "direction", "receive")
		put(st.SendCalls, "netcode_socket_calls_total", "shard", s, "direction", "send")
		put(st.RecvPackets, "netcode_socket_datagrams_total", "shard", s, "direction", "receive")
		put(st.SendPackets, "netcode_socket_datagrams_total", "shard", s, "direction", "send")
		for r := codec.DropReason(1); r < codec.NumDropReasons; r++ {
			put(st.CodecDrops[r], "netcode_dropped_packets_total", "shard", s, "reason", metrics.DropReasonName(r))
		}
		for r := engine.ServerDropReason(1); r < engine.NumServerDropReasons; r++ {
			put(st.Drops[r], "netcode_dropped_packets_total", "shard", s, "reason", metrics.ServerDropReasonName(r))
		}
		for _, d := range []struct {
			dir     string
			buckets [engine.NumBatchBuckets]uint64
			sum     uint64
		}{{"receive", st.RecvBatches, st.PacketsIn}, {"send", st.SendBatches, st.PacketsOut + st.SendFailures}} {
			var cum uint64
			for k, n := range d.buckets {
				cum += n
				le := "+Inf"
				if k < engine.NumBatchBuckets-1 {
					le = strconv.Itoa(1<<(k+1) - 1) // batches of 2^k to 2^(k+1)-1
				}
				put(cum, "netcode_batch_datagrams_bucket", "shard", s, "direction", d.dir, "le", le)
			}
			put(cum, "netcode_batch_datagrams_count", "shard", s, "direction", d.dir)
			put(d.sum, "netcode_batch_datagrams_sum", "shard", s, "direction", d.dir)
		}
	}
	put(uint64(srv.MaxClients()), "netcode_max_clients")
	put(uint64(total.Connected), "netcode_slots_in_use")
	put(uint64(total.TokenHistoryPending), "netcode_token_history_entries", "state", "pending")
	put(uint64(total.TokenHistoryConsumed), "netcode_token_history_entries", "state", "consumed")
	put(uint64(total.TokenHistorySize), "netcode_token_history_size")
	b := func(v bool) uint64 {
		if v {
			return 1
		}
		return 0
	}
	put(b(srv.Ready()), "netcode_ready")
	put(b(srv.Draining()), "netcode_draining")
	put(b(srv.Live(time.Hour)), "netcode_live")
	return want
}

// scrape GETs url and parses the Prometheus text format.
func scrape(t *testing.T, url string) (map[string]*dto.MetricFamily, string) {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if resp.StatusCode != 200 || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/plain") {
		t.Fatalf("scrape: %s %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	p := expfmt.NewTextParser(model.LegacyValidation)
	families, err := p.TextToMetricFamilies(strings.NewReader(string(body)))
	if err != nil {
		t.Fatalf("scrape does not parse: %v\n%s", err, body)
	}
	return families, string(body)
}

// compare checks the scrape against the stats, both ways: every expected
// series with its value, and no netcode_ series beyond them.
func compare(t *testing.T, got, want map[string]float64) {
	t.Helper()
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			t.Errorf("missing %s (want %v)", k, v)
		case g != v:
			t.Errorf("%s = %v; the server's stats say %v", k, g, v)
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			t.Errorf("unexpected series %s", k)
		}
	}
}

// sum adds the series of name whose labels include kv.
func sum(got map[string]float64, name string, kv ...string) float64 {
	var s float64
	for k, v := range got {
		if !strings.HasPrefix(k, name+"{") {
			continue
		}
		match := true
		for i := 0; i+1 < len(kv); i += 2 {
			match = match && strings.Contains(k, fmt.Sprintf("%s=%q", kv[i], kv[i+1]))
		}
		if match {
			s += v
		}
	}
	return s
}

// TestScrapeMatchesStats runs known traffic through a two-shard server over
// loopback, scrapes /metrics over HTTP and checks every series against
// the server's own stats, and the known traffic against the series.
func TestScrapeMatchesStats(t *testing.T) {
	r := newRig(t, 2, 8)
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewCollector(r.srv, metrics.LiveStall(time.Hour)))
	web := httptest.NewServer(metrics.Handler(reg, nil))
	defer web.Close()

	// Four players connect and send five payloads each, echoed back.
	var players []*engine.Client
	for id := uint64(1); id <= 4; id++ {
		players = append(players, r.dial(r.token(id, protocol, nil)))
	}
	r.until("4 clients connected", func() bool { return r.srv.NumConnectedClients() == 4 })
	for range 5 {
		for _, c := range players {
			if err := c.SendPacket([]byte("known payload")); err != nil {
				t.Fatal(err)
			}
		}
	}
	echoes := 0
	r.until("20 echoes", func() bool { echoes += r.step(); return echoes >= 20 })
	// Drops: three 1-byte datagrams; a token of another protocol; one of
	// another key.
	raw, err := net.DialUDP("udp", nil, net.UDPAddrFromAddrPort(r.srv.LocalAddrs()[0]))
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for range 3 {
		raw.Write([]byte{0x42})
	}
	r.dial(r.token(5, protocol+1, nil))
	r.dial(r.token(6, protocol, make([]byte, 32)))
	drops := func(reason string) float64 {
		var n uint64
		st := r.srv.Stats()
		for i := codec.DropReason(1); i < codec.NumDropReasons; i++ {
			if metrics.DropReasonName(i) == reason {
				n += st.CodecDrops[i]
			}
		}
		return float64(n)
	}
	r.until("the bad datagrams dropped", func() bool {
		return drops("too_small") == 3 && drops("protocol_id") > 0 && drops("token_decrypt_failed") > 0
	})
	// One player leaves.
	players[0].Close()
	r.until("a disconnect", func() bool { return r.srv.NumConnectedClients() == 3 })

	check := func(stage string) map[string]float64 {
		t.Helper()
		families, _ := scrape(t, web.URL)
		got := series(families)
		compare(t, got, expected(r.srv, r.srv.ShardStats(nil), r.srv.Stats()))
		if t.Failed() {
			t.FailNow()
		}
		t.Logf("%s: %d netcode_ series match the server's stats", stage, len(got))
		return got
	}
	got := check("playing")
	for _, c := range []struct {
		what string
		got  float64
		want float64
	}{
		{"handshakes completed", sum(got, "netcode_handshakes_completed_total"), 4},
		{"connected clients", sum(got, "netcode_connected_clients"), 3},
		{"disconnects by client", sum(got, "netcode_disconnects_total", "by", "client"), 1},
		{"too_small drops", sum(got, "netcode_dropped_packets_total", "reason", "too_small"), 3},
		{"consumed tokens", sum(got, "netcode_token_history_entries", "state", "consumed"), 4},
		{"max clients", sum(got, "netcode_max_clients"), 8},
		{"ready", sum(got, "netcode_ready"), 1},
		{"draining", sum(got, "netcode_draining"), 0},
		{"live", sum(got, "netcode_live"), 1},
		{"shards", float64(len(r.srv.ShardStats(nil))), 2},
	} {
		if c.got != c.want {
			t.Errorf("%s: %v; want %v", c.what, c.got, c.want)
		}
	}
	for _, c := range []struct {
		what     string
		got, min float64
	}{
		{"packets received", sum(got, "netcode_packets_received_total"), 20 + 3},
		{"packets sent", sum(got, "netcode_packets_sent_total"), 20},
		{"received bytes", sum(got, "netcode_received_bytes_total"), 3},
		{"protocol_id drops", sum(got, "netcode_dropped_packets_total", "reason", "protocol_id"), 1},
		{"token_decrypt_failed drops", sum(got, "netcode_dropped_packets_total", "reason", "token_decrypt_failed"), 1},
		{"receive batches", sum(got, "netcode_batch_datagrams_count", "direction", "receive"), 1},
		{"receive datagrams", sum(got, "netcode_batch_datagrams_sum", "direction", "receive"), 23},
	} {
		if c.got < c.min {
			t.Errorf("%s: %v; want at least %v", c.what, c.got, c.min)
		}
	}
	// The batch histogram's sum is within what its buckets allow.
	for _, dir := range []string{"receive", "send"} {
		for s := range 2 {
			lo, hi, prev := 0.0, 0.0, 0.0
			for k := range engine.NumBatchBuckets {
				le := "+Inf"
				if k < engine.NumBatchBuckets-1 {
					le = strconv.Itoa(1<<(k+1) - 1)
				}
				cum := got[key("netcode_batch_datagrams_bucket", "shard", strconv.Itoa(s), "direction", dir, "le", le)]
				n := cum - prev
				prev = cum
				lo += n * float64(int(1)<<k)
				hi += n * float64(int(1)<<(k+1)-1)
				if k == engine.NumBatchBuckets-1 {
					hi += n * 1024 // the last bucket is open
				}
			}
			if v := got[key("netcode_batch_datagrams_sum", "shard", strconv.Itoa(s), "direction", dir)]; v < lo || v > hi {
				t.Errorf("shard %d %s: batch sum %v outside [%v, %v] that its buckets allow", s, dir, v, lo, hi)
			}
		}
	}

	r.srv.Drain()
	got = check("draining")
	if sum(got, "netcode_ready") != 0 || sum(got, "netcode_draining") != 1 {
		t.Errorf("draining: ready %v draining %v; want 0 and 1", sum(got, "netcode_ready"), sum(got, "netcode_draining"))
	}
}

// TestLint: the exposition passes promtool's lint (the same rules, in
// process; CI also runs promtool check metrics on a live server).
func TestLint(t *testing.T) {
	r := newRig(t, 2, 4)
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewCollector(r.srv))
	if _, err := metrics.NewTickHistogram(reg); err != nil {
		t.Fatal(err)
	}
	problems, err := testutil.GatherAndLint(reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		t.Errorf("lint: %s: %s", p.Metric, p.Text)
	}
	// A second tick histogram in the same registry is refused, not a panic.
	if _, err := metrics.NewTickHistogram(reg); err == nil {
		t.Error("a second netcode_tick_duration_seconds registered")
	}
}

// TestBatchBucketBounds: the bounds are 2^(k+1)-1 and sorted.
func TestBatchBucketBounds(t *testing.T) {
	want := []float64{1, 3, 7, 15, 31, 63}
	if !slices.Equal(metrics.BatchBucketBounds, want) {
		t.Fatalf("bounds %v; want %v", metrics.BatchBucketBounds, want)
	}
}
