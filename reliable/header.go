package reliable

import "encoding/binary"

// Sizes of the reliable 1.0 wire format.
const (
	// MinHeaderBytes and MaxHeaderBytes bound a packet header: prefix,
	// sequence, a one- or two-byte ack and zero to four ack_bits bytes.
	MinHeaderBytes = 4
	MaxHeaderBytes = 9
	// FragmentHeaderBytes is a fragment's own header: prefix 1, sequence,
	// fragment id, fragment count - 1.
	FragmentHeaderBytes = 5
	// MaxFragmentsLimit is the most fragments the count byte can say.
	MaxFragmentsLimit = 256
)

// Header is a packet header: the packet's sequence, the newest sequence
// received from the far end (Ack) and which of the 32 sequences up to it
// were received (bit i of AckBits: sequence Ack-i).
type Header struct {
	Sequence uint16
	Ack      uint16
	AckBits  uint32
}

// prefix bits of a packet header.
const (
	prefixFragment = 1 << 0
	prefixAckByte  = 1 << 5 // ack sent as a one-byte difference
)

// prefixAckBits is the prefix bit saying ack_bits byte i is present.
func prefixAckBits(i int) byte { return 1 << (1 + i) }

// HeaderLen returns the length of the canonical encoding of h.
func HeaderLen(h Header) int {
	n := 4
	if uint16(h.Sequence-h.Ack) > 255 {
		n++
	}
	for i := 0; i < 4; i++ {
		if byte(h.AckBits>>(8*i)) != 0xFF {
			n++
		}
	}
	return n
}

// WriteHeader writes the canonical (minimal) encoding of h to dst and
// returns its length, or 0 when dst is shorter than HeaderLen(h).
func WriteHeader(dst []byte, h Header) int {
	n := HeaderLen(h)
	if len(dst) < n {
		return 0
	}
	var prefix byte
	for i := 0; i < 4; i++ {
		if byte(h.AckBits>>(8*i)) != 0xFF {
			prefix |= prefixAckBits(i)
		}
	}
	diff := h.Sequence - h.Ack
	if diff <= 255 {
		prefix |= prefixAckByte
	}
	dst[0] = prefix
	binary.LittleEndian.PutUint16(dst[1:3], h.Sequence)
	p := 3
	if diff <= 255 {
		dst[p] = byte(diff)
		p++
	} else {
		binary.LittleEndian.PutUint16(dst[p:p+2], h.Ack)
		p += 2
	}
	for i := 0; i < 4; i++ {
		if b := byte(h.AckBits >> (8 * i)); b != 0xFF {
			dst[p] = b
			p++
		}
	}
	return p
}

// ReadHeader reads a packet header from the start of src and returns it
// with its length. Like the C reader it does not insist on the canonical
// encoding (explicit 0xFF bytes, a two-byte ack with a small difference and
// prefix bits 6 and 7 are accepted) and it does not look at prefix bit 0,
// which tells a fragment from a packet before a header is read. The only
// failure is DropHeaderTruncated: src is shorter than the prefix promises.
func ReadHeader(src []byte) (Header, int, DropReason) {
	if len(src) < 3 {
		return Header{}, 0, DropHeaderTruncated
	}
	prefix := src[0]
	h := Header{Sequence: binary.LittleEndian.Uint16(src[1:3])}
	p := 3
	if prefix&prefixAckByte != 0 {
		if len(src) < 4 {
			return Header{}, 0, DropHeaderTruncated
		}
		h.Ack = h.Sequence - uint16(src[3])
		p = 4
	} else {
		if len(src) < 5 {
			return Header{}, 0, DropHeaderTruncated
		}
		h.Ack = binary.LittleEndian.Uint16(src[3:5])
		p = 5
	}
	h.AckBits = 0xFFFFFFFF
	for i := 0; i < 4; i++ {
		if prefix&prefixAckBits(i) == 0 {
			continue
		}
		if p >= len(src) {
			return Header{}, 0, DropHeaderTruncated
		}
		h.AckBits &^= 0xFF << (8 * i)
		h.AckBits |= uint32(src[p]) << (8 * i)
		p++
	}
	return h, p, DropNone
}

// IsFragment reports whether a datagram is a fragment (prefix bit 0 set)
// rather than a packet. An empty datagram is neither; Receive refuses it.
func IsFragment(datagram []byte) bool {
	return len(datagram) > 0 && datagram[0]&prefixFragment != 0
}
