package message

import "time"

// notSent is the sentAt of a message or fragment never sent.
const notSent = time.Duration(-1)

// sendSlot is a reliable message queued or in flight, at index id % size.
type sendSlot struct {
	sentAt time.Duration
	n      uint32
	id     uint16
	state  uint8
	block  bool
}

const (
	slotEmpty uint8 = iota
	slotPending
	slotAcked
)

// relSend is a reliable channel's send side: the messages from the oldest
// unacked (oldest) to the next id to assign (next).
type relSend struct {
	slots  []sendSlot
	data   []byte // slot i's message at data[i*max:]
	max    int
	oldest uint16
	next   uint16
	// unsent is the first id never sent: every id before it went out at
	// least once. A block stops it until acked.
	unsent uint16
	credit uint16 // the peer has read every message before this id
	recvQ  uint16 // the peer's ReceiveQueueSize (the same config)
	log    sendLog
	again  []uint16 // resent in the last packet, to go once more
	blk    blockSend
	isLive func(logEntry) bool // s.live, bound once
}

// live reports whether e is the latest send of a message still unacked.
func (s *relSend) live(e logEntry) bool {
	sl := s.slot(e.id)
	return sl.id == e.id && sl.state == slotPending && sl.sentAt == e.at
}

// sent records a send of message id at now.
func (s *relSend) sent(id uint16, now time.Duration) {
	s.slot(id).sentAt = now
	s.log.push(logEntry{at: now, id: id}, s.isLive)
}

func (s *relSend) init(cfg *ChannelConfig) {
	s.slots = make([]sendSlot, cfg.SendQueueSize)
	s.max = cfg.MaxMessageSize
	s.data = make([]byte, cfg.SendQueueSize*s.max)
	s.recvQ = uint16(cfg.ReceiveQueueSize)
	s.log.init(cfg.SendQueueSize)
	s.again = make([]uint16, 0, 64)
	s.isLive = s.live
	if cfg.MaxBlockSize > 0 {
		s.blk.init(cfg)
	}
}

func (s *relSend) reset() {
	clear(s.slots)
	s.oldest, s.next, s.unsent, s.credit = 0, 0, 0, 0
	s.log.reset()
	s.again = s.again[:0]
	s.blk.reset()
}

func (s *relSend) slot(id uint16) *sendSlot { return &s.slots[int(id)%len(s.slots)] }

func (s *relSend) msg(id uint16) []byte {
	i := (int(id) % len(s.slots)) * s.max
	return s.data[i : i+int(s.slot(id).n)]
}

func (s *relSend) push(msg []byte, block bool) error {
	if int(s.next-s.oldest) >= len(s.slots) {
		return ErrQueueFull
	}
	if block {
		if s.blk.active {
			return ErrBlockBusy
		}
		s.blk.start(s.next, msg)
	} else {
		i := (int(s.next) % len(s.slots)) * s.max
		copy(s.data[i:], msg)
	}
	*s.slot(s.next) = sendSlot{sentAt: notSent, n: uint32(len(msg)), id: s.next, state: slotPending, block: block}
	s.next++
	return nil
}

// windowEnd is the first id the peer has no room for.
func (s *relSend) windowEnd() uint16 {
	end := s.credit + s.recvQ
	if seqLess(s.next, end) {
		return s.next
	}
	return end
}

// ack marks message id acked and releases the acked run at the front.
func (s *relSend) ack(id uint16) {
	sl := s.slot(id)
	if sl.id != id || sl.state != slotPending || sl.block {
		return
	}
	sl.state = slotAcked
	s.release()
}

func (s *relSend) release() {
	for s.oldest != s.next {
		sl := s.slot(s.oldest)
		if sl.state != slotAcked {
			return
		}
		sl.state = slotEmpty
		s.oldest++
	}
}

// ackFragment marks a fragment of block id acked; the whole block acked
// releases its slot.
func (s *relSend) ackFragment(id uint16, frag int) {
	if !s.blk.active || s.blk.id != id || !s.blk.ack(frag) {
		return
	}
	s.blk.finish()
	s.slot(id).state = slotAcked
	if s.unsent == id {
		s.unsent++ // the messages behind the block may go
	}
	s.release()
}

// setCredit takes a credit the peer advertised, if it is newer and names
// no id not yet sent.
func (s *relSend) setCredit(v uint16) {
	if seqGreater(v, s.credit) && !seqGreater(v, s.next) {
		s.credit = v
	}
}
