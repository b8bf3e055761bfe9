package metrics

import (
	"context"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Registry is where collectors are registered and gathered from:
// *prometheus.Registry is one. (The dedicated server takes one in its
// Config without importing client_golang itself.)
type Registry interface {
	prometheus.Registerer
	prometheus.Gatherer
}

var _ Registry = (*prometheus.Registry)(nil)

// NewRegistry returns a registry with the Go runtime's and the process's
// collectors (go_*, process_*: memory, GC, CPU, file descriptors), which
// an operator wants beside the server's.
func NewRegistry() *prometheus.Registry {
	reg := prometheus.NewRegistry()
	reg.MustRegister(collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	return reg
}

// Handler bounds.
const (
	// MaxScrapesInFlight bounds concurrent scrapes; more are answered 503.
	MaxScrapesInFlight = 4
	// ScrapeTimeout bounds one scrape; a slower one is answered 503.
	ScrapeTimeout = 10 * time.Second
)

// Handler serves g in the Prometheus text format (and compressed when
// asked). Collection errors are logged to log (nil: discarded), and the
// metrics that could be gathered are served anyway.
func Handler(g prometheus.Gatherer, log *slog.Logger) http.Handler {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return promhttp.HandlerFor(g, promhttp.HandlerOpts{
		ErrorLog:            errorLog{log},
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: MaxScrapesInFlight,
		Timeout:             ScrapeTimeout,
	})
}

// errorLog adapts a slog.Logger to promhttp's Println logger.
type errorLog struct{ log *slog.Logger }

func (e errorLog) Println(v ...any) {
	e.log.Log(context.Background(), slog.LevelWarn, "metrics: "+fmt.Sprint(v...))
}

// TickDurationName is the tick-duration histogram's name.
const TickDurationName = "netcode_tick_duration_seconds"

// TickBuckets are the tick-duration histogram's bucket bounds: 50 µs to
// about 100 ms, doubling, which spans a light tick and a 10 Hz budget.
var TickBuckets = prometheus.ExponentialBuckets(50e-6, 2, 12)

// NewTickHistogram returns the netcode_tick_duration_seconds histogram
// (how long each game tick took), registered in reg. Observe records one
// tick in seconds without allocating.
func NewTickHistogram(reg prometheus.Registerer) (prometheus.Histogram, error) {
	h := prometheus.NewHistogram(prometheus.HistogramOpts{
		Name:    TickDurationName,
		Help:    "Duration of the game's Tick calls.",
		Buckets: TickBuckets,
	})
	if err := reg.Register(h); err != nil {
		return nil, fmt.Errorf("metrics: registering %s: %w", TickDurationName, err)
	}
	return h, nil
}
