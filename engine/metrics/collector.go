package metrics

import (
	"strconv"
	"sync"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/health"
	"github.com/netcode-go/netcode/reliable"
	"github.com/prometheus/client_golang/prometheus"
)

// Option configures a Collector.
type Option func(*options)

type options struct {
	stall       time.Duration
	constLabels prometheus.Labels
	live        func() bool
}

// LiveStall sets the stall bound of netcode_live (engine.Server.Live);
// default health.DefaultStall, as the dedicated server's /healthz.
func LiveStall(d time.Duration) Option { return func(o *options) { o.stall = d } }

// LiveAlso adds the application's own check to netcode_live: the gauge
// is 1 only while the server is live and live reports true.
func LiveAlso(live func() bool) Option { return func(o *options) { o.live = live } }

// ConstLabels adds labels with fixed values to every series, to tell
// apart several servers in one process (for example server="eu-1").
func ConstLabels(l map[string]string) Option {
	return func(o *options) { o.constLabels = prometheus.Labels(l) }
}

// Collector is a prometheus.Collector over one engine.Server. It is safe
// for concurrent use; concurrent scrapes take turns.
type Collector struct {
	srv      *engine.Server
	stall    time.Duration
	alsoLive func() bool
	shards   []string // "0", "1", ...: the shard label values

	perShard                            []shardValue
	dropped, disconnects                *prometheus.Desc
	socketCalls, socketDatagrams, batch *prometheus.Desc
	maxClients, slotsInUse              *prometheus.Desc
	historyEntries, historySize         *prometheus.Desc
	ready, draining, live               *prometheus.Desc

	mu  sync.Mutex
	buf []engine.ServerStats // ShardStats' buffer, reused
}

var _ prometheus.Collector = (*Collector)(nil)

// shardValue is a series per shard with one value from the shard's stats.
type shardValue struct {
	desc *prometheus.Desc
	typ  prometheus.ValueType
	get  func(*engine.ServerStats) uint64
}

// BatchBucketBounds are the upper bounds of netcode_batch_datagrams'
// buckets: engine.ServerStats' bucket k counts batches of 2^k to
// 2^(k+1)-1 datagrams, and the last one, 64 and more, is +Inf.
var BatchBucketBounds = func() []float64 {
	b := make([]float64, engine.NumBatchBuckets-1)
	for k := range b {
		b[k] = float64(uint64(2)<<k - 1)
	}
	return b
}()

// NewCollector returns a Collector over srv's stats. Register it in any
// registry, once per server.
func NewCollector(srv *engine.Server, opts ...Option) *Collector {
	o := options{stall: health.DefaultStall}
	for _, opt := range opts {
		opt(&o)
	}
	if o.live == nil {
		o.live = func() bool { return true }
	}
	c := &Collector{srv: srv, stall: o.stall, alsoLive: o.live}
	c.buf = srv.ShardStats(nil)
	for i := range c.buf {
		c.shards = append(c.shards, strconv.Itoa(i))
	}
	desc := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("netcode_"+name, help, labels, o.constLabels)
	}
	counter := func(name, help string, get func(*engine.ServerStats) uint64) {
		c.perShard = append(c.perShard, shardValue{desc(name, help, "shard"), prometheus.CounterValue, get})
	}
	gauge := func(name, help string, get func(*engine.ServerStats) uint64) {
		c.perShard = append(c.perShard, shardValue{desc(name, help, "shard"), prometheus.GaugeValue, get})
	}
	counter("packets_received_total", "Datagrams read from the shard's sockets.", func(s *engine.ServerStats) uint64 { return s.PacketsIn })
	counter("packets_sent_total", "Datagrams the shard's sockets accepted for sending.", func(s *engine.ServerStats) uint64 { return s.PacketsOut })
	counter("received_bytes_total", "Bytes of the datagrams read (UDP payload).", func(s *engine.ServerStats) uint64 { return s.BytesIn })
	counter("sent_bytes_total", "Bytes of the datagrams sent (UDP payload).", func(s *engine.ServerStats) uint64 { return s.BytesOut })
	counter("send_failures_total", "Datagrams the socket did not accept.", func(s *engine.ServerStats) uint64 { return s.SendFailures })
	counter("read_errors_total", "Socket read errors.", func(s *engine.ServerStats) uint64 { return s.ReadErrors })
	counter("handshakes_started_total", "Connection requests that passed every check and began a handshake.", func(s *engine.ServerStats) uint64 { return s.HandshakesStarted })
	counter("handshakes_completed_total", "Handshakes that ended with a client slot (connects).", func(s *engine.ServerStats) uint64 { return s.Connects })
	counter("challenges_sent_total", "Connection challenge packets sent.", func(s *engine.ServerStats) uint64 { return s.ChallengesSent })
	counter("denied_sent_total", "Connection denied packets sent (server full or draining).", func(s *engine.ServerStats) uint64 { return s.DeniedSent })
	counter("timeouts_total", "Clients disconnected because they went silent.", func(s *engine.ServerStats) uint64 { return s.Timeouts })
	gauge("connected_clients", "Clients connected to the shard.", func(s *engine.ServerStats) uint64 { return uint64(max(s.Connected, 0)) })
	gauge("request_shed_shift", "Kernel shedding of connection requests in force: the socket keeps 1 in 2^shift (0: all).", func(s *engine.ServerStats) uint64 { return uint64(s.ShedShift) })
	counter("request_shed_changes_total", "Adjustments of the kernel shedding of connection requests.", func(s *engine.ServerStats) uint64 { return s.ShedChanges })
	counter("request_shed_errors_total", "Sockets where setting the shedding filter failed (shedding is then off there).", func(s *engine.ServerStats) uint64 { return s.ShedErrors })
	counter("kernel_dropped_packets_total", "Datagrams the kernel dropped before the shard read them: shed requests, those over the per-source limit and receive-queue overflows.", func(s *engine.ServerStats) uint64 { return s.KernelDrops })
	counter("source_limited_packets_total", "Datagrams the kernel's per-source limit dropped (part of kernel_dropped_packets_total).", func(s *engine.ServerStats) uint64 { return s.SourceDrops })
	counter("shard_loops_total", "Passes of the shard's loop.", func(s *engine.ServerStats) uint64 { return s.Loops })
	counter("shard_parks_total", "Passes that waited for the network (idle).", func(s *engine.ServerStats) uint64 { return s.Parks })
	counter("stale_sends_total", "Sends and disconnects for connections that had ended when the shard saw them.", func(s *engine.ServerStats) uint64 { return s.StaleSends })
	counter("send_queue_full_total", "Sends refused because the shard's send queue was full.", func(s *engine.ServerStats) uint64 { return s.SendQueueFull })

	c.dropped = desc("dropped_packets_total", "Datagrams ignored, by reason (codec checks and server rules).", "shard", "reason")
	c.disconnects = desc("disconnects_total", "Clients that left by a disconnect packet (by=client) or were disconnected by the application or a stop (by=server).", "shard", "by")
	c.socketCalls = desc("socket_calls_total", "Socket system calls (a call moves a batch).", "shard", "direction")
	c.socketDatagrams = desc("socket_datagrams_total", "Datagrams moved by the socket system calls.", "shard", "direction")
	c.batch = desc("batch_datagrams", "Datagrams per socket read or write of the shard.", "shard", "direction")
	c.maxClients = desc("max_clients", "Client slots of the server.")
	c.slotsInUse = desc("slots_in_use", "Client slots held, including those of clients whose disconnect the application has not polled yet.")
	c.historyEntries = desc("token_history_entries", "Connect-token history entries by state.", "state")
	c.historySize = desc("token_history_size", "Connect-token history size.")
	c.ready = desc("ready", "1 while the server runs and admits clients.")
	c.draining = desc("draining", "1 once the server stopped admitting clients (drain).")
	c.live = desc("live", "1 while every shard makes progress.")
	return c
}

// Describe sends every series' descriptor.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, v := range c.perShard {
		ch <- v.desc
	}
	for _, d := range []*prometheus.Desc{c.dropped, c.disconnects, c.socketCalls, c.socketDatagrams, c.batch,
		c.maxClients, c.slotsInUse, c.historyEntries, c.historySize, c.ready, c.draining, c.live} {
		ch <- d
	}
}

// Collect reads the server's stats and sends every series.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.buf = c.srv.ShardStats(c.buf[:0])
	total := c.srv.Stats()
	for i := range c.buf {
		st, shard := &c.buf[i], c.shards[min(i, len(c.shards)-1)]
		for _, v := range c.perShard {
			ch <- prometheus.MustNewConstMetric(v.desc, v.typ, float64(v.get(st)), shard)
		}
		for r, n := range st.CodecDrops {
			if name := codecReasonNames[r]; name != "" {
				ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(n), shard, name)
			}
		}
		for r, n := range st.Drops {
			if name := serverReasonNames[r]; name != "" {
				ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(n), shard, name)
			}
		}
		if c.srv.ReliableEnabled() {
			for r, n := range st.ReliableDrops {
				if name := ReliableDropReasonName(reliable.DropReason(r)); name != "" {
					ch <- prometheus.MustNewConstMetric(c.dropped, prometheus.CounterValue, float64(n), shard, name)
				}
			}
		}
		ch <- prometheus.MustNewConstMetric(c.disconnects, prometheus.CounterValue, float64(st.ClientDisconnects), shard, "client")
		ch <- prometheus.MustNewConstMetric(c.disconnects, prometheus.CounterValue, float64(st.ServerDisconnects), shard, "server")
		ch <- prometheus.MustNewConstMetric(c.socketCalls, prometheus.CounterValue, float64(st.RecvCalls), shard, "receive")
		ch <- prometheus.MustNewConstMetric(c.socketCalls, prometheus.CounterValue, float64(st.SendCalls), shard, "send")
		ch <- prometheus.MustNewConstMetric(c.socketDatagrams, prometheus.CounterValue, float64(st.RecvPackets), shard, "receive")
		ch <- prometheus.MustNewConstMetric(c.socketDatagrams, prometheus.CounterValue, float64(st.SendPackets), shard, "send")
		// Every datagram read passes through a batch; every datagram of a
		// flush is accepted or counted as a send failure.
		ch <- batchHistogram(c.batch, &st.RecvBatches, st.PacketsIn, shard, "receive")
		ch <- batchHistogram(c.batch, &st.SendBatches, st.PacketsOut+st.SendFailures, shard, "send")
	}
	ch <- prometheus.MustNewConstMetric(c.maxClients, prometheus.GaugeValue, float64(c.srv.MaxClients()))
	ch <- prometheus.MustNewConstMetric(c.slotsInUse, prometheus.GaugeValue, float64(total.Connected))
	ch <- prometheus.MustNewConstMetric(c.historyEntries, prometheus.GaugeValue, float64(total.TokenHistoryPending), "pending")
	ch <- prometheus.MustNewConstMetric(c.historyEntries, prometheus.GaugeValue, float64(total.TokenHistoryConsumed), "consumed")
	ch <- prometheus.MustNewConstMetric(c.historySize, prometheus.GaugeValue, float64(total.TokenHistorySize))
	ch <- prometheus.MustNewConstMetric(c.ready, prometheus.GaugeValue, bit(c.srv.Ready()))
	ch <- prometheus.MustNewConstMetric(c.draining, prometheus.GaugeValue, bit(c.srv.Draining()))
	ch <- prometheus.MustNewConstMetric(c.live, prometheus.GaugeValue, bit(c.alsoLive() && c.srv.Live(c.stall)))
}

// batchHistogram makes the const histogram of one direction's batch
// buckets; sum is the datagrams those batches moved.
func batchHistogram(d *prometheus.Desc, buckets *[engine.NumBatchBuckets]uint64, sum uint64, labels ...string) prometheus.Metric {
	cumulative := make(map[float64]uint64, len(BatchBucketBounds))
	var count uint64
	for k, n := range buckets {
		count += n
		if k < len(BatchBucketBounds) {
			cumulative[BatchBucketBounds[k]] = count
		}
	}
	return prometheus.MustNewConstHistogram(d, count, float64(sum), cumulative, labels...)
}

func bit(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
