// Package bench measures a netcode server under load: a generator of real
// netcode clients (full handshake with connect tokens, one UDP socket each)
// that send stamped payloads at a fixed rate and time their echoes, an echo
// server built on engine.Server, and the reports (summary table, JSON,
// HdrHistogram percentile text, SVG latency chart) that cmd/netbench writes.
//
// The per-packet paths of both sides allocate nothing: payloads are stamped
// in place in preallocated buffers, round-trip times go into per-shard
// HdrHistograms that are merged only when a report is made, and loss,
// duplicates and reordering are counted with a fixed-size window per client.
package bench
