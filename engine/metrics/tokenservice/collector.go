// Package tokenservice exports a token service's counters (package
// engine/backend) as Prometheus series; it is apart from package metrics
// so that backend's tests can use metrics without an import cycle.
package tokenservice

import (
	"sync"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/netcode-go/netcode/engine/backend"
)

// Collector exports a token service's counters and, with a
// health directory, what it knows of each server.
type Collector struct {
	h   *backend.Handler
	dir *backend.HealthDirectory // nil: no per-server series

	issued, refused             *prometheus.Desc
	serverUp, serverFree, offer *prometheus.Desc

	mu     sync.Mutex
	states []backend.ServerState
}

var _ prometheus.Collector = (*Collector)(nil)

// NewCollector returns a collector over h and, when dir is
// not nil, its health directory.
func NewCollector(h *backend.Handler, dir *backend.HealthDirectory) *Collector {
	server := []string{"server"}
	return &Collector{h: h, dir: dir,
		issued:     prometheus.NewDesc("netcode_token_issued_total", "Connect tokens issued.", nil, nil),
		refused:    prometheus.NewDesc("netcode_token_refused_total", "Token requests refused, by the error code answered (rate_limited: over the per-client-id rate).", []string{"code"}, nil),
		serverUp:   prometheus.NewDesc("netcode_token_directory_server_up", "1 if the server answered ready at the health directory's last probe.", server, nil),
		serverFree: prometheus.NewDesc("netcode_token_directory_server_free_slots", "The server's free slots at the last probe; -1 when its load is unknown.", server, nil),
		offer:      prometheus.NewDesc("netcode_token_directory_server_offers", "Tokens that named the server first since the last probe.", server, nil),
	}
}

// Describe sends every series' description.
func (c *Collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{c.issued, c.refused, c.serverUp, c.serverFree, c.offer} {
		ch <- d
	}
}

// Collect reads the counters and the directory's states.
func (c *Collector) Collect(ch chan<- prometheus.Metric) {
	st := c.h.Stats()
	ch <- prometheus.MustNewConstMetric(c.issued, prometheus.CounterValue, float64(st.Issued))
	for i, n := range st.Refused {
		ch <- prometheus.MustNewConstMetric(c.refused, prometheus.CounterValue, float64(n), backend.RefusalCodes[i])
	}
	if c.dir == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.states = c.dir.States(c.states[:0])
	for _, s := range c.states {
		name := s.Server.Public.String()
		ch <- prometheus.MustNewConstMetric(c.serverUp, prometheus.GaugeValue, up(s.Up), name)
		ch <- prometheus.MustNewConstMetric(c.serverFree, prometheus.GaugeValue, float64(s.Free), name)
		ch <- prometheus.MustNewConstMetric(c.offer, prometheus.GaugeValue, float64(s.Offered), name)
	}
}

func up(b bool) float64 {
	if b {
		return 1
	}
	return 0
}
