// Package bench measures a netcode server under load: a generator of real
// netcode clients (full handshake with connect tokens, an address each)
// that send stamped payloads at a fixed rate and time what comes back,
// the server applications it loads (EchoServer, and GameServer, which
// ticks and sends every client a snapshot of its own), a protocol-free
// control of both shapes (BareServer, and bare clients: plain UDP with
// the same stamps, sockets, batching and pacing), and the reports
// (summary table, JSON, HdrHistogram percentile text, SVG latency chart)
// that cmd/netbench writes.
//
// # Stamps
//
// Every payload starts with a 16-byte stamp, two little-endian uint64s.
// In an echo payload they are the load's send time (nanoseconds since
// the load started) and the client's payload sequence; the server sends
// the payload back as it came. In a game snapshot the server writes them:
//
//	bytes 0-7   the tick's send time, Unix nanoseconds (CLOCK_REALTIME),
//	            read once per tick as the server starts sending it
//	bytes 8-15  the tick number: tick intervals since the server started,
//	            so a tick the server skips is a gap, a lost snapshot
//
// and the rest is the server's own (GameServer puts the client's latest
// input sequence at bytes 16-23). The load reads nothing else, so another
// implementation's server can be loaded by stamping its snapshots this
// way (netbench -mode game -target ADDR). The latency is the send time to
// the receipt, one way, on one clock: load and server on one host.
//
// # What a game load counts
//
// A game window counts the snapshots whose send time falls in it. Every
// active client is owed one per tick from the lowest tick number seen in
// the window to the highest, so loss per client is what it was owed and
// did not get, and a skipped tick is lost for every client.
//
// # A load cheaper than the server
//
// With LoadConfig.SampleEvery N only every N-th client opens and times
// its replies; the others count them by address, size and the packet
// sequence the standard sends in the clear (duplicates too), without
// opening them, except one a second (so their sessions do not time out;
// the clients' turns are staggered) and, in a game window, the first
// snapshot sent in it and the first sent after it: the server numbers a
// client's packets in the order it sends them, so those two place every
// other snapshot in or out of the window. On AF_XDP (LoadConfig.XDP, game
// mode) the counting happens in the load's XDP program, which drops what
// it counted: the load's ring and process see only what a client opens.
// Every client still runs the full
// protocol: handshake, sealed payloads and keep-alives, so the server's
// work is unchanged. Clients on shared sockets send with one sendmmsg per
// batch across clients; UDP GSO cannot join them, since its segments
// share one source address and the server tells clients apart by theirs.
//
// The per-packet paths of both sides allocate nothing: payloads are stamped
// in place in preallocated buffers, latencies go into per-shard
// HdrHistograms that are merged only when a report is made, and loss,
// duplicates and reordering are counted with a fixed-size window per client.
package bench
