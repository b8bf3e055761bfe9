package message

import "time"

// blockSend is the block a channel has queued or in flight, and the
// fragments of it the peer acked.
type blockSend struct {
	data     []byte // the caller's, until acked (no copy: see SendBlock)
	n        int
	fragSize int
	frags    int
	acked    []bool
	ackedN   int
	sentAt   []time.Duration
	id       uint16
	active   bool
	// The last block sent whole: the peer holds it until the
	// application reads it, so the next waits for the peer's credit to
	// pass it.
	prevID   uint16
	havePrev bool
}

func (b *blockSend) init(cfg *ChannelConfig) {
	b.fragSize = cfg.BlockFragmentSize
	n := fragmentsOf(cfg.MaxBlockSize, cfg.BlockFragmentSize)
	b.acked = make([]bool, n)
	b.sentAt = make([]time.Duration, n)
}

func (b *blockSend) reset() {
	b.active, b.havePrev = false, false
	b.data = nil // the caller's buffer, free again
}

func (b *blockSend) start(id uint16, block []byte) {
	b.id, b.active = id, true
	b.data, b.n = block, len(block)
	b.frags = fragmentsOf(b.n, b.fragSize)
	clear(b.acked[:b.frags])
	b.ackedN = 0
	for i := range b.frags {
		b.sentAt[i] = notSent
	}
}

// fragment returns fragment i's data.
func (b *blockSend) fragment(i int) []byte {
	lo := i * b.fragSize
	return b.data[lo:min(lo+b.fragSize, b.n)]
}

// ack marks fragment i acked and reports whether the block is complete.
func (b *blockSend) ack(i int) bool {
	if i >= b.frags || b.acked[i] {
		return false
	}
	b.acked[i] = true
	b.ackedN++
	return b.ackedN == b.frags
}

func (b *blockSend) finish() {
	b.active, b.data = false, nil
	b.prevID, b.havePrev = b.id, true
}

// ready reports whether the peer has read the previous block, so that
// its block buffer is free for this one.
func (b *blockSend) ready(credit uint16) bool {
	return !b.havePrev || seqGreater(credit, b.prevID)
}
