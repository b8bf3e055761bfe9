package batchio

import (
	"fmt"
	"time"
)

// Config is every option of a socket opened by Listen. The zero value is
// the default socket: batches of 64, 4 MiB buffers, GSO where the kernel
// has it, waits on Go's netpoller. Outside Linux only the buffer sizes
// apply, and PacketInfo is an error.
type Config struct {
	// BatchSize is the most datagrams one system call moves (default 64,
	// 1 to 1024).
	BatchSize int
	// RecvBuffer and SendBuffer are the socket buffer sizes to ask for
	// (default 4 MiB each; negative leaves the system default). Stats
	// reports what the kernel granted.
	RecvBuffer, SendBuffer int
	// ReusePort sets SO_REUSEPORT so several sockets can share the
	// address; the kernel spreads flows over them by a hash.
	ReusePort bool
	// TOS, when non-zero, is the DSCP/TOS byte (IPv4) or traffic class
	// (IPv6) of outgoing packets (0 to 255).
	TOS int
	// PacketInfo asks for each datagram's local address (IP_PKTINFO or
	// IPV6_RECVPKTINFO) on reads and honours Message.Local on writes.
	// Linux only.
	PacketInfo bool
	// DisableGSO sends every datagram with a header of its own. By
	// default WriteBatch passes a run of consecutive datagrams with the
	// same Addr and Local and equal lengths (the last may be shorter) to
	// the kernel as one UDP_SEGMENT send (Linux 4.18+), which splits it
	// into the same datagrams for a fraction of the per-datagram cost.
	// Other writes are unaffected. Where the kernel or the first route
	// cannot do it, the socket sends plainly; Stats.GSO reports which.
	DisableGSO bool
	// BlockingWait makes WaitRead block in poll(2) on the calling OS
	// thread instead of parking the goroutine on Go's netpoller; lock the
	// reading goroutine to its thread (runtime.LockOSThread), which
	// Stats.BlockingWait tells a caller to do. Linux only; ignored
	// elsewhere.
	BlockingWait bool
	// SourceLimit drops, in the kernel, what any one source sends beyond
	// a rate (an eBPF socket filter, Linux). Off by default.
	SourceLimit SourceLimit
	// XDP moves the datagrams of the listen port through AF_XDP sockets
	// on an interface instead of the socket stack (Linux; off by
	// default). See XDP.
	XDP XDP
}

const (
	defaultBatchSize = 64
	maxBatchSize     = 1024
	defaultSockBuf   = 4 << 20
	// sendRetries bounds how often one sendmmsg is retried after EINTR,
	// EAGAIN or ENOBUFS before the datagram at its head is dropped.
	sendRetries = 4
	// blockPollSlice caps one blocking poll (BlockingWait, WaitAny) so
	// that Close is noticed promptly.
	blockPollSlice = 20 * time.Millisecond
)

// validate fills in defaults and checks ranges.
func (c *Config) validate() error {
	if c.BatchSize == 0 {
		c.BatchSize = defaultBatchSize
	}
	if c.BatchSize < 1 || c.BatchSize > maxBatchSize {
		return fmt.Errorf("batchio: batch size %d; want 1 to %d (0 means %d)", c.BatchSize, maxBatchSize, defaultBatchSize)
	}
	if c.RecvBuffer == 0 {
		c.RecvBuffer = defaultSockBuf
	}
	if c.SendBuffer == 0 {
		c.SendBuffer = defaultSockBuf
	}
	if c.TOS < 0 || c.TOS > 255 {
		return fmt.Errorf("batchio: TOS %d; want 0 to 255", c.TOS)
	}
	if err := c.XDP.validate(); err != nil {
		return err
	}
	return c.SourceLimit.validate()
}
