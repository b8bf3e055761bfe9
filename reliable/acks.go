package reliable

import "math/bits"

// ackHeader returns the header for a packet of sequence seq: the newest
// received sequence and the 32 behind it.
func (e *Endpoint) ackHeader(seq uint16) Header {
	h := Header{Sequence: seq, Ack: e.recv.sequence - 1}
	for i := 0; i < 32; i++ {
		if e.recv.exists(h.Ack - uint16(i)) {
			h.AckBits |= 1 << i
		}
	}
	return h
}

// commit records the pending packet (see Refuse): the accept branch of
// reliable_endpoint_receive_packet after the process callback.
func (e *Endpoint) commit() {
	if !e.pending.valid {
		return
	}
	e.pending.valid = false
	h := e.pending.header
	if i := e.recv.insert(h.Sequence); i >= 0 { // always: Receive checked
		e.recvData[i] = recvRecord{time: e.now, bytes: uint32(e.cfg.PacketHeaderSize + e.pending.datagramBytes)}
	}
	e.frag.advance(h.Sequence, e.releaseSlot)
	// Bit i acks sequence Ack-i: newest first, as the C library lists them.
	for mask := h.AckBits; mask != 0; mask &= mask - 1 {
		seq := h.Ack - uint16(bits.TrailingZeros32(mask))
		j := e.sent.find(seq)
		if j < 0 || e.sentData[j].acked {
			continue
		}
		if len(e.acks) == cap(e.acks) {
			continue // full: the C library drops the ack, the packet stays unacked
		}
		e.acks = append(e.acks, seq)
		e.counters[PacketsAcked]++
		e.sentData[j].acked = true
		e.addRTTSample(seq, e.sentData[j].time)
	}
}
