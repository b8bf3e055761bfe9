package reliable

import "time"

// Endpoint is one end of a reliable 1.0 connection: it numbers and records
// the packets it sends, records and acks the packets it receives,
// fragments and reassembles, and estimates RTT, jitter, loss and bandwidth.
//
// An Endpoint is not safe for concurrent use: it belongs to one goroutine
// (the owner of the connection's slot), as does the Pool it draws from.
// Reset it before dropping it or reusing it for another connection: the
// pool buffers it holds only go back to a shared Pool that way.
type Endpoint struct {
	cfg  Config
	pool *Pool

	// now is the time given to the last Update, in seconds (float64, as the
	// C library keeps it, so the estimates round as it does).
	now      float64
	sequence uint16
	acks     []uint16 // capacity AckBufferSize

	sent     seqBuffer
	sentData []sentRecord
	recv     seqBuffer
	recvData []recvRecord
	frag     seqBuffer
	fragData []reassembly

	rttHistory []float32
	// rttHistoryChanged says a sample arrived since the last Update;
	// rttSnapshot is the history at the last Update that saw a change,
	// and rttStatsStale says Stats has not yet computed its figures.
	rttHistoryChanged bool
	rttSnapshot       []float32
	rttStatsStale     bool
	stats             Stats
	counters          Counters
	drops             [NumDropReasons]uint64

	// pending is the packet the last Receive delivered, recorded (acked,
	// its acks processed) by the next call of any other method unless
	// Refuse comes first.
	pending pendingPacket
	// delivered is the pool buffer a reassembled Delivery aliases, or -1.
	delivered int32
	// held is the number of pool buffers the endpoint holds.
	held int
	// releaseSlot is e.releaseReassembly, bound once so that passing it
	// does not allocate.
	releaseSlot func(int)
}

type sentRecord struct {
	time  float64
	bytes uint32
	acked bool
}

type recvRecord struct {
	time  float64
	bytes uint32
}

type pendingPacket struct {
	valid         bool
	header        Header
	datagramBytes int // the whole packet, header included
}

// New returns an endpoint for cfg at time 0 (call Update with the current
// time before sending). Its reassembly buffers come from pool; a nil pool
// gives it a private one with a buffer for every reassembly slot, which
// behaves exactly like the C library (never DropReassemblyPoolExhausted)
// but costs Config.FragmentReassemblyBufferSize x
// Config.ReassemblyBufferBytes (1 MiB by default).
func New(cfg Config, pool *Pool) (*Endpoint, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if pool == nil {
		p, err := NewPool(cfg, cfg.FragmentReassemblyBufferSize, cfg.FragmentReassemblyBufferSize)
		if err != nil {
			return nil, err
		}
		pool = p
	} else if pool.bufferBytes < cfg.ReassemblyBufferBytes() {
		return nil, errPoolBuffers(pool.bufferBytes, cfg.ReassemblyBufferBytes())
	}
	e := &Endpoint{
		cfg:         cfg,
		pool:        pool,
		acks:        make([]uint16, 0, cfg.AckBufferSize),
		sent:        newSeqBuffer(cfg.SentPacketsBufferSize),
		sentData:    make([]sentRecord, cfg.SentPacketsBufferSize),
		recv:        newSeqBuffer(cfg.ReceivedPacketsBufferSize),
		recvData:    make([]recvRecord, cfg.ReceivedPacketsBufferSize),
		frag:        newSeqBuffer(cfg.FragmentReassemblyBufferSize),
		fragData:    make([]reassembly, cfg.FragmentReassemblyBufferSize),
		rttHistory:  make([]float32, cfg.RTTHistorySize),
		rttSnapshot: make([]float32, cfg.RTTHistorySize),
		delivered:   -1,
	}
	for i := range e.fragData {
		e.fragData[i].buf = -1
	}
	for i := range e.rttHistory {
		e.rttHistory[i] = -1
	}
	e.releaseSlot = e.releaseReassembly
	return e, nil
}

// Config returns the endpoint's configuration.
func (e *Endpoint) Config() Config { return e.cfg }

// NextSequence returns the sequence the next Send will use.
func (e *Endpoint) NextSequence() uint16 { return e.sequence }

// Send records a packet and returns it for the caller to write out (see
// Packet). It uses one sequence. A payload longer than MaxPacketSize (or
// needing more than MaxFragments fragments) is refused with
// ErrPacketTooLarge and counted; it uses no sequence. An empty payload is
// a header-only packet (it still carries acks).
func (e *Endpoint) Send(payload []byte) (Packet, error) {
	e.commit()
	n := len(payload)
	fragments := 0
	if n > e.cfg.FragmentAbove {
		fragments = (n + e.cfg.FragmentSize - 1) / e.cfg.FragmentSize
	}
	if n > e.cfg.MaxPacketSize || fragments > e.cfg.MaxFragments {
		e.counters[PacketsTooLargeToSend]++
		return Packet{}, ErrPacketTooLarge
	}
	seq := e.sequence
	e.sequence++
	i := e.sent.insert(seq)
	if i >= 0 { // always: the window's newest sequence is seq - 1
		e.sentData[i] = sentRecord{time: e.now, bytes: uint32(e.cfg.PacketHeaderSize + n)}
	}
	p := Packet{
		payload:      payload,
		sequence:     seq,
		fragments:    uint16(fragments),
		fragmentSize: e.cfg.FragmentSize,
	}
	p.headerLen = uint8(WriteHeader(p.header[:], e.ackHeader(seq)))
	e.counters[FragmentsSent] += uint64(fragments)
	e.counters[PacketsSent]++
	return p, nil
}

// Refuse tells the endpoint that the application did not accept the packet
// the last Receive delivered (the C library's process callback returning
// 0): it is not recorded as received, so it is never acked and its header's
// acks are not processed. Receive accepts by default: Refuse must come
// right after that Receive, before any other method of the endpoint, or it
// does nothing. It reports whether there was a packet to refuse.
func (e *Endpoint) Refuse() bool {
	if !e.pending.valid {
		return false
	}
	e.pending.valid = false
	return true
}

// Acks returns the sequences of sent packets acked since the last
// ClearAcks, in the order their acks arrived (within one received packet,
// newest first). At most AckBufferSize are kept; later acks wait (the
// packets stay unacked and are acked by a later packet) until ClearAcks.
// The slice is the endpoint's and is valid until the next call.
func (e *Endpoint) Acks() []uint16 {
	e.commit()
	return e.acks
}

// ClearAcks empties the acks list.
func (e *Endpoint) ClearAcks() {
	e.commit()
	e.acks = e.acks[:0]
}

// Counters returns the endpoint's counters.
func (e *Endpoint) Counters() Counters {
	e.commit()
	return e.counters
}

// Drops returns the datagrams Receive refused, by reason; the DropNone
// entry counts those it took (delivered or stored).
func (e *Endpoint) Drops() [NumDropReasons]uint64 {
	e.commit()
	return e.drops
}

// Update sets the endpoint's clock (used to time sends and receives) and
// recomputes the estimates Stats returns; call it once per tick. now is the
// time since any fixed epoch (e.g. the engine's start).
func (e *Endpoint) Update(now time.Duration) { e.UpdateSeconds(now.Seconds()) }

// Reset returns the endpoint to its state at New, for a new connection:
// sequences, acks, counters, drops and the three packet buffers are
// cleared and its pool buffers returned. As in the C library, the clock,
// the RTT history and the estimates survive.
func (e *Endpoint) Reset() {
	e.commit()
	e.releaseDelivered()
	for i := range e.fragData {
		e.releaseReassembly(i)
	}
	e.sequence = 0
	e.acks = e.acks[:0]
	e.counters = Counters{}
	e.drops = [NumDropReasons]uint64{}
	e.sent.reset()
	e.recv.reset()
	e.frag.reset()
}

// PoolBuffers returns the number of pool buffers the endpoint holds.
func (e *Endpoint) PoolBuffers() int { return e.held }
