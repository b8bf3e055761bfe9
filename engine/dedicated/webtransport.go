package dedicated

import (
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/netip"

	"github.com/netcode-go/netcode/batchio/webtransport"
	"github.com/prometheus/client_golang/prometheus"
)

// listenWebTransport opens the WebTransport listener of cfg, if any, and
// adds its public address to the server's when those are given.
func listenWebTransport(cfg *Config, log *slog.Logger) (*webtransport.Conn, error) {
	if cfg.WebTransport == nil {
		return nil, nil
	}
	wt, err := webtransport.Listen(*cfg.WebTransport)
	if err != nil {
		return nil, fmt.Errorf("dedicated: WebTransport listener: %w", err)
	}
	if len(cfg.Server.PublicAddresses) > 0 {
		pub := cfg.WebTransportPublic
		if !pub.IsValid() {
			pub = wt.LocalAddr()
			if pub.Addr().IsUnspecified() {
				wt.Close()
				return nil, fmt.Errorf("dedicated: Config.WebTransportPublic is required with the WebTransport listener on %v and Server.PublicAddresses given: the address browsers reach", pub)
			}
		}
		cfg.Server.PublicAddresses = append(append([]netip.AddrPort(nil), cfg.Server.PublicAddresses...), pub)
	}
	h := wt.CertificateHash()
	log.Info("netcode dedicated server: WebTransport listening", slog.String("addr", wt.LocalAddr().String()),
		slog.String("certificate_sha256", hex.EncodeToString(h[:])),
		slog.Bool("development_certificate", cfg.WebTransport.Certificate == nil))
	if cfg.WebTransportListening != nil {
		if err := cfg.WebTransportListening(wt); err != nil {
			wt.Close()
			return nil, fmt.Errorf("dedicated: %w", err)
		}
	}
	return wt, nil
}

// webTransportCollector exports a WebTransport listener's counters: its
// shard's datagrams are in the server's per-shard series already; these
// are the sessions and what the listener refused or dropped before the
// server saw it.
type webTransportCollector struct {
	wt                                     *webtransport.Conn
	sessions, connections, accepted        *prometheus.Desc
	refused, dropped, closed, sendsDropped *prometheus.Desc
}

func newWebTransportCollector(wt *webtransport.Conn) *webTransportCollector {
	d := func(name, help string, labels ...string) *prometheus.Desc {
		return prometheus.NewDesc("netcode_webtransport_"+name, help, labels, nil)
	}
	return &webTransportCollector{wt: wt,
		sessions:     d("sessions", "Open WebTransport sessions (state=open), and those the server has not answered yet (state=pending).", "state"),
		connections:  d("connections", "QUIC connections, handshaking or not."),
		accepted:     d("sessions_accepted_total", "WebTransport sessions opened."),
		refused:      d("refused_total", "QUIC connections and sessions refused, by reason.", "reason"),
		dropped:      d("dropped_datagrams_total", "Datagrams from browsers dropped before the server read them, by reason.", "reason"),
		closed:       d("closed_sessions_total", "Sessions the listener closed, by reason.", "reason"),
		sendsDropped: d("send_dropped_total", "Datagrams to browsers dropped, by reason.", "reason"),
	}
}

func (c *webTransportCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.sessions, c.connections, c.accepted, c.refused, c.dropped, c.closed, c.sendsDropped} {
		ch <- d
	}
}

func (c *webTransportCollector) Collect(ch chan<- prometheus.Metric) {
	st := c.wt.TransportStats()
	gauge := func(d *prometheus.Desc, v int, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, float64(v), labels...)
	}
	counter := func(d *prometheus.Desc, v uint64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, float64(v), labels...)
	}
	gauge(c.sessions, st.Sessions, "open")
	gauge(c.sessions, st.Pending, "pending")
	gauge(c.connections, st.Connections)
	counter(c.accepted, st.Accepted)
	for _, r := range []struct {
		v      uint64
		reason string
	}{
		{st.RefusedRate, "rate"}, {st.RefusedRateIP, "rate_ip"}, {st.RefusedIPTableFull, "ip_table_full"},
		{st.RefusedMaxSessions, "max_sessions"}, {st.RefusedPending, "max_pending"}, {st.RefusedOrigin, "origin"},
		{st.RefusedClosed, "closed"},
	} {
		counter(c.refused, r.v, r.reason)
	}
	for _, r := range []struct {
		v      uint64
		reason string
	}{
		{st.DroppedOversized, "oversized"}, {st.DroppedRate, "rate"}, {st.DroppedSessionFull, "session_queue_full"},
		{st.DroppedInboxFull, "inbox_full"}, {st.DroppedTruncated, "truncated"}, {st.DroppedClosed, "session_closed"},
	} {
		counter(c.dropped, r.v, r.reason)
	}
	counter(c.closed, st.ClosedIdle, "idle")
	counter(c.closed, st.ClosedHandshake, "unanswered")
	counter(c.closed, st.StreamsRefused, "stream")
	counter(c.sendsDropped, st.SendNoSession, "no_session")
	counter(c.sendsDropped, st.SendQueueFull, "queue_full")
	counter(c.sendsDropped, st.SendTooLarge, "too_large")
	counter(c.sendsDropped, st.SendErrors, "error")
}
