package engine

import (
	"errors"
	"fmt"

	"github.com/netcode-go/netcode/codec"
)

// Sealing ahead: a load generator seals the payload packets of a whole
// measured window before it begins, so that its cost per datagram in the
// window is the send alone. The client sets the packets' sequences aside
// so that nothing else it sends can take them: a sequence is the AEAD
// nonce, and two packets sealed under one would give the key away.

// ErrSealAhead is returned, wrapped, when ReserveSequences, SealNext or
// SendSealed cannot be used now.
var ErrSealAhead = errors.New("netcode: sealing ahead")

// MaxReservedSequences bounds one ReserveSequences block.
const MaxReservedSequences = 1 << 24

// reservation is a block of send sequences set aside for SealNext:
// [first, end), of which next is the first not yet sealed.
type reservation struct {
	first, end, next uint64
}

// ReserveSequences sets aside n send sequences (1 to
// MaxReservedSequences) for SealNext, starting gap (0 to 1024) after the
// client's next one, and drops any unsealed rest of an earlier block. The
// client's own packets meanwhile (keep-alives, until the sealed ones
// flow) take the sequences below the block; if its counter reaches the
// block it jumps over it. A server drops a packet more than its replay
// window (256) older than the newest it has, so gap should cover the
// keep-alives sent before the block goes out (10 a second), and packets
// should go out in the order sealed. The client must be connected over the
// network without a reliable endpoint.
func (c *Client) ReserveSequences(gap, n int) error {
	if err := c.sealAheadUsable(); err != nil {
		return err
	}
	if n < 1 || n > MaxReservedSequences || gap < 0 || gap > 1024 {
		return fmt.Errorf("%w: %d sequences %d ahead; want 1 to %d sequences, 0 to 1024 ahead", ErrSealAhead, n, gap, MaxReservedSequences)
	}
	// Never below the end of an earlier block: its sequences may be out.
	c.sequence = max(c.sequence, c.res.end)
	first := c.sequence + uint64(gap)
	c.res = reservation{first: first, end: first + uint64(n), next: first}
	c.recordSequence()
	return nil
}

// SealNext seals payload (1 to 1200 bytes) into buf as a payload packet
// with the next reserved sequence, for SendSealed later, and returns its
// length. Each reserved sequence is sealed once.
func (c *Client) SealNext(buf, payload []byte) (int, error) {
	if err := c.sealAheadUsable(); err != nil {
		return 0, err
	}
	if c.res.next >= c.res.end {
		return 0, fmt.Errorf("%w: no reserved sequence left; call ReserveSequences", ErrSealAhead)
	}
	n, err := codec.WritePayloadPacket(buf, c.res.next, payload, c.sendKey)
	if err != nil {
		return 0, err
	}
	c.res.next++
	return n, nil
}

// SendSealed queues a packet sealed by SealNext, like SendPacket: it
// counts as activity (no keep-alive in the same interval) and goes out at
// the next Flush or Update. packet is copied. From the first one on, the
// client's own packets take sequences past the block, so that the server,
// which has seen the block's, does not drop them as replays.
func (c *Client) SendSealed(packet []byte) error {
	if err := c.sentSealed(packet); err != nil {
		return err
	}
	buf := c.txBuf()
	c.txCommit(copy(buf, packet), nil)
	return nil
}

// SentSealed records that the caller sent a packet sealed by SealNext to
// ServerAddress itself, on a path of its own (a load generator that
// drives many clients over one socket): as SendSealed, without the copy
// into the client's batch. packet is the one sent; it is not copied.
func (c *Client) SentSealed(packet []byte) error {
	if err := c.sentSealed(packet); err != nil {
		return err
	}
	c.lastSend = c.now
	c.stats.PacketsOut++
	c.stats.BytesOut += uint64(len(packet))
	return nil
}

// sentSealed checks a sealed packet going out and moves the client's own
// sequences past the block.
func (c *Client) sentSealed(packet []byte) error {
	if err := c.sealAheadUsable(); err != nil {
		return err
	}
	if len(packet) < 1 || len(packet) > codec.MaxPacketBytes {
		return fmt.Errorf("%w: packet of %d bytes; want 1 to %d", ErrSealAhead, len(packet), codec.MaxPacketBytes)
	}
	c.sequence = max(c.sequence, c.res.end)
	c.recordSequence()
	return nil
}

func (c *Client) sealAheadUsable() error {
	switch {
	case c.loopback:
		return fmt.Errorf("%w: not in loopback mode", ErrSealAhead)
	case c.rel.ep != nil:
		return fmt.Errorf("%w: not with a reliable endpoint (its packets carry their own sequences)", ErrSealAhead)
	case c.state != Connected:
		return fmt.Errorf("%w: %w (state: %v)", ErrSealAhead, ErrClientNotConnected, c.state)
	}
	return nil
}

// skipReserved moves the counter over the reserved block when it reaches
// it.
func (c *Client) skipReserved() {
	if c.sequence >= c.res.first && c.sequence < c.res.end {
		c.sequence = c.res.end
	}
}

// recordSequence keeps the token's next sequence past every sequence used
// or reserved, so that a later Connect with the same token starts above
// them.
func (c *Client) recordSequence() {
	if c.seqSlot >= 0 {
		e := &c.seqs[c.seqSlot]
		e.next = max(e.next, c.sequence, c.res.end)
	}
}
