package engine

import (
	"log/slog"
	"net/netip"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/reliable"
	"github.com/netcode-go/netcode/ring"
)

// slot is one client slot. Everything in it is allocated when the server is
// created; connecting a client only fills it in (and hands it the session
// keys the handshake created). The owning shard writes it; the client's id,
// address and user data are written before the connect event is handed to
// the application and stay until the application has polled the
// disconnect event, which is when the slot is freed (two-phase release), so
// the application reads them through its events without a lock.
type slot struct {
	connected bool
	loopback  bool
	// confirmed is set by the first keep-alive or payload from the client;
	// until then every payload sent is preceded by a keep-alive.
	confirmed bool

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

	// rel is the slot's reliable endpoint (ServerConfig.Reliable), used
	// by the shard that owns the connection; relUpdated is when its
	// estimates were last recomputed.
	rel        *reliable.Endpoint
	relUpdated time.Time
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
func (s *shard) sendKeepAlive(i int) {
	sl := &s.slots[i]
	n, err := codec.WriteKeepAlivePacket(s.outBuf(), sl.sequence, uint32(i), uint32(len(s.slots)), sl.sendKey)
	if err != nil { // cannot happen: the buffer and key are the server's own
		s.stats.SendFailures++
		return
	}
	sl.sequence++
	sl.lastSend = s.now
	s.commit(n, sl.addr)
}

// sendDisconnects queues NumDisconnectPackets disconnect packets to slot i;
// the client may lose some of them.
func (s *shard) sendDisconnects(i int) {
	sl := &s.slots[i]
	for range NumDisconnectPackets {
		n, err := codec.WriteDisconnectPacket(s.outBuf(), sl.sequence, sl.sendKey)
		if err != nil {
			s.stats.SendFailures++
			return
		}
		sl.sequence++
		s.commit(n, sl.addr)
	}
	sl.lastSend = s.now
}

// sendKeepAlives sends a keep-alive to every network client that has been
// sent nothing for the keep-alive interval.
func (s *shard) sendKeepAlives(now time.Time) {
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
func (s *shard) checkTimeouts(now time.Time) {
	for k := s.active.n - 1; k >= 0; k-- {
		i := int(s.active.items[k])
		sl := &s.slots[i]
		if sl.loopback || !sl.hasTimeout || now.Before(sl.lastRecv.Add(sl.timeout)) {
			continue
		}
		s.stats.Timeouts++
		s.resetSlot(i, DisconnectTimedOut)
	}
}

// occupy fills slot i, already claimed from the admission state, adds it
// to this shard's active set and tells the application.
func (s *shard) occupy(i int, clientID uint64, userData *[codec.UserDataBytes]byte) {
	sl := &s.slots[i]
	s.active.take(i)
	sl.connected = true
	sl.clientID = clientID
	sl.userData = *userData
	sl.lastRecv = s.now
	sl.lastSend = s.now
	sl.replay.Reset()
	sl.gen++
	s.relStart(i)
	s.stats.Connects++
	s.reserved++
	s.srv.owner[i].Store(uint64(sl.gen)<<32 | uint64(s.id+1))
	s.pushEvent(EventConnect, i, 0)
}

// resetSlot ends slot i's connection and queues its disconnect event. It
// sends nothing. The slot's id, address and user data stay for the event;
// the slot and the client id are freed when the application polls it.
func (s *shard) resetSlot(i int, reason DisconnectReason) {
	sl := &s.slots[i]
	if !sl.connected {
		return
	}
	if !sl.loopback {
		s.byAddr.del(sl.addr)
		s.relStop(i)
	}
	s.active.release(i)
	s.srv.owner[i].Store(0)
	sl.connected = false
	sl.confirmed = false
	sl.sendKey, sl.recvKey = nil, nil
	sl.sequence = 0
	s.reserved--
	s.log.Info("netcode client disconnected", slog.Int("client_index", i),
		slog.String("client_id", IDString(sl.clientID)), slog.String("address", addrString(sl.addr, sl.loopback)),
		slog.String("reason", reason.String()))
	s.pushEvent(EventDisconnect, i, reason)
}

func addrString(a netip.AddrPort, loopback bool) string {
	if loopback {
		return "loopback"
	}
	return a.String()
}
