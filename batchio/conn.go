// Package batchio is the engine's socket layer: batch reads and writes of
// datagrams into caller-preallocated messages, with netip.AddrPort
// addresses. It has a real UDP implementation, an in-memory network for
// tests, and a seeded network simulator that wraps either.
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
	// MmsgConfig.PacketInfo: a read sets it to the address the datagram
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

// Shedder is a conn that can drop a share of one kind of datagram in the
// kernel, before it is queued on the socket (MmsgConn on Linux). A server
// under a flood of datagrams it would mostly discard anyway keeps a fraction
// of them: the rest cost the kernel's filter instead of a read, a copy and
// the server's checks, and they can no longer fill the socket's queue and
// push out the datagrams of clients already playing.
type Shedder interface {
	// SetShedding keeps about keep (0 to 1) of the datagrams whose first
	// byte is prefix, chosen at random, and lets every other datagram
	// through. keep >= 1 removes the filter.
	SetShedding(prefix byte, keep float64) error
	// KernelDrops returns how many datagrams the kernel has dropped for
	// the socket: shed, or turned away by a full receive queue.
	KernelDrops() uint64
}
