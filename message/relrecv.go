package message

// recvSlot is a received reliable message, at index id % size.
type recvSlot struct {
	n     uint32
	id    uint16
	state uint8
	block bool
}

const (
	recvEmpty uint8 = iota
	recvHeld        // received, not yet read
	recvRead        // read out of order (unordered channels)
)

// relRecv is a reliable channel's receive side: the window of ids from
// base (the first not yet read) to base + ReceiveQueueSize.
type relRecv struct {
	slots   []recvSlot
	data    []byte // slot i's message at data[i*max:]
	max     int
	base    uint16
	ordered bool
	// ready lists the held ids of an unordered channel in arrival order.
	ready       []uint16
	readyHead   int
	readyN      int
	creditAcked uint16 // the newest credit the peer is known to have
	lastBlock   bool   // the last message pop returned was a block
	blk         blockRecv
}

func (r *relRecv) init(cfg *ChannelConfig) {
	r.slots = make([]recvSlot, cfg.ReceiveQueueSize)
	r.max = cfg.MaxMessageSize
	r.data = make([]byte, cfg.ReceiveQueueSize*r.max)
	r.ordered = cfg.Kind == ReliableOrdered
	if !r.ordered {
		r.ready = make([]uint16, cfg.ReceiveQueueSize)
	}
	if cfg.MaxBlockSize > 0 {
		r.blk.init(cfg)
	}
}

func (r *relRecv) reset() {
	clear(r.slots)
	r.base, r.readyHead, r.readyN, r.creditAcked = 0, 0, 0, 0
	r.blk.reset()
}

func (r *relRecv) slot(id uint16) *recvSlot { return &r.slots[int(id)%len(r.slots)] }

// inWindow reports whether id is one the peer may send now.
func (r *relRecv) inWindow(id uint16) bool {
	return !seqLess(id, r.base) && int(id-r.base) < len(r.slots)
}

// seen reports whether id was received already (read or held).
func (r *relRecv) seen(id uint16) bool {
	if seqLess(id, r.base) {
		return true
	}
	sl := r.slot(id)
	return sl.state != recvEmpty && sl.id == id
}

// store keeps a new message; the caller checked inWindow and !seen.
func (r *relRecv) store(id uint16, msg []byte) {
	i := int(id) % len(r.slots)
	copy(r.data[i*r.max:], msg)
	r.slots[i] = recvSlot{n: uint32(len(msg)), id: id, state: recvHeld}
	r.held(id)
}

// held queues id for an unordered channel's Receive.
func (r *relRecv) held(id uint16) {
	if r.ordered {
		return
	}
	// Never full: at most one entry per slot in the window.
	r.ready[(r.readyHead+r.readyN)%len(r.ready)] = id
	r.readyN++
}

func (r *relRecv) pop() ([]byte, bool) {
	var id uint16
	if r.ordered {
		id = r.base
		if sl := r.slot(id); sl.state != recvHeld || sl.id != id {
			return nil, false
		}
	} else {
		if r.readyN == 0 {
			return nil, false
		}
		id = r.ready[r.readyHead]
		r.readyHead = (r.readyHead + 1) % len(r.ready)
		r.readyN--
	}
	i := int(id) % len(r.slots)
	sl := &r.slots[i]
	var msg []byte
	r.lastBlock = sl.block
	if sl.block {
		msg = r.blk.take(sl.n)
	} else {
		msg = r.data[i*r.max : i*r.max+int(sl.n)]
	}
	sl.state = recvRead
	for {
		b := r.slot(r.base)
		if b.state != recvRead || b.id != r.base {
			break
		}
		b.state = recvEmpty
		r.base++
	}
	return msg, true
}

// blockRecv reassembles the one block a channel takes at a time.
type blockRecv struct {
	data     []byte // MaxBlockSize
	fragSize int
	got      []bool
	gotN     int
	frags    int
	size     int
	id       uint16
	busy     bool // assembling, or whole and not yet read
}

func (b *blockRecv) init(cfg *ChannelConfig) {
	b.data = make([]byte, cfg.MaxBlockSize)
	b.fragSize = cfg.BlockFragmentSize
	b.got = make([]bool, fragmentsOf(cfg.MaxBlockSize, cfg.BlockFragmentSize))
}

func (b *blockRecv) reset() { b.busy = false }

// take hands out the whole block and frees the buffer for the next.
func (b *blockRecv) take(n uint32) []byte {
	b.busy = false
	return b.data[:n]
}

// fragment stores fragment i of block id of size bytes (checked against
// the config by the reader) and reports whether the block is now whole.
// ok is false when the buffer holds another block: a peer outside the
// protocol.
func (b *blockRecv) fragment(id uint16, size, i int, frag []byte) (whole, ok bool) {
	if !b.busy {
		b.busy, b.id, b.size = true, id, size
		b.frags = fragmentsOf(size, b.fragSize)
		clear(b.got[:b.frags])
		b.gotN = 0
	}
	if b.id != id || b.size != size {
		return false, false
	}
	if b.got[i] {
		return false, true
	}
	b.got[i] = true
	b.gotN++
	copy(b.data[i*b.fragSize:], frag)
	return b.gotN == b.frags, true
}
