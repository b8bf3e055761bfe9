package metrics_test

import (
	"net/http/httptest"
	"testing"

	"github.com/netcode-go/netcode/engine/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// BenchmarkScrape is one whole scrape of a two-shard server as the
// /metrics handler serves it (gather and text encoding): the CPU a scraper
// costs the machine per poll, on the scraper's goroutine. "server" has the
// netcode collector alone, "with-runtime" adds the Go and process
// collectors of NewRegistry, as the dedicated server serves.
func BenchmarkScrape(b *testing.B) {
	for _, tc := range []struct {
		name string
		reg  func() *prometheus.Registry
	}{{"server", prometheus.NewRegistry}, {"with-runtime", metrics.NewRegistry}} {
		b.Run(tc.name, func(b *testing.B) {
			r := newRig(b, 2, 256)
			reg := tc.reg()
			reg.MustRegister(metrics.NewCollector(r.srv))
			h := metrics.Handler(reg, nil)
			req := httptest.NewRequest("GET", "/metrics", nil)
			b.ReportAllocs()
			for b.Loop() {
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != 200 {
					b.Fatal(rec.Code)
				}
			}
		})
	}
}
