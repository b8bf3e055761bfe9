package codec

import "encoding/binary"

// The little-endian primitives of the format. A writer or reader checks the
// whole length it needs once, up front, and then uses these without further
// checks; the bounds-checked cursor types below serve variable-length
// structures (tokens with address lists).

// writer appends little-endian values into a fixed slice. A write past the
// end sets overflow instead of panicking.
type writer struct {
	buf      []byte
	pos      int
	overflow bool
}

func (w *writer) ok(n int) bool {
	if w.overflow || n > len(w.buf)-w.pos {
		w.overflow = true
		return false
	}
	return true
}

func (w *writer) u8(v uint8) {
	if w.ok(1) {
		w.buf[w.pos] = v
		w.pos++
	}
}

func (w *writer) u16(v uint16) {
	if w.ok(2) {
		binary.LittleEndian.PutUint16(w.buf[w.pos:], v)
		w.pos += 2
	}
}

func (w *writer) u32(v uint32) {
	if w.ok(4) {
		binary.LittleEndian.PutUint32(w.buf[w.pos:], v)
		w.pos += 4
	}
}

func (w *writer) u64(v uint64) {
	if w.ok(8) {
		binary.LittleEndian.PutUint64(w.buf[w.pos:], v)
		w.pos += 8
	}
}

func (w *writer) bytes(b []byte) {
	if w.ok(len(b)) {
		w.pos += copy(w.buf[w.pos:], b)
	}
}

// zeroRest zero-pads the rest of the buffer.
func (w *writer) zeroRest() {
	if w.pos < len(w.buf) {
		clear(w.buf[w.pos:])
		w.pos = len(w.buf)
	}
}

// reader consumes little-endian values from a slice. A read past the end sets
// short and returns zeros instead of panicking.
type reader struct {
	buf   []byte
	pos   int
	short bool
}

func (r *reader) ok(n int) bool {
	if r.short || n > len(r.buf)-r.pos {
		r.short = true
		return false
	}
	return true
}

func (r *reader) u8() uint8 {
	if !r.ok(1) {
		return 0
	}
	v := r.buf[r.pos]
	r.pos++
	return v
}

func (r *reader) u16() uint16 {
	if !r.ok(2) {
		return 0
	}
	v := binary.LittleEndian.Uint16(r.buf[r.pos:])
	r.pos += 2
	return v
}

func (r *reader) u32() uint32 {
	if !r.ok(4) {
		return 0
	}
	v := binary.LittleEndian.Uint32(r.buf[r.pos:])
	r.pos += 4
	return v
}

func (r *reader) u64() uint64 {
	if !r.ok(8) {
		return 0
	}
	v := binary.LittleEndian.Uint64(r.buf[r.pos:])
	r.pos += 8
	return v
}

// bytes copies len(dst) bytes into dst.
func (r *reader) bytes(dst []byte) {
	if !r.ok(len(dst)) {
		return
	}
	r.pos += copy(dst, r.buf[r.pos:])
}
