// Package metrics exports a netcode server's counters to Prometheus: a
// prometheus.Collector over engine.Server's Stats and ShardStats that a
// game registers in its own registry, and the few helpers the dedicated
// server uses (a registry with the Go runtime's collectors, the /metrics
// handler, the tick-duration histogram).
//
// It is the only package of the module that imports
// github.com/prometheus/client_golang, so that the engine and everything
// else stay free of it.
//
// Names follow the Prometheus conventions: the netcode_ prefix, _total
// counters, base units, and low-cardinality labels: shard (the shard's
// index in decimal), reason (the stable names of DropReasonName and
// ServerDropReasonName), direction (receive, send), by (client, server),
// state (pending, consumed). Every series exists from the first scrape,
// zeros included, so rate() and alerts work from the start.
//
// Collect reads the server the way Stats does: each shard publishes its
// counters after every pass with a TryLock, so a scrape never stops, locks
// out or allocates in a shard; it allocates in the scraping goroutine
// only. Values are at most one shard pass old.
//
//	reg := prometheus.NewRegistry()
//	reg.MustRegister(metrics.NewCollector(srv))
//	http.Handle("/metrics", metrics.Handler(reg, logger))
package metrics
