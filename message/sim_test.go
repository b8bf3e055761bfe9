package message

import (
	"encoding/binary"
	"errors"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/netcode-go/netcode/reliable"
)

// The simulated link: a deterministic model of a lossy network with
// jitter (hence reordering) and duplicates, on a fake clock, carrying the
// packets of a reliable.Endpoint on each side. Nothing in it allocates
// after setup, so the test can check that a whole run allocates nothing.

const (
	simTick     = 10 * time.Millisecond
	simInFlight = 1024
)

type linkConfig struct {
	loss, dup       float64
	latency, jitter time.Duration
}

type simPacket struct {
	due  time.Duration
	n    int
	live bool
	buf  [NetcodePayloadBytes]byte
}

// simLink carries datagrams one way.
type simLink struct {
	cfg      linkConfig
	rng      *rand.Rand
	slots    []simPacket
	overflow int
	scan     int
}

func newLink(cfg linkConfig, seed uint64) *simLink {
	return &simLink{cfg: cfg, rng: rand.New(rand.NewPCG(seed, 7)), slots: make([]simPacket, simInFlight)}
}

func (l *simLink) send(d []byte, now time.Duration) {
	if l.rng.Float64() < l.cfg.loss {
		return
	}
	copies := 1
	if l.rng.Float64() < l.cfg.dup {
		copies = 2
	}
	for range copies {
		i := l.free()
		if i < 0 {
			l.overflow++
			return
		}
		p := &l.slots[i]
		p.live, p.n = true, copy(p.buf[:], d)
		p.due = now + l.cfg.latency
		if l.cfg.jitter > 0 {
			p.due += time.Duration(l.rng.Int64N(int64(l.cfg.jitter)))
		}
	}
}

func (l *simLink) free() int {
	for i := range l.slots {
		if !l.slots[i].live {
			return i
		}
	}
	return -1
}

// next returns a datagram due by now; call until ok is false.
func (l *simLink) next(now time.Duration) (d []byte, ok bool) {
	for ; l.scan < len(l.slots); l.scan++ {
		if p := &l.slots[l.scan]; p.live && p.due <= now {
			p.live = false
			l.scan++
			return p.buf[:p.n], true
		}
	}
	l.scan = 0
	return nil, false
}

// traffic is what a peer's application sends per tick.
type traffic struct {
	ordered, unordered, unreliable int // messages per tick
	minSize, maxSize               int
	blocks                         bool
}

var blockSizes = [...]int{1, 2, 100, 511, 512, 513, 4096, 65536, DefaultMaxBlockSize}

// simPeer is one side: endpoint, Conn, and an application that sends
// numbered messages and checks what arrives.
type simPeer struct {
	t    testing.TB
	ep   *reliable.Endpoint
	conn *Conn
	rng  *rand.Rand
	tr   traffic
	buf  [NetcodePayloadBytes]byte
	dg   [NetcodePayloadBytes]byte
	msg  [DefaultMaxMessageSize]byte
	blk  []byte

	sent    [3]uint32 // next message number per channel
	blkSent int
	stopped bool

	// What arrived.
	nextOrdered uint32
	blkGot      int
	got         [3][]uint64 // bitsets of message numbers, channels 1, 2
	received    [3]int
	latency     [3][]time.Duration // when recording
	record      bool
}

func simConfig() Config {
	cfg := DefaultConfig()
	for i := range cfg.Channels {
		cfg.Channels[i].SendQueueSize = 1024
		cfg.Channels[i].ReceiveQueueSize = 1024
	}
	return cfg
}

func newPeer(t testing.TB, cfg Config, tr traffic, seed uint64) *simPeer {
	pool, err := reliable.NewPool(reliable.DefaultConfig(), 4, 4)
	if err != nil {
		t.Fatal(err)
	}
	ep, err := reliable.New(reliable.DefaultConfig(), pool)
	if err != nil {
		t.Fatal(err)
	}
	p := &simPeer{t: t, ep: ep, conn: mustNew(t, cfg), rng: rand.New(rand.NewPCG(seed, 1)), tr: tr,
		blk: make([]byte, DefaultMaxBlockSize)}
	for ch := range p.got {
		p.got[ch] = make([]uint64, 1<<14) // a million message numbers
		p.latency[ch] = make([]time.Duration, 0, 1<<17)
	}
	return p
}

// message writes message number k of channel ch, sent at now: number,
// time, then filler that depends on both.
func (p *simPeer) message(ch int, k uint32, now time.Duration) []byte {
	n := p.tr.minSize
	if p.tr.maxSize > n {
		n += p.rng.IntN(p.tr.maxSize - n + 1)
	}
	m := p.msg[:n]
	m[0] = 'm'
	binary.LittleEndian.PutUint32(m[1:], k)
	binary.LittleEndian.PutUint32(m[5:], uint32(now/time.Microsecond))
	for i := 9; i < n; i++ {
		m[i] = byte(k) + byte(i*31) + byte(ch)
	}
	return m
}

func blockByte(idx, i int) byte { return byte(idx*13 + i*7 + i>>9) }

// sendApp queues this tick's messages; a full queue is tried again next
// tick, as a game would.
func (p *simPeer) sendApp(now time.Duration) {
	for ch, rate := range [3]int{p.tr.ordered, p.tr.unordered, p.tr.unreliable} {
		for range rate {
			err := p.conn.Send(ch, p.message(ch, p.sent[ch], now))
			if errors.Is(err, ErrQueueFull) {
				break
			}
			if err != nil {
				p.t.Fatal(err)
			}
			p.sent[ch]++
		}
	}
	if p.tr.blocks && !p.conn.BlockInFlight(0) {
		size := blockSizes[p.blkSent%len(blockSizes)]
		b := p.blk[:size]
		b[0] = 'b'
		for i := 1; i < size; i++ {
			b[i] = blockByte(p.blkSent, i)
		}
		if err := p.conn.SendBlock(0, b); err == nil {
			p.blkSent++
		} else if !errors.Is(err, ErrQueueFull) {
			p.t.Fatal(err)
		}
	}
}

// tick runs the peer for one tick: receive what is due, read it out,
// send what is new, write one packet.
func (p *simPeer) tick(in, out *simLink, now time.Duration) {
	if p.stopped {
		for _, ok := in.next(now); ok; _, ok = in.next(now) {
		}
		return
	}
	p.ep.SetTime(now)
	for d, ok := in.next(now); ok; d, ok = in.next(now) {
		del, _ := p.ep.Receive(d)
		if del.Delivered {
			err := p.conn.ReadPacket(del.Sequence, del.Payload)
			if err != nil && !errors.Is(err, ErrDuplicate) {
				p.t.Fatalf("ReadPacket: %v", err)
			}
		}
		for _, a := range p.ep.Acks() {
			p.conn.Ack(a)
		}
		p.ep.ClearAcks()
	}
	p.readApp(now)
	if now%(100*time.Millisecond) == 0 {
		p.ep.Update(now)
		p.conn.SetRTT(time.Duration(p.ep.Stats().RTT * float32(time.Millisecond)))
	}
	p.sendApp(now)
	n := p.conn.WritePacket(p.buf[:], p.ep.NextSequence(), now)
	pk, err := p.ep.Send(p.buf[:n])
	if err != nil || pk.Datagrams() != 1 {
		p.t.Fatalf("reliable Send of %d bytes: %v, %d datagrams; want 1", n, err, pk.Datagrams())
	}
	m, _ := pk.WriteDatagram(0, p.dg[:])
	out.send(p.dg[:m], now)
}

func (p *simPeer) readApp(now time.Duration) {
	for ch := range 3 {
		for m, ok := p.conn.Receive(ch); ok; m, ok = p.conn.Receive(ch) {
			if ch == 0 && p.conn.LastWasBlock(0) {
				if m[0] != 'b' {
					p.t.Fatalf("a block that is not one: %x...", m[:min(len(m), 8)])
				}
				p.checkBlock(m)
				continue
			}
			if ch == 0 && m[0] == 'b' {
				p.t.Fatalf("a message taken for a block: %x", m)
			}
			p.checkMessage(ch, m, now)
		}
	}
}

func (p *simPeer) checkBlock(m []byte) {
	size := blockSizes[p.blkGot%len(blockSizes)]
	if len(m) != size {
		p.t.Fatalf("block %d: %d bytes; want %d", p.blkGot, len(m), size)
	}
	for i := 1; i < size; i++ {
		if m[i] != blockByte(p.blkGot, i) {
			p.t.Fatalf("block %d differs at byte %d", p.blkGot, i)
		}
	}
	p.blkGot++
}

func (p *simPeer) checkMessage(ch int, m []byte, now time.Duration) {
	if len(m) < 9 || m[0] != 'm' {
		p.t.Fatalf("channel %d: message %x is not one the peer sent", ch, m)
	}
	k := binary.LittleEndian.Uint32(m[1:])
	sentAt := time.Duration(binary.LittleEndian.Uint32(m[5:])) * time.Microsecond
	for i := 9; i < len(m); i++ {
		if m[i] != byte(k)+byte(i*31)+byte(ch) {
			p.t.Fatalf("channel %d message %d differs at byte %d", ch, k, i)
		}
	}
	if ch == 0 {
		if k != p.nextOrdered {
			p.t.Fatalf("ordered channel: message %d; want %d", k, p.nextOrdered)
		}
		p.nextOrdered++
	} else {
		w, bit := k/64, uint64(1)<<(k%64)
		if p.got[ch][w]&bit != 0 {
			p.t.Fatalf("channel %d: message %d delivered twice", ch, k)
		}
		p.got[ch][w] |= bit
	}
	p.received[ch]++
	if p.record && len(p.latency[ch]) < cap(p.latency[ch]) {
		p.latency[ch] = append(p.latency[ch], now-sentAt)
	}
}

// sim is two peers and the links between them.
type sim struct {
	a, b   *simPeer
	ab, ba *simLink
	now    time.Duration
}

func newSim(t testing.TB, cfg Config, link linkConfig, tr traffic, seed uint64) *sim {
	return &sim{
		a: newPeer(t, cfg, tr, seed), b: newPeer(t, cfg, tr, seed+1),
		ab: newLink(link, seed+2), ba: newLink(link, seed+3),
	}
}

func (s *sim) step() {
	s.now += simTick
	s.a.tick(s.ba, s.ab, s.now)
	s.b.tick(s.ab, s.ba, s.now)
}

// quiet stops the applications sending new messages.
func (s *sim) quiet() {
	for _, p := range [2]*simPeer{s.a, s.b} {
		p.tr.ordered, p.tr.unordered, p.tr.unreliable, p.tr.blocks = 0, 0, 0, false
	}
}

// delivered reports whether every reliable message and block p sent has
// reached q.
func delivered(p, q *simPeer) bool {
	return q.received[0] == int(p.sent[0]) && q.received[1] == int(p.sent[1]) && q.blkGot == p.blkSent
}

func idle(p *simPeer) bool {
	for ch := range 3 {
		if p.conn.Pending(ch) != 0 {
			return false
		}
	}
	return true
}

// startIDs starts every channel of both peers at message id id, as if
// that many messages had gone before.
func (s *sim) startIDs(id uint16) {
	for _, p := range [2]*simPeer{s.a, s.b} {
		for i := range p.conn.chans {
			ch := &p.conn.chans[i]
			ch.rs.oldest, ch.rs.next, ch.rs.unsent, ch.rs.credit = id, id, id, id
			ch.rr.base, ch.rr.creditAcked = id, id
			ch.us.headID = id
		}
	}
}
