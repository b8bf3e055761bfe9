// Package reliable implements reliable 1.0, the packet acks and
// fragmentation layer of the netcode family (wire-compatible with the C
// library github.com/mas-bandwidth/reliable 1.4.0 and its Go port).
//
// netcode gives a game unreliable datagrams and nothing else. An Endpoint on
// each side adds a 4 to 9 byte header to every packet, so that each side
// learns which of its packets arrived (acks), and estimates RTT, jitter,
// loss and bandwidth; it cuts packets larger than a datagram into fragments
// and puts them back together. It retransmits nothing: the game decides.
//
// The package is built for a server holding thousands of endpoints in a
// few goroutines:
//
//   - No callbacks: Send returns a Packet the caller writes out datagram by
//     datagram into its own buffers; Receive returns a Delivery aliasing the
//     datagram (or a reassembly buffer), accepted unless Refuse follows.
//   - No allocation after New, fragmented packets included: every buffer is
//     sized by the Config up front. Reassembly buffers (16 KiB each by
//     default) come from a Pool shared by many endpoints, since giving each
//     endpoint its 64 would cost 1 MiB apiece; an endpoint alone takes about
//     20 KB with the default config (TestEndpointMemory measures it).
//   - Bad input never panics and is counted by DropReason, in the C
//     library's check order, with the C library's 11 counters beside.
//   - The estimates round every float32 operation as the C library does, so
//     they match its figures exactly.
//
// An Endpoint (and the Pool it shares) is not safe for concurrent use: one
// goroutine owns it.
package reliable
