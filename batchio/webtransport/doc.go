// Package webtransport carries netcode packets between a server and
// browsers over WebTransport datagrams (HTTP/3 over QUIC), so web players
// join the same server as UDP players.
//
// Listen returns a Conn, a batchio.Conn that a server runs as one more
// shard next to its UDP sockets:
//
//	wt, err := webtransport.Listen(webtransport.Config{Addr: addr})
//	srv, err := engine.NewServer(cfg, udpConn, wt)
//
// Each WebTransport session is one client address. Several sessions can
// share one QUIC connection, so the QUIC peer's address cannot name a
// session; instead each session gets a synthetic address in the IPv6
// discard prefix 100::/64 (RFC 6666), unique for the life of the process.
// No real peer can have such an address, so a browser can never collide
// with, or pose as, a UDP player: the Conn delivers only datagrams of its
// own sessions, and a write to any other address is dropped.
//
// Datagrams carry netcode packets unchanged. Nothing is trusted because it
// arrived over TLS: the server applies the handshake, connect-token and
// replay rules exactly as it does to UDP. What QUIC does change is the
// size: a WebTransport datagram carries less than a UDP datagram, about
// 1,240 bytes on a new connection with quic-go's 1,280-byte packets (until
// path MTU discovery raises it). netcode's largest packet, 1,225 bytes for
// a 1,200-byte payload, fits; a browser or path with smaller QUIC packets
// may not take it, and a packet that does not fit is dropped and counted
// (Stats.SendDropped, TransportStats.SendTooLarge). Browser games should
// keep payloads around 1,100 bytes or less.
//
// Everything a browser can make the Conn hold is bounded by Config: the
// sessions, the sessions opened per second (overall and per remote IP),
// sessions the server has not answered yet, the shared inbox and each
// session's share of it, each session's datagram rate, and how long a
// silent session lives. A session that opens a stream (only datagrams are
// expected) is closed with ErrorCodeStreamRefused. Every drop and refusal
// is counted by reason (TransportStats).
//
// Dial is the client side, a batchio.Conn over one WebTransport session,
// for tests and load generators that play browsers.
package webtransport
