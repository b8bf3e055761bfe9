package reliable

// Delivery is what Receive hands to the application.
type Delivery struct {
	// Delivered is true when a packet arrived whole: Payload holds it.
	// It is false for a fragment that was stored and for every drop.
	Delivered bool
	// Sequence is the packet's sequence.
	Sequence uint16
	// Fragments is the number of fragments the packet came in, 0 for a
	// regular packet.
	Fragments int
	// Evicted is set when storing this fragment made the endpoint give up
	// its oldest packet in reassembly, at its share of the pool (see Pool).
	Evicted bool
	// Payload is the packet, possibly empty. A regular packet's payload
	// aliases the datagram given to Receive; a reassembled one aliases a
	// buffer of the endpoint, valid until its next Receive or Reset.
	Payload []byte
}

// Receive reads one datagram from the far end. When it completes a packet
// (a regular packet, or the last missing fragment of one) it returns it as
// a Delivery; the packet counts as accepted, and is recorded for acks,
// unless Refuse is called next. A stored fragment returns an undelivered
// Delivery and DropNone. A refused datagram returns its DropReason (the C
// library's checks, in its order) and changes nothing but counters, with
// one exception: before DropReassemblyPoolExhausted, a fragment newer than
// any seen has moved the fragment window as the C library would, evicting
// the reassemblies it passed (see Pool).
//
// A delivered payload aliases datagram (regular packet) or an endpoint
// buffer valid until the next Receive or Reset (reassembled packet).
func (e *Endpoint) Receive(datagram []byte) (Delivery, DropReason) {
	e.commit()
	e.releaseDelivered()
	var d Delivery
	var r DropReason
	switch {
	case len(datagram) > e.cfg.MaxPacketSize+MaxHeaderBytes+FragmentHeaderBytes:
		e.counters[PacketsTooLargeToReceive]++
		r = DropTooLarge
	case len(datagram) == 0 || datagram[0]&prefixFragment == 0:
		d, r = e.receivePacket(datagram)
	default:
		d, r = e.receiveFragment(datagram)
	}
	e.drops[r]++ // drops[DropNone] counts datagrams taken
	return d, r
}

// receivePacket handles a regular packet.
func (e *Endpoint) receivePacket(datagram []byte) (Delivery, DropReason) {
	e.counters[PacketsReceived]++
	h, n, r := ReadHeader(datagram)
	if r != DropNone {
		e.counters[PacketsInvalid]++
		return Delivery{}, r
	}
	return e.deliver(h, datagram[n:], len(datagram)-n, len(datagram), 0)
}

// deliver runs the checks every packet passes after its header was read,
// regular or reassembled, and makes it pending. payload is nil when
// payloadLen exceeds MaxPacketSize (a reassembled packet too large to have
// been stored whole).
func (e *Endpoint) deliver(h Header, payload []byte, payloadLen, datagramBytes, fragments int) (Delivery, DropReason) {
	if payloadLen > e.cfg.MaxPacketSize {
		e.counters[PacketsTooLargeToReceive]++
		return Delivery{}, DropPayloadTooLarge
	}
	if e.recv.stale(h.Sequence) {
		e.counters[PacketsStale]++
		return Delivery{}, DropStale
	}
	if e.recv.exists(h.Sequence) {
		e.counters[PacketsDuplicate]++
		return Delivery{}, DropDuplicate
	}
	e.pending = pendingPacket{valid: true, header: h, datagramBytes: datagramBytes}
	return Delivery{Delivered: true, Sequence: h.Sequence, Fragments: fragments, Payload: payload}, DropNone
}
