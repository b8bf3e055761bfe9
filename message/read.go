package message

import (
	"errors"
	"fmt"
)

// ReadPacket reads the messages of packet seq (the packet layer's
// sequence), storing the new ones for Receive and taking the peer's
// credits. A packet read before returns ErrDuplicate and is ignored; a
// packet outside PROTOCOL.md, or beyond this Conn's config, returns an
// error wrapping ErrMalformed and nothing of it is applied. A packet
// older than the last 256 is read but for its unreliable messages (see
// Stats.StalePackets).
func (c *Conn) ReadPacket(seq uint16, data []byte) error {
	err := c.window.check(seq)
	if errors.Is(err, ErrDuplicate) {
		c.stats.DuplicatePackets++
		return err
	}
	stale := err != nil
	if err := c.parse(data, false, false); err != nil {
		c.stats.MalformedPackets++
		return err
	}
	if stale {
		c.stats.StalePackets++
	} else {
		c.window.mark(seq)
	}
	c.stats.PacketsRead++
	_ = c.parse(data, true, !stale) // checked above
	return nil
}

// reader walks a packet.
type reader struct {
	p   []byte
	i   int
	err error
}

// varint reads a varint of at most max; a failure sticks.
func (r *reader) varint(what string, lo, hi uint32) uint32 {
	if r.err != nil {
		return 0
	}
	v, n := readVarint(r.p[r.i:])
	if n == 0 {
		r.err = fmt.Errorf("%w: %s at byte %d: not a canonical varint of up to 32 bits", ErrMalformed, what, r.i)
		return 0
	}
	if v < lo || v > hi {
		r.err = fmt.Errorf("%w: %s at byte %d is %d; want %d to %d", ErrMalformed, what, r.i, v, lo, hi)
		return 0
	}
	r.i += n
	return v
}

func (r *reader) bytes(what string, n int) []byte {
	if r.err != nil {
		return nil
	}
	if len(r.p)-r.i < n {
		r.err = fmt.Errorf("%w: %s at byte %d: %d bytes; %d left", ErrMalformed, what, r.i, n, len(r.p)-r.i)
		return nil
	}
	b := r.p[r.i : r.i+n]
	r.i += n
	return b
}

// parse checks a packet (apply false) or applies a checked one, with or
// without its unreliable messages.
func (c *Conn) parse(data []byte, apply, unreliable bool) error {
	if len(data) < 1 || data[0] != Version {
		if len(data) < 1 {
			return fmt.Errorf("%w: empty; want the version byte %d first", ErrMalformed, Version)
		}
		return fmt.Errorf("%w: version %d; want %d", ErrMalformed, data[0], Version)
	}
	r := reader{p: data, i: 1}
	for r.err == nil && r.i < len(data) {
		tag := r.varint("section tag", 0, uint32(len(c.chans)<<2-1))
		if r.err != nil {
			break
		}
		i, typ := int(tag>>2), tag&3
		ch := &c.chans[i]
		kind := ch.cfg.Kind
		switch {
		case typ == secUnreliable && kind != Unreliable,
			(typ == secMessages || typ == secCredit) && !kind.reliable(),
			typ == secFragments && ch.cfg.MaxBlockSize == 0:
			return fmt.Errorf("%w: section type %d on channel %d (%v, blocks up to %d bytes)", ErrMalformed, typ, i, kind, ch.cfg.MaxBlockSize)
		}
		switch typ {
		case secMessages:
			c.readMessages(&r, ch, apply)
		case secFragments:
			c.readFragments(&r, ch, apply)
		case secUnreliable:
			c.readUnreliable(&r, ch, apply, unreliable)
		case secCredit:
			v := r.varint("credit", 0, 0xffff)
			if apply {
				ch.rs.setCredit(uint16(v))
			}
		}
	}
	return r.err
}

func (c *Conn) readMessages(r *reader, ch *channel, apply bool) {
	// Not bounded by ReceiveQueueSize: ids the receiver has read count
	// against the sender's window only once their acks arrive.
	count := r.varint("message count", 1, maxSectionCount)
	var id uint16
	for k := uint32(0); k < count && r.err == nil; k++ {
		if k == 0 {
			id = uint16(r.varint("message id", 0, 0xffff))
		} else {
			id += uint16(unzigzag(uint16(r.varint("message id delta", 1, 0xffff))))
		}
		n := r.varint("message length", 0, uint32(ch.cfg.MaxMessageSize))
		msg := r.bytes("message", int(n))
		if apply && r.err == nil {
			c.receiveReliable(ch, id, msg)
		}
	}
}

func (c *Conn) receiveReliable(ch *channel, id uint16, msg []byte) {
	rr := &ch.rr
	switch {
	case rr.seen(id):
		c.stats.DuplicateMessages++
	case !rr.inWindow(id):
		c.stats.Refused++
	default:
		rr.store(id, msg)
		c.stats.MessagesReceived++
	}
}

func (c *Conn) readFragments(r *reader, ch *channel, apply bool) {
	id := uint16(r.varint("block id", 0, 0xffff))
	size := int(r.varint("block size", 1, uint32(ch.cfg.MaxBlockSize)))
	fs := ch.cfg.BlockFragmentSize
	frags := fragmentsOf(size, fs)
	count := r.varint("fragment count", 1, uint32(frags))
	for k := uint32(0); k < count && r.err == nil; k++ {
		f := int(r.varint("fragment index", 0, uint32(frags-1)))
		data := r.bytes("fragment", min(fs, size-f*fs))
		if !apply || r.err != nil {
			continue
		}
		rr := &ch.rr
		switch {
		case rr.seen(id):
			c.stats.DuplicateMessages++
		case !rr.inWindow(id):
			c.stats.Refused++
		default:
			whole, ok := rr.blk.fragment(id, size, f, data)
			if !ok {
				c.stats.Refused++
			} else if whole {
				*rr.slot(id) = recvSlot{n: uint32(size), id: id, state: recvHeld, block: true}
				rr.held(id)
				c.stats.BlocksReceived++
				c.stats.MessagesReceived++
			}
		}
	}
}

func (c *Conn) readUnreliable(r *reader, ch *channel, apply, keep bool) {
	id := uint16(r.varint("message id", 0, 0xffff))
	count := r.varint("message count", 1, maxSectionCount)
	for k := uint32(0); k < count && r.err == nil; k++ {
		n := r.varint("message length", 0, uint32(ch.cfg.MaxMessageSize))
		msg := r.bytes("message", int(n))
		if apply && r.err == nil {
			if keep && ch.ur.store(id, msg) {
				c.stats.MessagesReceived++
			} else {
				c.stats.UnreliableDropped++
			}
		}
		id++
	}
}
