package engine

import (
	"errors"
	"fmt"
	"math"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/reliable"
)

// Reliable endpoints (ServerConfig.Reliable, ClientConfig.Reliable): every
// payload of a connection carries a reliable 1.0 header, so that each side
// learns which of its packets arrived, the round trip and the loss, and
// can send packets of up to reliable.Config.MaxPacketSize as fragments.
//
// On a server the endpoint of a slot belongs to the shard that owns the
// slot: the shard sends through it (the application's records, see
// queueRecord) and receives through it, handing the application reassembled
// packets and acks through the inbox. The application predicts the
// sequence of its next send (NextSequence) without touching the endpoint:
// the shard applies every queued send of a connection in order, and a send
// the shard would refuse is refused by SendPacket first.

const (
	// relUpdateInterval is how often a shard recomputes a slot's estimates
	// (reliable.Endpoint.Update: a pass over its windows): often enough
	// for a game to read, rarely enough to cost little per slot.
	relUpdateInterval = 100 * time.Millisecond
	// defaultRelPoolPerEndpoint is how many packets one endpoint may have
	// in reassembly at once, drawing on its shard's pool.
	defaultRelPoolPerEndpoint = 4
	minRelPoolBuffers         = 64
	maxRelPoolBuffers         = 1 << 16
)

// ErrReliableOff: a reliable call on a server or client without endpoints.
var ErrReliableOff = errors.New("netcode: reliable endpoints are off (set ServerConfig.Reliable or ClientConfig.Reliable)")

// DefaultReliableConfig is the reliable configuration servers and clients
// use unless told otherwise: the C library's defaults (16 KiB packets in
// fragments of 1,024 bytes), which fit in netcode payloads and agree with
// a C peer that keeps its defaults.
func DefaultReliableConfig() reliable.Config { return reliable.DefaultConfig() }

// checkReliable checks a reliable configuration for use over netcode: every
// datagram it makes must fit in one payload.
func checkReliable(who string, c *reliable.Config) error {
	if err := c.Validate(); err != nil {
		return fmt.Errorf("netcode: %s config: Reliable: %w", who, err)
	}
	if n := c.MaxDatagramBytes(); n > codec.MaxPayloadBytes {
		return fmt.Errorf("netcode: %s config: Reliable makes datagrams of up to %d bytes (FragmentAbove %d, FragmentSize %d); want at most %d, the netcode payload limit: FragmentAbove and FragmentSize up to %d",
			who, n, c.FragmentAbove, c.FragmentSize, codec.MaxPayloadBytes, codec.MaxPayloadBytes-reliable.MaxHeaderBytes-reliable.FragmentHeaderBytes)
	}
	return nil
}

// relPoolBuffers is a shard's default reassembly pool: a buffer for every
// two slots the shard would own if clients spread evenly, within bounds.
// A packet's fragments leave in one batch, so a reassembly lasts about a
// network jitter unless a fragment is lost; half the clients can be in
// the middle of one at any moment.
func relPoolBuffers(maxClients, shards int) int {
	per := (maxClients + shards - 1) / shards
	return min(max(per/2, minRelPoolBuffers), maxRelPoolBuffers)
}

// relSeq is the application's view of a slot's next send sequence: the
// connection generation it belongs to and the sequence.
type relSeq struct {
	gen  uint32
	next uint16
}

// relStatsCell is the estimates a shard publishes for a slot for any
// goroutine to read; each field is one atomic, so a reader may see fields
// of two successive updates, never a torn value.
type relStatsCell struct {
	f [relStatFields]atomic.Uint32
	// Sent, received and acked packets since the connection started.
	sent, received, acked atomic.Uint64
	pub                   atomic.Uint32 // generation of the published figures
}

const relStatFields = 11

func (c *relStatsCell) store(gen uint32, st reliable.Stats, cnt reliable.Counters) {
	v := [relStatFields]float32{st.RTT, st.RTTMin, st.RTTMax, st.RTTAvg, st.JitterAvgVsMinRTT,
		st.JitterMaxVsMinRTT, st.JitterStddevVsAvgRTT, st.PacketLoss, st.SentKbps, st.ReceivedKbps, st.AckedKbps}
	for i, x := range v {
		c.f[i].Store(math.Float32bits(x))
	}
	c.sent.Store(cnt[reliable.PacketsSent])
	c.received.Store(cnt[reliable.PacketsReceived])
	c.acked.Store(cnt[reliable.PacketsAcked])
	c.pub.Store(gen)
}

// ReliableStats is what a reliable endpoint knows of its connection.
type ReliableStats struct {
	reliable.Stats
	// PacketsSent, PacketsReceived and PacketsAcked count this
	// connection's packets (reliable.Counters).
	PacketsSent, PacketsReceived, PacketsAcked uint64
}

func (c *relStatsCell) load() ReliableStats {
	var v [relStatFields]float32
	for i := range v {
		v[i] = math.Float32frombits(c.f[i].Load())
	}
	return ReliableStats{
		Stats: reliable.Stats{RTT: v[0], RTTMin: v[1], RTTMax: v[2], RTTAvg: v[3], JitterAvgVsMinRTT: v[4],
			JitterMaxVsMinRTT: v[5], JitterStddevVsAvgRTT: v[6], PacketLoss: v[7], SentKbps: v[8],
			ReceivedKbps: v[9], AckedKbps: v[10]},
		PacketsSent: c.sent.Load(), PacketsReceived: c.received.Load(), PacketsAcked: c.acked.Load(),
	}
}

// relClock is an endpoint's time: the time since the server or client was
// made, on the clock it runs on.
func relClock(epoch, now time.Time) time.Duration {
	if d := now.Sub(epoch); d > 0 {
		return d
	}
	return 0
}

// relStart readies slot i's endpoint for a new connection owned by s.
func (s *shard) relStart(i int) {
	sl := &s.slots[i]
	if sl.rel == nil || sl.loopback {
		return
	}
	// Its previous owner reset it when that connection ended, so it holds
	// none of that shard's buffers.
	if err := sl.rel.Restart(s.relPool, relClock(s.srv.epoch, s.now)); err != nil {
		s.stats.SendFailures++ // cannot happen: resetSlot reset it
	}
	sl.relUpdated = s.now
}

// relStop returns slot i's reassembly buffers to this shard's pool.
func (s *shard) relStop(i int) {
	if ep := s.slots[i].rel; ep != nil {
		ep.Reset()
	}
}

// relSend sends payload to slot i through its endpoint: one datagram, or
// its fragments in one batch.
func (s *shard) relSend(i int, payload []byte) {
	sl := &s.slots[i]
	ep := sl.rel
	ep.SetTime(relClock(s.srv.epoch, s.now))
	p, err := ep.Send(payload)
	if err != nil { // cannot happen: SendPacket checked the size
		s.stats.SendFailures++
		return
	}
	d := p.Datagrams()
	if s.outN+d > len(s.out) {
		s.flush() // the fragments of a packet leave in one batch
	}
	for k := range d {
		n, _ := p.WriteDatagram(k, s.relScratch[:])
		s.seal(i, s.relScratch[:n])
	}
}

// relReceive hands a payload from slot i to its endpoint, and what it
// completes (a packet, acks) to the application.
func (s *shard) relReceive(i int32, payload []byte) {
	sl := &s.slots[i]
	ep := sl.rel
	ep.SetTime(relClock(s.srv.epoch, s.now))
	d, r := ep.Receive(payload)
	if r != reliable.DropNone {
		s.stats.ReliableDrops[r]++
		return
	}
	if d.Evicted {
		s.stats.ReliableDrops[reliable.DropReassemblyEvicted]++
	}
	if d.Delivered && !s.deliver(i, d.Payload, uint64(d.Sequence)) {
		// Not acked either: the sender sees the packet as lost.
		ep.Refuse()
		s.stats.Drops[ServerDropAppBacklog]++
		return
	}
	if acks := ep.Acks(); len(acks) > 0 && s.deliverAcks(i, acks) {
		ep.ClearAcks()
	}
}

// relScan recomputes the estimates of the shard's reliable slots that are
// due and publishes them (at most every relUpdateInterval per slot).
func (s *shard) relScan(now time.Time) {
	if s.srv.relStats == nil {
		return
	}
	t := relClock(s.srv.epoch, now)
	for _, i := range s.active.items[:s.active.n] {
		sl := &s.slots[i]
		if sl.rel == nil || sl.loopback || now.Sub(sl.relUpdated) < relUpdateInterval {
			continue
		}
		sl.relUpdated = now
		sl.rel.Update(t)
		s.srv.relStats[i].store(sl.gen, sl.rel.Stats(), sl.rel.Counters())
	}
}

// NextSequence returns the reliable sequence the next SendPacket to the
// client in slot clientIndex will carry: the sequence its acks will name.
// Application goroutine only.
func (s *Server) NextSequence(clientIndex int) (uint16, error) {
	if s.relSeq == nil {
		return 0, ErrReliableOff
	}
	if s.cfg.Manual {
		if _, _, err := s.route(clientIndex); err != nil {
			return 0, err
		}
		return s.slots[clientIndex].rel.NextSequence(), nil
	}
	_, gen, err := s.route(clientIndex)
	if err != nil {
		return 0, err
	}
	if q := &s.relSeq[clientIndex]; q.gen == gen {
		return q.next, nil
	}
	return 0, nil
}

// ReliableStats returns the estimates of the client in slot clientIndex
// (RTT, jitter, loss, bandwidth), as of its endpoint's last update (every
// 100 ms). Any goroutine.
func (s *Server) ReliableStats(clientIndex int) (ReliableStats, error) {
	if s.relStats == nil {
		return ReliableStats{}, ErrReliableOff
	}
	_, gen, err := s.route(clientIndex)
	if err != nil {
		return ReliableStats{}, err
	}
	c := &s.relStats[clientIndex]
	if c.pub.Load() != gen {
		return ReliableStats{}, nil // not updated yet in this connection
	}
	return c.load(), nil
}

// sentSequence counts a send queued for slot i's connection gen
// (application goroutine).
func (s *Server) sentSequence(i int, gen uint32) {
	q := &s.relSeq[i]
	if q.gen != gen {
		*q = relSeq{gen: gen}
	}
	q.next++
}

// maxSendBytes is the largest payload SendPacket takes.
func (s *Server) maxSendBytes() int {
	if s.cfg.Reliable != nil {
		return s.cfg.Reliable.MaxPacketSize
	}
	return codec.MaxPayloadBytes
}

// normalizeReliable checks the reliable fields and fills in their defaults.
func (c *ServerConfig) normalizeReliable(shards int) error {
	if c.Reliable == nil {
		if c.ReliablePoolBuffers != 0 {
			return fmt.Errorf("netcode: server config: ReliablePoolBuffers %d is set, but Reliable is not (leave it 0)", c.ReliablePoolBuffers)
		}
		return nil
	}
	r := *c.Reliable // the caller's copy may change; the server's must not
	c.Reliable = &r
	if err := checkReliable("server", c.Reliable); err != nil {
		return err
	}
	if c.ReliablePoolBuffers == 0 {
		c.ReliablePoolBuffers = relPoolBuffers(c.MaxClients, shards)
	}
	if n := c.ReliablePoolBuffers; n < 1 || n > 1<<24 {
		return fmt.Errorf("netcode: server config: ReliablePoolBuffers %d; allowed 1 to %d (0 means one per two slots of a shard's even share, %d to %d)", n, 1<<24, minRelPoolBuffers, maxRelPoolBuffers)
	}
	return nil
}

// initReliable gives every slot an endpoint, when they are on.
func (s *Server) initReliable() error {
	if s.cfg.Reliable == nil {
		return nil
	}
	s.epoch = s.cfg.Clock()
	s.relSeq = make([]relSeq, len(s.slots))
	s.relStats = make([]relStatsCell, len(s.slots))
	s.gather = make([]byte, s.cfg.Reliable.MaxPacketSize)
	for i := range s.slots {
		// Each connection moves its endpoint to the pool of the shard
		// that owns it (relStart).
		ep, err := reliable.New(*s.cfg.Reliable, s.shards[0].relPool)
		if err != nil {
			return fmt.Errorf("netcode: server config: Reliable: %w", err)
		}
		s.slots[i].rel = ep
	}
	return nil
}

// ReliableEnabled reports whether the server's slots have reliable
// endpoints (ServerConfig.Reliable). Any goroutine.
func (s *Server) ReliableEnabled() bool { return s.cfg.Reliable != nil }
