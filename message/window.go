package message

import "errors"

// windowBits is how far back ReadPacket tells a duplicate packet from a
// new one. An older packet is stale: its unreliable messages are dropped
// (one must not arrive twice), its reliable ones read (the packet layer
// acked them, and their ids tell duplicates).
const windowBits = 256

var errStale = errors.New("message: stale packet")

// window records the packet sequences read, relative to the newest.
type window struct {
	bits   [windowBits / 64]uint64 // bit k: newest - k was read
	newest uint16
	have   bool
}

// check reports whether seq is new (nil), a duplicate, or stale.
func (w *window) check(seq uint16) error {
	if !w.have || seqGreater(seq, w.newest) {
		return nil
	}
	age := int(w.newest - seq)
	if age >= windowBits {
		return errStale
	}
	if w.bits[age/64]&(1<<(age%64)) != 0 {
		return ErrDuplicate
	}
	return nil
}

// mark records seq as read; check said it is new.
func (w *window) mark(seq uint16) {
	if !w.have {
		w.have, w.newest = true, seq
		w.bits = [windowBits / 64]uint64{1}
		return
	}
	if seqGreater(seq, w.newest) {
		w.shift(int(seq - w.newest))
		w.newest = seq
		w.bits[0] |= 1
		return
	}
	age := int(w.newest - seq)
	w.bits[age/64] |= 1 << (age % 64)
}

// shift ages every bit by d.
func (w *window) shift(d int) {
	if d >= windowBits {
		w.bits = [windowBits / 64]uint64{}
		return
	}
	words, bits := d/64, uint(d%64)
	for i := len(w.bits) - 1; i >= 0; i-- {
		var v uint64
		if j := i - words; j >= 0 {
			v = w.bits[j] << bits
			if bits > 0 && j > 0 {
				v |= w.bits[j-1] >> (64 - bits)
			}
		}
		w.bits[i] = v
	}
}
