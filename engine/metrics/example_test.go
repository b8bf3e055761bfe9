package metrics_test

import (
	"crypto/rand"
	"fmt"
	"net/netip"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/metrics"
	"github.com/prometheus/client_golang/prometheus"
)

// A game server registers the collector in its own registry and serves it
// with any Prometheus handler (metrics.Handler here).
func ExampleNewCollector() {
	key := make([]byte, 32)
	rand.Read(key)
	srv, err := engine.Listen(engine.ServerConfig{ProtocolID: 1, PrivateKey: key, MaxClients: 64, Shards: 2},
		batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		panic(err)
	}
	defer srv.Close()

	reg := prometheus.NewRegistry()
	reg.MustRegister(metrics.NewCollector(srv))
	// http.Handle("/metrics", metrics.Handler(reg, logger))

	families, err := reg.Gather()
	if err != nil {
		panic(err)
	}
	for _, mf := range families {
		switch mf.GetName() {
		case "netcode_max_clients":
			fmt.Println(mf.GetName(), mf.GetMetric()[0].GetGauge().GetValue())
		case "netcode_connected_clients":
			fmt.Println(mf.GetName(), len(mf.GetMetric()), "series (one per shard)")
		}
	}
	// Output:
	// netcode_connected_clients 2 series (one per shard)
	// netcode_max_clients 64
}
