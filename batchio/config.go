package batchio

import (
	"fmt"
	"time"
)

// MmsgConfig configures a batch socket (Listen). On systems other than
// Linux only the buffer sizes apply.
type MmsgConfig struct {
	// Mode selects the receive system calls (default RecvMmsg).
	Mode RecvMode
	// BatchSize is the most datagrams one system call moves (default 64,
	// at most 1024).
	BatchSize int
	// RecvBuffer and SendBuffer are the socket buffer sizes to ask for
	// (default 4 MiB each; negative leaves the system default).
	RecvBuffer, SendBuffer int
	// ReusePort sets SO_REUSEPORT so several sockets can share the address.
	ReusePort bool
	// TOS, when non-zero, is the DSCP/TOS byte (IPv4) or traffic class
	// (IPv6) of outgoing packets.
	TOS int
	// PacketInfo asks for each datagram's local address (IP_PKTINFO or
	// IPV6_RECVPKTINFO) on reads and honours Message.Local on writes.
	// It needs the mmsg or block mode.
	PacketInfo bool
	// GSO lets WriteBatch pass a run of consecutive datagrams with the
	// same Addr and Local and equal lengths (the last may be shorter) to
	// the kernel as one UDP_SEGMENT send (Linux 4.18+), which splits it
	// into the same datagrams for a fraction of the per-datagram cost. It
	// needs the mmsg or block mode. Where the kernel or the first route
	// cannot do it, the socket sends plainly; MmsgConn.GSO reports which.
	GSO bool
}

const (
	defaultBatchSize = 64
	maxBatchSize     = 1024
	defaultSockBuf   = 4 << 20
	// sendRetries bounds how often one sendmmsg is retried after EINTR,
	// EAGAIN or ENOBUFS before the datagram at its head is dropped.
	sendRetries = 4
	// blockPollSlice caps one blocking poll in RecvBlock mode so that Close
	// is noticed promptly.
	blockPollSlice = 20 * time.Millisecond
)

func (c *MmsgConfig) validate() error {
	if c.Mode < 0 || c.Mode >= numRecvModes {
		return fmt.Errorf("batchio: receive mode %d; want one of mmsg, block, xnet, single", c.Mode)
	}
	if c.BatchSize == 0 {
		c.BatchSize = defaultBatchSize
	}
	if c.BatchSize < 1 || c.BatchSize > maxBatchSize {
		return fmt.Errorf("batchio: batch size %d; want 1 to %d", c.BatchSize, maxBatchSize)
	}
	if c.RecvBuffer == 0 {
		c.RecvBuffer = defaultSockBuf
	}
	if c.SendBuffer == 0 {
		c.SendBuffer = defaultSockBuf
	}
	if c.PacketInfo && c.Mode != RecvMmsg && c.Mode != RecvBlock {
		return fmt.Errorf("batchio: PacketInfo needs receive mode mmsg or block, not %v", c.Mode)
	}
	if c.GSO && c.Mode != RecvMmsg && c.Mode != RecvBlock {
		return fmt.Errorf("batchio: GSO needs receive mode mmsg or block, not %v", c.Mode)
	}
	if c.TOS < 0 || c.TOS > 255 {
		return fmt.Errorf("batchio: TOS %d; want 0 to 255", c.TOS)
	}
	return nil
}
