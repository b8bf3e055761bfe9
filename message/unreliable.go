package message

// unrelSend is an unreliable channel's queue of messages not yet sent:
// n messages from head, the first with id headID.
type unrelSend struct {
	lens   []uint32
	data   []byte
	max    int
	head   int
	n      int
	headID uint16
}

func (s *unrelSend) init(cfg *ChannelConfig) {
	s.lens = make([]uint32, cfg.SendQueueSize)
	s.max = cfg.MaxMessageSize
	s.data = make([]byte, cfg.SendQueueSize*s.max)
}

func (s *unrelSend) reset() { s.head, s.n, s.headID = 0, 0, 0 }

func (s *unrelSend) push(msg []byte) error {
	if s.n == len(s.lens) {
		return ErrQueueFull
	}
	i := (s.head + s.n) % len(s.lens)
	s.lens[i] = uint32(copy(s.data[i*s.max:], msg))
	s.n++
	return nil
}

// at returns the k-th queued message.
func (s *unrelSend) at(k int) []byte {
	i := (s.head + k) % len(s.lens)
	return s.data[i*s.max : i*s.max+int(s.lens[i])]
}

// drop removes the first k messages (sent).
func (s *unrelSend) drop(k int) {
	s.head = (s.head + k) % len(s.lens)
	s.n -= k
	s.headID += uint16(k)
}

// unrelRecv is an unreliable channel's queue of received messages.
type unrelRecv struct {
	lens      []uint32
	data      []byte
	max       int
	head      int
	n         int
	sequenced bool
	newest    uint16
	haveNew   bool
}

func (r *unrelRecv) init(cfg *ChannelConfig) {
	r.lens = make([]uint32, cfg.ReceiveQueueSize)
	r.max = cfg.MaxMessageSize
	r.data = make([]byte, cfg.ReceiveQueueSize*r.max)
	r.sequenced = cfg.Sequenced
}

func (r *unrelRecv) reset() { r.head, r.n, r.haveNew = 0, 0, false }

// store keeps msg of id; false means it was dropped (queue full, or older
// than the newest on a sequenced channel).
func (r *unrelRecv) store(id uint16, msg []byte) bool {
	if r.sequenced {
		if r.haveNew && !seqGreater(id, r.newest) {
			return false
		}
		r.newest, r.haveNew = id, true
	}
	if r.n == len(r.lens) {
		return false
	}
	i := (r.head + r.n) % len(r.lens)
	r.lens[i] = uint32(copy(r.data[i*r.max:], msg))
	r.n++
	return true
}

func (r *unrelRecv) pop() ([]byte, bool) {
	if r.n == 0 {
		return nil, false
	}
	i := r.head
	r.head = (r.head + 1) % len(r.lens)
	r.n--
	return r.data[i*r.max : i*r.max+int(r.lens[i])], true
}
