package reliable

import (
	"encoding/binary"
	"errors"
)

// Errors returned by Send and Packet.WriteDatagram.
var (
	// ErrPacketTooLarge: the payload is longer than Config.MaxPacketSize,
	// or needs more than Config.MaxFragments fragments. Nothing was sent
	// and no sequence was used.
	ErrPacketTooLarge = errors.New("reliable: payload longer than MaxPacketSize or than MaxFragments fragments")
	// ErrBufferTooSmall: the destination is shorter than DatagramLen.
	ErrBufferTooSmall = errors.New("reliable: buffer shorter than the datagram")
	// ErrNoDatagram: the datagram index is not below Datagrams().
	ErrNoDatagram = errors.New("reliable: datagram index out of range")
)

// Packet is a packet Send has recorded, ready to be written out as one
// regular datagram or as fragments. It refers to the payload given to Send,
// which must not change until every datagram has been written; it is a
// small value that needs no allocation.
type Packet struct {
	payload      []byte
	header       [MaxHeaderBytes]byte
	headerLen    uint8
	sequence     uint16
	fragments    uint16 // 0: a regular packet
	fragmentSize int
}

// Sequence returns the packet's sequence: the far end's acks name it.
func (p *Packet) Sequence() uint16 { return p.sequence }

// Fragments returns the number of fragments, or 0 for a regular packet.
func (p *Packet) Fragments() int { return int(p.fragments) }

// Datagrams returns the number of datagrams to transmit (0 for the zero
// Packet that a failed Send returns).
func (p *Packet) Datagrams() int {
	switch {
	case p.headerLen == 0:
		return 0
	case p.fragments == 0:
		return 1
	}
	return int(p.fragments)
}

// fragmentData returns the payload carried by fragment i.
func (p *Packet) fragmentData(i int) []byte {
	lo := i * p.fragmentSize
	hi := min(lo+p.fragmentSize, len(p.payload))
	return p.payload[lo:hi]
}

// DatagramLen returns the length of datagram i, or 0 when there is none.
func (p *Packet) DatagramLen(i int) int {
	if i < 0 || i >= p.Datagrams() {
		return 0
	}
	if p.fragments == 0 {
		return int(p.headerLen) + len(p.payload)
	}
	n := FragmentHeaderBytes + len(p.fragmentData(i))
	if i == 0 {
		n += int(p.headerLen)
	}
	return n
}

// WriteDatagram writes datagram i (0 <= i < Datagrams()) to the start of
// dst and returns its length: the header and a copy of the payload's
// slice, with no other copy made.
func (p *Packet) WriteDatagram(i int, dst []byte) (int, error) {
	if i < 0 || i >= p.Datagrams() {
		return 0, ErrNoDatagram
	}
	n := p.DatagramLen(i)
	if len(dst) < n {
		return 0, ErrBufferTooSmall
	}
	h := p.header[:p.headerLen]
	if p.fragments == 0 {
		copy(dst[copy(dst, h):], p.payload)
		return n, nil
	}
	dst[0] = prefixFragment
	binary.LittleEndian.PutUint16(dst[1:3], p.sequence)
	dst[3] = byte(i)
	dst[4] = byte(p.fragments - 1)
	off := FragmentHeaderBytes
	if i == 0 {
		off += copy(dst[off:], h)
	}
	copy(dst[off:], p.fragmentData(i))
	return n, nil
}
