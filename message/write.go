package message

import "time"

// Version is the first byte of every packet (PROTOCOL.md).
const Version = 1

// Section types, the low two bits of a section's tag.
const (
	secMessages   = 0
	secFragments  = 1
	secUnreliable = 2
	secCredit     = 3
)

// maxSectionCount keeps a section's count in two varint bytes.
const maxSectionCount = 1<<14 - 1

// writer fills one packet.
type writer struct {
	buf     []byte
	pos     int
	rec     *record
	entLeft int
}

// section is a section being written: its start, and where its items go
// after a count reserved two bytes.
type section struct {
	start, countAt int
	count          int
}

// begin writes a section's tag and header fields and reserves its count;
// ok false when even that does not fit under limit.
func (w *writer) begin(limit int, tag uint32, fields ...uint32) (s section, ok bool) {
	n := varintLen(tag) + 2
	for _, f := range fields {
		n += varintLen(f)
	}
	if w.pos+n > limit {
		return section{}, false
	}
	s.start = w.pos
	w.pos += putVarint(w.buf[w.pos:], tag)
	for _, f := range fields {
		w.pos += putVarint(w.buf[w.pos:], f)
	}
	s.countAt = w.pos
	w.pos += 2
	return s, true
}

// end writes the count, closing the gap a one-byte count leaves; a
// section with nothing in it is taken back.
func (w *writer) end(s section) {
	if s.count == 0 {
		w.pos = s.start
		return
	}
	if s.count < 0x80 {
		w.buf[s.countAt] = byte(s.count)
		copy(w.buf[s.countAt+1:], w.buf[s.countAt+2:w.pos])
		w.pos--
		return
	}
	putVarint(w.buf[s.countAt:], uint32(s.count))
}

func (w *writer) bytes(b []byte) { w.pos += copy(w.buf[w.pos:], b) }

func (w *writer) varint(v uint32) { w.pos += putVarint(w.buf[w.pos:], v) }

// WritePacket fills dst (up to the PacketBudget) with what is due: first
// the credits the peer has not acked, then the channels in priority
// order, each within its own budget. seq is the packet layer's sequence
// for this packet: its ack releases what the packet carried. The packet
// is at least one byte (the version), and should be sent even then if
// acks are to flow. n is 0 only when dst is empty.
func (c *Conn) WritePacket(dst []byte, seq uint16, now time.Duration) (n int) {
	limit := min(len(dst), c.cfg.PacketBudget)
	if limit < 1 {
		return 0
	}
	dst[0] = Version
	w := writer{buf: dst[:limit], pos: 1, rec: c.records.begin(seq)}
	w.entLeft = min(c.records.maxPerPacket(), maxSectionCount)
	for i := range c.chans {
		ch := &c.chans[i]
		if !ch.cfg.Kind.reliable() || ch.rr.base == ch.rr.creditAcked || w.entLeft == 0 {
			continue
		}
		tag, v := uint32(i<<2|secCredit), uint32(ch.rr.base)
		if w.pos+varintLen(tag)+varintLen(v) > limit {
			break
		}
		w.varint(tag)
		w.varint(v)
		c.records.add(w.rec, entry{kind: entCredit, ch: uint8(i), id: ch.rr.base})
		w.entLeft--
	}
	for _, i := range c.order {
		ch := &c.chans[i]
		chLimit := limit
		if ch.cfg.PacketBudget != 0 {
			chLimit = min(limit, w.pos+ch.cfg.PacketBudget)
		}
		if ch.cfg.Kind.reliable() {
			c.writeReliable(&w, i, ch, chLimit, now)
		} else {
			c.writeUnreliable(&w, i, ch, chLimit)
		}
	}
	c.stats.PacketsWritten++
	if c.unackedSince < 0 {
		c.unackedSince = now
	} else if now-c.unackedSince >= c.cfg.StallTimeout {
		c.stalled = true
	}
	return w.pos
}

// writeReliable writes channel i's messages that are due: first those
// unacked for the resend time, oldest send first, then new ones in id
// order; then its block's fragments, if the block is the oldest unacked
// message. Messages come off the send log and a cursor, not a scan of the
// window.
func (c *Conn) writeReliable(w *writer, i int, ch *channel, limit int, now time.Duration) {
	s := &ch.rs
	if s.oldest == s.next {
		return
	}
	resend := c.resendTime(ch)
	sec, ok := w.begin(limit, uint32(i<<2|secMessages))
	if !ok {
		return
	}
	var prev uint16
	put := func(id uint16) bool {
		sl := s.slot(id)
		delta := uint32(id)
		if sec.count > 0 {
			delta = zigzag(int16(id - prev))
		}
		if w.entLeft == 0 || w.pos+varintLen(delta)+varintLen(sl.n)+int(sl.n) > limit {
			return false
		}
		w.varint(delta)
		w.varint(sl.n)
		w.bytes(s.msg(id))
		c.records.add(w.rec, entry{kind: entMessage, ch: uint8(i), id: id})
		w.entLeft--
		sec.count++
		prev = id
		return true
	}
	// Last packet's resends go once more (unless SingleResend): the
	// messages behind a lost one wait for it on an ordered channel, and a
	// lost resend would keep them another resend time. See
	// TestLatencyReport.
	again := s.again
	s.again = s.again[:0]
	for _, id := range again {
		if sl := s.slot(id); sl.id == id && sl.state == slotPending && put(id) {
			s.sent(id, now)
			c.stats.MessagesResent++
		}
	}
	for e, ok := s.log.front(); ok; e, ok = s.log.front() {
		if !s.live(e) {
			s.log.pop()
			continue
		}
		if now-e.at < resend || !put(e.id) {
			break
		}
		s.log.pop()
		s.sent(e.id, now)
		c.stats.MessagesResent++
		if !ch.cfg.SingleResend && len(s.again) < cap(s.again) {
			s.again = append(s.again, e.id)
		}
	}
	blockDue := false
	for end := s.windowEnd(); s.unsent != end && seqLess(s.unsent, end); s.unsent++ {
		if s.slot(s.unsent).block {
			blockDue = s.unsent == s.oldest // messages after a block wait for it
			break
		}
		if !put(s.unsent) {
			break
		}
		s.sent(s.unsent, now)
		c.stats.MessagesSent++
	}
	w.end(sec)
	if blockDue && s.blk.ready(s.credit) {
		c.writeFragments(w, i, ch, limit, now, resend)
	}
}

// zigzag maps a signed id delta to an unsigned varint value: 0, -1, 1,
// -2, ... to 0, 1, 2, 3, ...
func zigzag(d int16) uint32 { return uint32(uint16(d<<1) ^ uint16(d>>15)) }

func unzigzag(v uint16) int16 { return int16(v>>1) ^ -int16(v&1) }

// writeFragments writes the fragments of channel i's block that are due.
func (c *Conn) writeFragments(w *writer, i int, ch *channel, limit int, now, resend time.Duration) {
	b := &ch.rs.blk
	sec, ok := w.begin(limit, uint32(i<<2|secFragments), uint32(b.id), uint32(b.n))
	if !ok {
		return
	}
	for f := 0; f < b.frags && w.entLeft > 0; f++ {
		if b.acked[f] || (b.sentAt[f] != notSent && now-b.sentAt[f] < resend) {
			continue
		}
		data := b.fragment(f)
		if w.pos+varintLen(uint32(f))+len(data) > limit {
			continue // the last fragment is shorter
		}
		w.varint(uint32(f))
		w.bytes(data)
		c.records.add(w.rec, entry{kind: entFragment, ch: uint8(i), id: b.id, frag: uint16(f)})
		w.entLeft--
		sec.count++
		if b.sentAt[f] == notSent {
			c.stats.FragmentsSent++
		} else {
			c.stats.FragmentsResent++
		}
		b.sentAt[f] = now
	}
	w.end(sec)
}

// writeUnreliable writes channel i's queued messages in order, each once,
// as many as fit.
func (c *Conn) writeUnreliable(w *writer, i int, ch *channel, limit int) {
	s := &ch.us
	if s.n == 0 {
		return
	}
	sec, ok := w.begin(limit, uint32(i<<2|secUnreliable), uint32(s.headID))
	if !ok {
		return
	}
	for sec.count < s.n && sec.count < maxSectionCount {
		msg := s.at(sec.count)
		if w.pos+varintLen(uint32(len(msg)))+len(msg) > limit {
			break
		}
		w.varint(uint32(len(msg)))
		w.bytes(msg)
		sec.count++
	}
	s.drop(sec.count)
	c.stats.MessagesSent += uint64(sec.count)
	w.end(sec)
}

// Ack tells the Conn the peer received packet seq: what it carried is
// released. Unknown and repeated sequences are ignored.
func (c *Conn) Ack(seq uint16) {
	c.unackedSince, c.stalled = -1, false
	a, b := c.records.take(seq)
	c.settle(a)
	c.settle(b)
}

func (c *Conn) settle(es []entry) {
	for _, e := range es {
		ch := &c.chans[e.ch]
		switch e.kind {
		case entMessage:
			ch.rs.ack(e.id)
		case entFragment:
			ch.rs.ackFragment(e.id, int(e.frag))
		case entCredit:
			if seqGreater(e.id, ch.rr.creditAcked) {
				ch.rr.creditAcked = e.id
			}
		}
	}
}
