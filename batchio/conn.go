// Package batchio is the engine's socket layer: batch reads and writes of
// datagrams into caller-preallocated messages, with netip.AddrPort
// addresses. Listen opens a UDP socket (recvmmsg/sendmmsg on Linux, a
// portable one elsewhere); what a socket can do beyond Conn is asked for
// with As (Waker, Shedder, StatsReader). With Config.XDP, Listen and
// ListenGroup open conns on AF_XDP sockets instead (Linux), the same Conn
// to the engine. Test doubles (an in-memory
// network, a network simulator, a fault injector, a scriptable fake) are
// in package batchiotest.
package batchio

import (
	"errors"
	"net/netip"
	"time"
)

// Message is one datagram. For reads, Buf is the caller's preallocated
// buffer; the read sets N and Addr (the source). For writes, Buf[:N] is sent
// to Addr.
type Message struct {
	Buf  []byte
	N    int
	Addr netip.AddrPort
	// Local is the local end of the datagram on a conn opened with
	// Config.PacketInfo: a read sets it to the address the datagram
	// was sent to, and a write sends from it (the zero Addr lets the
	// kernel choose). Other conns ignore it. It lets one socket bound to
	// the wildcard address stand in for many local addresses, as a load
	// generator does with 127.0.0.0/8.
	Local netip.Addr
}

// Conn is a datagram socket used in batches by a single goroutine at a time
// (Close may be called from any goroutine).
//
// Reads never block: the owner drains with ReadBatch until it returns 0, does
// its timers and sends, then parks in WaitRead. This keeps the per-packet
// path free of blocking system calls and lets a caller drive everything from
// its own loop with its own clock.
type Conn interface {
	// ReadBatch fills msgs[:n] with datagrams that have already arrived and
	// returns n. It returns 0, nil when none are waiting. Datagrams longer
	// than a buffer are truncated and dropped.
	ReadBatch(msgs []Message) (n int, err error)
	// WaitRead blocks until a datagram may be ready, the deadline passes
	// (nil), or the conn is closed (ErrClosed). A zero deadline waits
	// without a time limit.
	WaitRead(deadline time.Time) error
	// WriteBatch tries to send every message, in order, and returns how
	// many were handed to the network. A datagram it cannot send (a hard
	// error, retries exhausted) is dropped and counted by the conn, and the
	// rest still go out; callers must not resend, which could duplicate
	// datagrams. Datagrams are unreliable: a sent one may still be lost.
	WriteBatch(msgs []Message) (n int, err error)
	// LocalAddr is the bound address.
	LocalAddr() netip.AddrPort
	// Close releases the socket and wakes any WaitRead with ErrClosed.
	Close() error
}

// ErrClosed is returned by a Conn's methods after Close.
var ErrClosed = errors.New("batchio: connection closed")

// NewMessages returns n messages with size-byte buffers cut from one slab
// (each capped, so no buffer can grow into its neighbour).
func NewMessages(n, size int) []Message {
	slab := make([]byte, n*size)
	msgs := make([]Message, n)
	for i := range msgs {
		msgs[i].Buf = slab[i*size : (i+1)*size : (i+1)*size]
	}
	return msgs
}
