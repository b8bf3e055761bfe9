package message

// msgQueue is a FIFO of messages, each copied into a fixed slot of up to
// max bytes: the unreliable channels' send and receive queues.
type msgQueue struct {
	lens    []uint32
	data    []byte
	max     int
	head, n int
}

func (q *msgQueue) init(size, max int) {
	q.lens = make([]uint32, size)
	q.max = max
	q.data = make([]byte, size*max)
}

func (q *msgQueue) reset() { q.head, q.n = 0, 0 }

// push copies msg in; false means the queue is full.
func (q *msgQueue) push(msg []byte) bool {
	if q.n == len(q.lens) {
		return false
	}
	i := (q.head + q.n) % len(q.lens)
	q.lens[i] = uint32(copy(q.data[i*q.max:], msg))
	q.n++
	return true
}

// at returns the k-th queued message.
func (q *msgQueue) at(k int) []byte {
	i := (q.head + k) % len(q.lens)
	return q.data[i*q.max : i*q.max+int(q.lens[i])]
}

// drop removes the first k messages.
func (q *msgQueue) drop(k int) {
	q.head = (q.head + k) % len(q.lens)
	q.n -= k
}

// unrelSend is an unreliable channel's queue of messages not yet sent,
// the first with id headID.
type unrelSend struct {
	msgQueue
	headID uint16
}

func (s *unrelSend) init(cfg *ChannelConfig) { s.msgQueue.init(cfg.SendQueueSize, cfg.MaxMessageSize) }

func (s *unrelSend) reset() { s.msgQueue.reset(); s.headID = 0 }

func (s *unrelSend) push(msg []byte) error {
	if !s.msgQueue.push(msg) {
		return ErrQueueFull
	}
	return nil
}

// drop removes the first k messages (sent).
func (s *unrelSend) drop(k int) {
	s.msgQueue.drop(k)
	s.headID += uint16(k)
}

// unrelRecv is an unreliable channel's queue of received messages.
type unrelRecv struct {
	msgQueue
	sequenced bool
	newest    uint16
	haveNew   bool
}

func (r *unrelRecv) init(cfg *ChannelConfig) {
	r.msgQueue.init(cfg.ReceiveQueueSize, cfg.MaxMessageSize)
	r.sequenced = cfg.Sequenced
}

func (r *unrelRecv) reset() { r.msgQueue.reset(); r.haveNew = false }

// store keeps msg of id; false means it was dropped (queue full, or older
// than the newest on a sequenced channel).
func (r *unrelRecv) store(id uint16, msg []byte) bool {
	if r.sequenced {
		if r.haveNew && !seqGreater(id, r.newest) {
			return false
		}
		r.newest, r.haveNew = id, true
	}
	return r.push(msg)
}

func (r *unrelRecv) pop() ([]byte, bool) {
	if r.n == 0 {
		return nil, false
	}
	msg := r.at(0)
	r.drop(1)
	return msg, true
}
