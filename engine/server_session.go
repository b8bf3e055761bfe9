package engine

import (
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/ring"
)

// slot is one client slot. Everything in it is allocated when the server is
// created; connecting a client only fills it in (and hands it the session
// keys the handshake created).
type slot struct {
	connected bool
	loopback  bool
	// confirmed is set by the first keep-alive or payload from the client;
	// until then every payload sent is preceded by a keep-alive.
	confirmed bool

	sock     int // index of the conn the client talks to
	addr     netip.AddrPort
	clientID uint64
	userData [codec.UserDataBytes]byte

	sendKey, recvKey *aead.PacketKey
	sequence         uint64 // next sequence sent with sendKey
	timeout          time.Duration
	hasTimeout       bool // false for a negative token timeout (development)

	lastSend, lastRecv time.Time
	// gen counts the connections the slot has held, so that work queued for
	// an earlier connection (a send from the application) is not applied to
	// a later one.
	gen uint32

	replay ring.Replay
	queue  ring.Queue[rxEntry]
}

// rxEntry is a queued payload: a buffer of the server's pool.
type rxEntry struct {
	seq uint64
	buf int32
	n   int32
}

// partition keeps slot indices split into an active prefix items[:n] and a
// free suffix, so that timers visit only connected slots, a free slot is
// found in O(1), and a given slot can be taken (loopback) or freed in O(1).
type partition struct {
	items []int32 // a permutation of 0..len-1
	pos   []int32 // pos[i] is the position of i in items
	n     int
}

func (p *partition) init(size int) {
	p.items = make([]int32, size)
	p.pos = make([]int32, size)
	for i := range size {
		p.items[i] = int32(i)
		p.pos[i] = int32(i)
	}
	p.n = 0
}

func (p *partition) full() bool { return p.n == len(p.items) }

func (p *partition) swap(a, b int) {
	ia, ib := p.items[a], p.items[b]
	p.items[a], p.items[b] = ib, ia
	p.pos[ib], p.pos[ia] = int32(a), int32(b)
}

// take moves free index i to the active set.
func (p *partition) take(i int) {
	p.swap(int(p.pos[i]), p.n)
	p.n++
}

// takeAny moves some free index to the active set and returns it; the
// caller checks full first.
func (p *partition) takeAny() int {
	i := int(p.items[p.n])
	p.n++
	return i
}

// release moves active index i to the free set.
func (p *partition) release(i int) {
	p.n--
	p.swap(int(p.pos[i]), p.n)
}

// sendKeepAlive queues a keep-alive to slot i.
func (s *Server) sendKeepAlive(i int) {
	sl := &s.slots[i]
	buf := s.outBuf(sl.sock)
	n, err := codec.WriteKeepAlivePacket(buf, sl.sequence, uint32(i), uint32(len(s.slots)), sl.sendKey)
	if err != nil { // cannot happen: the buffer and key are the server's own
		s.stats.SendFailures++
		return
	}
	sl.sequence++
	sl.lastSend = s.now
	s.commit(sl.sock, n, sl.addr)
}

// sendDisconnects queues NumDisconnectPackets disconnect packets to slot i;
// the client may lose some of them.
func (s *Server) sendDisconnects(i int) {
	sl := &s.slots[i]
	for range NumDisconnectPackets {
		buf := s.outBuf(sl.sock)
		n, err := codec.WriteDisconnectPacket(buf, sl.sequence, sl.sendKey)
		if err != nil {
			s.stats.SendFailures++
			return
		}
		sl.sequence++
		s.commit(sl.sock, n, sl.addr)
	}
	sl.lastSend = s.now
}

// sendKeepAlives sends a keep-alive to every network client that has been
// sent nothing for the keep-alive interval.
func (s *Server) sendKeepAlives(now time.Time) {
	for _, i := range s.active.items[:s.active.n] {
		sl := &s.slots[i]
		if sl.loopback || now.Before(sl.lastSend.Add(s.cfg.KeepAliveInterval)) {
			continue
		}
		s.sendKeepAlive(int(i))
	}
}

// checkTimeouts resets the slots of network clients that sent nothing
// within their token's timeout.
func (s *Server) checkTimeouts(now time.Time) {
	for k := s.active.n - 1; k >= 0; k-- {
		if k >= s.active.n {
			continue // a callback disconnected more than one client
		}
		i := int(s.active.items[k])
		sl := &s.slots[i]
		if sl.loopback || !sl.hasTimeout || now.Before(sl.lastRecv.Add(sl.timeout)) {
			continue
		}
		s.stats.Timeouts++
		s.resetSlot(i, DisconnectTimedOut)
	}
}

// enqueue copies a received payload into a pool buffer on slot i's queue.
func (s *Server) enqueue(sl *slot, payload []byte, seq uint64) bool {
	if sl.queue.Len() == sl.queue.Cap() {
		s.stats.Drops[ServerDropQueueFull]++
		return false
	}
	if len(s.freeBufs) == 0 {
		s.stats.Drops[ServerDropPoolEmpty]++
		return false
	}
	b := s.freeBufs[len(s.freeBufs)-1]
	s.freeBufs = s.freeBufs[:len(s.freeBufs)-1]
	off := int(b) * codec.MaxPayloadBytes
	n := copy(s.pool[off:off+codec.MaxPayloadBytes], payload)
	sl.queue.Push(rxEntry{seq: seq, buf: b, n: int32(n)})
	return true
}

// occupy fills slot i, already claimed from the admission state, and adds
// it to this server's active set.
func (s *Server) occupy(i int, clientID uint64, userData *[codec.UserDataBytes]byte) {
	sl := &s.slots[i]
	s.active.take(i)
	sl.connected = true
	sl.clientID = clientID
	sl.userData = *userData
	sl.lastRecv = s.now
	sl.lastSend = s.now
	sl.replay.Reset()
	sl.gen++
	s.stats.Connects++
}

// resetSlot empties slot i and calls OnDisconnect. It sends nothing.
func (s *Server) resetSlot(i int, reason DisconnectReason) {
	sl := &s.slots[i]
	if !sl.connected {
		return
	}
	if !sl.loopback {
		s.byAddr.del(sl.addr)
	}
	for {
		e, ok := sl.queue.Pop()
		if !ok {
			break
		}
		s.freeBufs = append(s.freeBufs, e.buf)
	}
	s.active.release(i)
	addr, id, loop := sl.addr, sl.clientID, sl.loopback
	queue, gen := sl.queue, sl.gen
	*sl = slot{queue: queue, replay: sl.replay, gen: gen}
	sl.replay.Reset()

	s.log.Info("netcode client disconnected", slog.Int("client_index", i),
		slog.Uint64("client_id", id), slog.String("address", addrString(addr, loop)),
		slog.String("reason", reason.String()))
	if s.cfg.OnDisconnect != nil {
		s.cfg.OnDisconnect(i, reason)
	}
	// Free the slot last: another shard may take it at once, and until then
	// this server (and its OnDisconnect) may still read it.
	s.adm.release(i, id)
}

func addrString(a netip.AddrPort, loopback bool) string {
	if loopback {
		return "loopback"
	}
	return a.String()
}

// DisconnectClient sends the client NumDisconnectPackets disconnect packets
// and resets its slot (OnDisconnect with DisconnectServerKicked). Loopback
// clients are disconnected with DisconnectLoopbackClient.
func (s *Server) DisconnectClient(clientIndex int, now time.Time) error {
	if s.stopped {
		return ErrServerStopped
	}
	sl, err := s.checkSlot(clientIndex)
	if err != nil {
		return err
	}
	if sl.loopback {
		return fmt.Errorf("%w: %d; use DisconnectLoopbackClient", ErrSlotIsLoopback, clientIndex)
	}
	s.setNow(now)
	s.sendDisconnects(clientIndex)
	s.stats.ServerDisconnects++
	s.resetSlot(clientIndex, DisconnectServerKicked)
	return nil
}

// DisconnectAll disconnects every network client like DisconnectClient.
// Loopback clients stay, as in the reference.
func (s *Server) DisconnectAll(now time.Time) {
	if s.stopped {
		return
	}
	s.setNow(now)
	for k := s.active.n - 1; k >= 0; k-- {
		if k >= s.active.n {
			continue
		}
		i := int(s.active.items[k])
		if s.slots[i].loopback {
			continue
		}
		s.sendDisconnects(i)
		s.stats.ServerDisconnects++
		s.resetSlot(i, DisconnectServerKicked)
	}
}
