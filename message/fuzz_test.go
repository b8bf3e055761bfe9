package message

import (
	"encoding/binary"
	"errors"
	"testing"
	"time"
)

// FuzzReadPacket: any packet is read or refused whole, never a panic;
// what it stores is within the config.
func FuzzReadPacket(f *testing.F) {
	seeds := []string{
		"01", "01 0303 0a28010173 0002 05026869 0402796f",
		"01 0a000101 73 0001 0002 6869", "01 01 00 0a 01 00 00000000000000000000",
		"01 05 00", "01 8000", "02", "01 00 02 0000 0001",
	}
	for _, s := range seeds {
		f.Add(uint16(0), unhexF(s))
	}
	// Packets WritePacket writes, block fragments included.
	a := mustNew(f, fuzzConfig())
	_ = a.Send(0, []byte("ordered"))
	_ = a.Send(1, []byte("unordered"))
	_ = a.Send(2, []byte("unreliable"))
	_ = a.SendBlock(0, pattern(300, 1))
	var buf [512]byte
	for seq := range uint16(4) {
		n := a.WritePacket(buf[:], seq, 0)
		f.Add(seq, append([]byte(nil), buf[:n]...))
		a.Ack(seq)
	}
	cfg := fuzzConfig()
	f.Fuzz(func(t *testing.T, seq uint16, data []byte) {
		c := mustNew(t, cfg)
		err := c.ReadPacket(seq, data)
		if err != nil && !errors.Is(err, ErrMalformed) {
			t.Fatalf("ReadPacket: %v; want nil or ErrMalformed", err)
		}
		// Read, it is a duplicate after; refused, it is refused again.
		again := c.ReadPacket(seq, data)
		if (err == nil && !errors.Is(again, ErrDuplicate)) || (err != nil && !errors.Is(again, ErrMalformed)) {
			t.Fatalf("first read %v, second %v", err, again)
		}
		for ch := range cfg.Channels {
			max := cfg.Channels[ch].MaxMessageSize
			if cfg.Channels[ch].MaxBlockSize > 0 {
				max = cfg.Channels[ch].MaxBlockSize
			}
			for k := 0; k < 1000; k++ {
				m, ok := c.Receive(ch)
				if !ok {
					break
				}
				if len(m) > max {
					t.Fatalf("channel %d: %d-byte message; max %d", ch, len(m), max)
				}
			}
		}
		var out [512]byte
		c.WritePacket(out[:], 0, 0) // credits of what was read
	})
}

func unhexF(s string) []byte {
	var b []byte
	var hi byte
	half := false
	for i := 0; i < len(s); i++ {
		v := s[i]
		switch {
		case v >= '0' && v <= '9':
			v -= '0'
		case v >= 'a' && v <= 'f':
			v -= 'a' - 10
		default:
			continue
		}
		if half {
			b = append(b, hi<<4|v)
		}
		hi, half = v, !half
	}
	return b
}

// fuzzConfig is small, so that queues fill, windows wrap and records are
// overwritten within a short schedule.
func fuzzConfig() Config {
	return Config{
		PacketBudget: 200,
		SentPackets:  16,
		Channels: []ChannelConfig{
			{Kind: ReliableOrdered, MaxMessageSize: 32, SendQueueSize: 12, ReceiveQueueSize: 8, MaxBlockSize: 1000, BlockFragmentSize: 64, Priority: 1},
			{Kind: ReliableUnordered, MaxMessageSize: 32, SendQueueSize: 8, ReceiveQueueSize: 8, PacketBudget: 80},
			{Kind: Unreliable, MaxMessageSize: 32, SendQueueSize: 8, ReceiveQueueSize: 4, Sequenced: true},
		},
	}
}

// FuzzSchedule drives two Conns by a random schedule of sends, packets,
// losses, duplicates, reordering, acks and time against a model of what
// must arrive; then a lossless drain must deliver every reliable message
// and block exactly once (in order on channel 0), and no unreliable
// message may have arrived twice or out of order (channel 2 is
// sequenced).
func FuzzSchedule(f *testing.F) {
	f.Add([]byte{0, 0, 4, 5, 0, 1, 6, 0, 9})
	f.Add([]byte{3, 200, 0, 1, 2, 4, 4, 4, 5, 1, 5, 0, 7, 8, 50, 6, 1, 6, 0, 9, 4, 5, 0})
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 4, 4, 5, 3, 5, 2, 5, 1, 5, 0, 6, 3, 6, 2, 8, 200, 4, 7, 9, 1, 1, 2, 2})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) > 4000 {
			return
		}
		runSchedule(t, ops)
	})
}

type inflight struct {
	seq  uint16
	data []byte
}

type scheduleModel struct {
	t        *testing.T
	a, b     *Conn
	now      time.Duration
	seqA     uint16
	seqB     uint16
	wire     []inflight // a to b, in flight
	acks     []uint16   // acks b owes a
	sent     [3]uint32
	blocks   uint32
	order    []uint32 // channel 0 items in send order: message k or block 1<<31|k
	gotOrder int
	gotSet   [2]map[uint32]bool // channels 1 and 2
	newest   int64              // channel 2
}

func runSchedule(t *testing.T, ops []byte) {
	m := &scheduleModel{t: t, a: mustNew(t, fuzzConfig()), b: mustNew(t, fuzzConfig()), newest: -1,
		gotSet: [2]map[uint32]bool{{}, {}}}
	arg := func(i *int) byte {
		*i++
		if *i < len(ops) {
			return ops[*i]
		}
		return 0
	}
	for i := 0; i < len(ops); i++ {
		switch ops[i] % 10 {
		case 0, 1, 2:
			m.send(int(ops[i] % 10))
		case 3:
			m.sendBlock(1 + int(arg(&i))*999/255)
		case 4:
			m.writeA()
		case 5: // deliver packet k; bit 0: keep a copy (duplicate); bit 1: lose the ack
			k, fl := int(arg(&i)), arg(&i)
			m.deliver(k, fl&1 != 0, fl&2 != 0)
		case 6: // deliver the ack k (reordered), or lose it (bit 7)
			k := int(arg(&i))
			if len(m.acks) > 0 {
				k %= len(m.acks)
				if k&0x80 == 0 {
					m.a.Ack(m.acks[k])
				}
				m.acks = append(m.acks[:k], m.acks[k+1:]...)
			}
		case 7:
			m.writeB(arg(&i)&1 == 0)
		case 8:
			m.now += time.Duration(arg(&i)) * time.Millisecond
		case 9:
			m.drain()
		}
	}
	// Lossless from here: everything must get through.
	for r := 0; r < 400 && !m.done(); r++ {
		m.now += 50 * time.Millisecond
		m.writeA()
		m.deliver(len(m.wire)-1, false, false)
		for _, s := range m.acks {
			m.a.Ack(s)
		}
		m.acks = m.acks[:0]
		m.writeB(true)
		m.drain()
	}
	if !m.done() {
		t.Fatalf("not delivered after a lossless drain: channel 0 %d/%d, channel 1 %d/%d; pending %d %d",
			m.gotOrder, len(m.order), len(m.gotSet[0]), m.sent[1], m.a.Pending(0), m.a.Pending(1))
	}
}

func (m *scheduleModel) done() bool {
	return m.gotOrder == len(m.order) && len(m.gotSet[0]) == int(m.sent[1]) && m.a.Pending(0) == 0 && m.a.Pending(1) == 0
}

func (m *scheduleModel) send(ch int) {
	var msg [8]byte
	binary.LittleEndian.PutUint32(msg[:], m.sent[ch])
	err := m.a.Send(ch, msg[:4+int(m.sent[ch]%5)])
	if errors.Is(err, ErrQueueFull) {
		return
	}
	if err != nil {
		m.t.Fatal(err)
	}
	if ch == 0 {
		m.order = append(m.order, m.sent[0])
	}
	m.sent[ch]++
}

func (m *scheduleModel) sendBlock(size int) {
	blk := pattern(size, byte(m.blocks))
	stamp(blk, m.blocks)
	err := m.a.SendBlock(0, blk)
	if errors.Is(err, ErrQueueFull) || errors.Is(err, ErrBlockBusy) {
		return
	}
	if err != nil {
		m.t.Fatal(err)
	}
	m.order = append(m.order, 1<<31|m.blocks|uint32(size)<<16)
	m.blocks++
}

func (m *scheduleModel) writeA() {
	var buf [200]byte
	n := m.a.WritePacket(buf[:], m.seqA, m.now)
	m.wire = append(m.wire, inflight{m.seqA, append([]byte(nil), buf[:n]...)})
	m.seqA++
}

func (m *scheduleModel) deliver(k int, dup, loseAck bool) {
	if len(m.wire) == 0 || k < 0 {
		return
	}
	k %= len(m.wire)
	p := m.wire[k]
	if !dup {
		m.wire = append(m.wire[:k], m.wire[k+1:]...)
	}
	err := m.b.ReadPacket(p.seq, p.data)
	switch {
	case err == nil || errors.Is(err, ErrDuplicate):
		if !loseAck { // the packet layer acks what it took
			m.acks = append(m.acks, p.seq)
		}
	default:
		m.t.Fatalf("packet %d: %v", p.seq, err)
	}
}

// writeB sends b's packet (credits) to a, delivered or lost; a lost one
// is not acked.
func (m *scheduleModel) writeB(arrive bool) {
	var buf [200]byte
	n := m.b.WritePacket(buf[:], m.seqB, m.now)
	if arrive {
		if err := m.a.ReadPacket(m.seqB, buf[:n]); err != nil {
			m.t.Fatalf("b's packet: %v", err)
		}
		m.b.Ack(m.seqB)
	}
	m.seqB++
}

func (m *scheduleModel) drain() {
	for {
		msg, ok := m.b.Receive(0)
		if !ok {
			break
		}
		if m.gotOrder >= len(m.order) {
			m.t.Fatalf("channel 0: extra message %x", msg)
		}
		want := m.order[m.gotOrder]
		if want&(1<<31) != 0 {
			size := int(want >> 16 & 0x7fff)
			idx := want & 0xffff
			exp := pattern(size, byte(idx))
			stamp(exp, idx)
			if string(msg) != string(exp) {
				m.t.Fatalf("channel 0 item %d: block of %d bytes differs from block %d of %d", m.gotOrder, len(msg), idx, size)
			}
		} else if len(msg) < 4 || binary.LittleEndian.Uint32(msg) != want {
			m.t.Fatalf("channel 0 item %d: %x; want message %d", m.gotOrder, msg, want)
		}
		m.gotOrder++
	}
	for ch := 1; ch <= 2; ch++ {
		for msg, ok := m.b.Receive(ch); ok; msg, ok = m.b.Receive(ch) {
			k := binary.LittleEndian.Uint32(msg)
			if m.gotSet[ch-1][k] || k >= m.sent[ch] {
				m.t.Fatalf("channel %d: message %d twice, or never sent", ch, k)
			}
			m.gotSet[ch-1][k] = true
			if ch == 2 {
				if int64(k) <= m.newest {
					m.t.Fatalf("sequenced channel: message %d after %d", k, m.newest)
				}
				m.newest = int64(k)
			}
		}
	}
}

// stamp writes a block's number over its first bytes (as many as fit).
func stamp(blk []byte, idx uint32) {
	var n [4]byte
	binary.LittleEndian.PutUint32(n[:], 1<<31|idx)
	copy(blk, n[:])
}
