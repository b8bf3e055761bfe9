package reliable

import (
	"bytes"
	"encoding/binary"
	"fmt"
)

// reassembly is one packet being put together from its fragments: the C
// library's reliable_fragment_reassembly_data_t, with the data in a pool
// buffer laid out as it does it (the packet header re-encoded to end at
// MaxHeaderBytes, fragment i's data at MaxHeaderBytes + i*FragmentSize).
type reassembly struct {
	header      Header
	headerBytes uint8
	received    uint16
	total       uint16
	packetBytes int // payload bytes, known once the last fragment arrived
	buf         int32
	got         [MaxFragmentsLimit / 64]uint64
}

// fragment is a fragment datagram that passed every check of
// reliable_read_fragment_header.
type fragment struct {
	sequence uint16
	id       int
	count    int
	header   Header // fragment 0 only
	data     []byte // the fragment's share of the payload
}

// readFragment checks a fragment datagram in the C reader's order.
func (e *Endpoint) readFragment(datagram []byte) (fragment, DropReason) {
	if len(datagram) < FragmentHeaderBytes {
		return fragment{}, DropFragmentTruncated
	}
	if datagram[0] != prefixFragment {
		return fragment{}, DropFragmentPrefixInvalid
	}
	f := fragment{
		sequence: binary.LittleEndian.Uint16(datagram[1:3]),
		id:       int(datagram[3]),
		count:    int(datagram[4]) + 1,
		data:     datagram[FragmentHeaderBytes:],
	}
	if f.count > e.cfg.MaxFragments {
		return fragment{}, DropFragmentCountExceedsMax
	}
	if f.id >= f.count {
		return fragment{}, DropFragmentIDOutOfRange
	}
	if f.id == 0 {
		embedded := f.data
		h, n, r := ReadHeader(embedded)
		if r != DropNone || embedded[0]&prefixFragment != 0 {
			return fragment{}, DropEmbeddedHeaderInvalid
		}
		if h.Sequence != f.sequence {
			return fragment{}, DropEmbeddedSequenceMismatch
		}
		// Reassembly re-encodes the header canonically; a longer encoding
		// would shift the data, so the C reader refuses it.
		var canonical [MaxHeaderBytes]byte
		if m := WriteHeader(canonical[:], h); m != n || !bytes.Equal(canonical[:m], embedded[:n]) {
			return fragment{}, DropEmbeddedHeaderNonCanonical
		}
		f.header = h
		f.data = embedded[n:]
	}
	if len(f.data) > e.cfg.FragmentSize {
		return fragment{}, DropFragmentTooLarge
	}
	if f.id != f.count-1 && len(f.data) != e.cfg.FragmentSize {
		return fragment{}, DropFragmentWrongSize
	}
	return f, DropNone
}

// receiveFragment handles a fragment datagram.
func (e *Endpoint) receiveFragment(datagram []byte) (Delivery, DropReason) {
	f, r := e.readFragment(datagram)
	if r != DropNone {
		e.counters[FragmentsInvalid]++
		return Delivery{}, r
	}
	if e.recv.exists(f.sequence) {
		return Delivery{}, DropFragmentOfReceivedPacket
	}
	i := e.frag.find(f.sequence)
	evicted := false
	if i < 0 {
		if i = e.frag.insertCleanup(f.sequence, e.releaseSlot); i < 0 {
			e.counters[FragmentsInvalid]++
			return Delivery{}, DropFragmentStale
		}
		buf := int32(-1)
		if e.held >= e.pool.perEndpoint {
			evicted = e.evictOldest(f.sequence, i)
		}
		if e.held < e.pool.perEndpoint {
			buf = e.pool.get()
		}
		if buf < 0 {
			// Refused before the received window moves: the slot the
			// C ring semantics cleared stays empty.
			e.frag.slots[i] = emptySlot
			return Delivery{}, DropReassemblyPoolExhausted
		}
		e.held++
		e.recv.advance(f.sequence, nil)
		e.fragData[i] = reassembly{total: uint16(f.count), buf: buf}
	}
	ra := &e.fragData[i]
	if f.count != int(ra.total) {
		e.counters[FragmentsInvalid]++
		return Delivery{}, DropFragmentCountMismatch
	}
	if ra.got[f.id/64]&(1<<(f.id%64)) != 0 {
		return Delivery{}, DropFragmentDuplicate
	}
	ra.received++
	ra.got[f.id/64] |= 1 << (f.id % 64)
	buf := e.pool.buffer(ra.buf)
	if f.id == 0 {
		ra.header = f.header
		ra.headerBytes = uint8(WriteHeader(buf[MaxHeaderBytes-HeaderLen(f.header):MaxHeaderBytes], f.header))
	}
	if f.id == f.count-1 {
		ra.packetBytes = (f.count-1)*e.cfg.FragmentSize + len(f.data)
	}
	// Data past the buffer belongs to a packet too large to deliver:
	// only its length matters.
	if off := MaxHeaderBytes + f.id*e.cfg.FragmentSize; off < len(buf) {
		copy(buf[off:], f.data)
	}

	var d Delivery
	r = DropNone
	if ra.received == ra.total {
		d, r = e.complete(i, f.sequence)
	}
	e.counters[FragmentsReceived]++
	d.Evicted = evicted
	return d, r
}

// complete hands a reassembled packet to the regular path (as the C
// library does, by receiving it again) and frees the slot.
func (e *Endpoint) complete(i int, seq uint16) (Delivery, DropReason) {
	ra := &e.fragData[i]
	hb := int(ra.headerBytes)
	datagramBytes := hb + ra.packetBytes
	var d Delivery
	var r DropReason
	if datagramBytes > e.cfg.MaxPacketSize+MaxHeaderBytes+FragmentHeaderBytes {
		e.counters[PacketsTooLargeToReceive]++
		r = DropReassembledTooLarge
	} else {
		e.counters[PacketsReceived]++
		var payload []byte
		if ra.packetBytes <= e.cfg.MaxPacketSize {
			payload = e.pool.buffer(ra.buf)[MaxHeaderBytes : MaxHeaderBytes+ra.packetBytes]
		}
		d, r = e.deliver(ra.header, payload, ra.packetBytes, datagramBytes, int(ra.total))
	}
	e.frag.remove(seq)
	if d.Delivered {
		// Keep the buffer the Delivery aliases until the next Receive.
		e.delivered = ra.buf
		ra.buf = -1
	} else {
		e.releaseReassembly(i)
	}
	return d, r
}

// evictOldest frees the endpoint's oldest reassembly in progress (other
// than slot keep) if it is older than seq: at its share of the pool, a
// packet newer than all it holds replaces the oldest, which has most
// likely lost a fragment (a packet's fragments leave in one batch). Only
// the endpoint's own reassemblies are touched, so a peer sending junk
// fragments evicts nothing but its own packets.
func (e *Endpoint) evictOldest(seq uint16, keep int) bool {
	oldest, age := -1, uint16(0)
	for j := range e.fragData {
		s := e.frag.slots[j]
		if j == keep || s == emptySlot || e.fragData[j].buf < 0 {
			continue
		}
		if a := seq - uint16(s); sequenceGreater(seq, uint16(s)) && a > age {
			oldest, age = j, a
		}
	}
	if oldest < 0 {
		return false
	}
	e.releaseReassembly(oldest)
	e.frag.slots[oldest] = emptySlot
	e.drops[DropReassemblyEvicted]++
	return true
}

// releaseReassembly returns slot i's buffer, if any, to the pool.
func (e *Endpoint) releaseReassembly(i int) {
	if b := e.fragData[i].buf; b >= 0 {
		e.pool.put(b)
		e.held--
		e.fragData[i].buf = -1
	}
}

// releaseDelivered returns the buffer the last reassembled Delivery
// aliased.
func (e *Endpoint) releaseDelivered() {
	if e.delivered >= 0 {
		e.pool.put(e.delivered)
		e.held--
		e.delivered = -1
	}
}

func errPoolBuffers(have, want int) error {
	return fmt.Errorf("reliable: pool buffers of %d bytes; this config needs %d (Config.ReassemblyBufferBytes)", have, want)
}
