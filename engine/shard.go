package engine

import (
	"crypto/rand"
	"fmt"
	"log/slog"
	"math/bits"
	"net/netip"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/reliable"
	"github.com/netcode-go/netcode/ring"
)

const (
	// recvBatchSize and sendBatchSize are the datagrams moved per
	// ReadBatch / WriteBatch call.
	recvBatchSize = 64
	sendBatchSize = 64
	// recvBatchesManual bounds the batches a shard reads per Update in
	// manual mode (64 * 16 datagrams, a few milliseconds of work), so that
	// a flood on a socket that never drains delays keep-alives, timeouts
	// and the flush of sends by at most that much: the reference reads up
	// to 64 * 256 per update and can starve them. A busy loop calls Update
	// again at once, so throughput does not depend on it.
	recvBatchesManual = 16
	// recvBatchesShard is a shard goroutine's bound: it gives the
	// application goroutine a turn after every pass (see shard.run), so its
	// passes are kept short (256 datagrams, about a millisecond of bad
	// requests under a flood) to bound how long a payload waits for its
	// reply.
	recvBatchesShard = 4
	// timerScanInterval is the most often a shard scans its slots for
	// keep-alives, timeouts and expired encryption mappings. It bounds how
	// late a keep-alive can be (a tenth of the 10 Hz interval), and it is
	// how long an idle shard goroutine parks.
	timerScanInterval = PacketSendInterval / 10
)

// shard is one conn and the clients whose packets arrive on it: the
// protocol core. It is driven by one goroutine at a time: its own in the
// default mode, the caller of Server.Update in manual mode. Everything the
// per-packet path touches is allocated when the server is made. Slots and
// the admission state are the server's, shared by every shard: a shard
// touches only the slots it admitted (listed in active) and takes and frees
// them through adm.
type shard struct {
	id   int
	srv  *Server
	cfg  *ServerConfig
	log  *slog.Logger
	conn batchio.Conn

	tokenKey     *aead.TokenKey
	challengeKey *aead.ChallengeKey
	challengeID  [aead.KeyBytes]byte // the challenge key, kept for tests
	challengeSeq uint64
	// minExpire is the restart rule's bound for this run: requests whose
	// token expires at or before it are ignored.
	minExpire uint64
	// maxLifetime is the expiry bound (MaxConnectTokenLifetime plus
	// ConnectTokenClockSkew, in seconds): requests whose token expires
	// later than this from now are ignored.
	maxLifetime uint64
	// loggedBeforeStart and loggedTooLong: the restart rule's and the
	// expiry bound's refusals were logged this run.
	loggedBeforeStart, loggedTooLong bool

	slots  []slot
	adm    *admission
	active partition // this shard's connected slots first
	byAddr oaTable[netip.AddrPort]
	maps   mappingTable

	rx          []batchio.Message
	out         []batchio.Message
	outN        int
	recvBatches int
	// readMax is the largest batch a read has returned: the conn's batch
	// limit, once a read has filled it.
	readMax int

	// Scratch for one packet; reused so the per-packet path does not
	// allocate.
	rp      codec.ReadParams
	pkt     codec.Packet
	priv    codec.PrivateToken
	chal    codec.ChallengeToken
	chalBuf [codec.ChallengeTokenBytes]byte
	// decrypts rations connect-token decryptions (TokenDecryptsPerSecond).
	decrypts tokenBucket
	// shed is the kernel shedding of request floods (shed.go).
	shed         requestShedder
	shedReadRate float64

	// Reliable endpoints: the shard's reassembly pool, a datagram's
	// scratch, and a queued send longer than one outbox entry, gathered.
	relPool    *reliable.Pool
	relScratch [codec.MaxPayloadBytes]byte
	gather     []byte

	now     time.Time
	nowUnix uint64
	stopped bool
	// lastScan is when the per-slot timers last ran (see timerScanInterval).
	lastScan time.Time
	stats    ServerStats

	// Hand-off to the application (events.go): payloads, connects and
	// disconnects in; sends out (default mode). order stamps every
	// hand-off so that Poll can merge the two rings in order; reserved is
	// how many event entries are kept for the disconnect events of this
	// shard's connected clients.
	inbox    *ring.SPSC[inboxEntry]
	events   *ring.SPSC[eventEntry]
	outbox   *ring.SPSC[outboxEntry]
	order    uint64
	reserved int
	pushed   bool // handed the application something this pass
	outWork  bool // took work from the outbox this pass

	// Default mode: the goroutine's state.
	waker batchio.Waker // nil: the conn cannot be woken (it parks a timer scan at most)
	// sockStats is the socket's system-call counters, if it keeps them.
	sockStats batchio.StatsReader
	lock      bool // lock the goroutine to its OS thread (a blocking-wait socket)
	parked    atomic.Bool
	closing   atomic.Bool

	staleSends, loops, parks uint64
	// lastPass is when the shard last finished a pass (real time, unix
	// nanoseconds): Server.Live.
	lastPass      atomic.Int64
	sendQueueFull atomic.Uint64
	// snapshot is what Stats reads: the shard publishes its counters after
	// every pass without ever waiting for a reader (TryLock).
	statsMu  sync.Mutex
	snapshot ServerStats
}

func newShard(srv *Server, id int, conn batchio.Conn, mappings int) (*shard, error) {
	cfg := &srv.cfg
	s := &shard{id: id, srv: srv, cfg: cfg, log: cfg.Logger, conn: conn,
		slots: srv.slots, adm: srv.adm, recvBatches: recvBatchesShard}
	if cfg.Manual {
		s.recvBatches = recvBatchesManual
	}
	var err error
	if s.tokenKey, err = aead.NewTokenKey(cfg.PrivateKey); err != nil {
		return nil, err
	}
	if err := s.newChallengeKey(); err != nil {
		return nil, err
	}
	n := cfg.MaxClients
	s.active.init(n)
	s.byAddr.init(n, newAddrHash())
	s.maps.init(mappings)
	s.decrypts.init(cfg.TokenDecryptsPerSecond, time.Time{})
	s.initShedding()
	s.rx = batchio.NewMessages(recvBatchSize, codec.MaxPacketBytes)
	s.out = batchio.NewMessages(sendBatchSize, codec.MaxPacketBytes)
	s.rp = codec.ReadParams{Role: codec.RoleServer, ProtocolID: cfg.ProtocolID, TokenKey: s.tokenKey}
	s.sockStats, _ = batchio.As[batchio.StatsReader](conn)
	// A blocking-wait socket parks in poll(2) on its OS thread: the
	// shard goroutine keeps its thread (default mode).
	s.lock = !cfg.Manual && s.sockStats != nil && s.sockStats.Stats().BlockingWait

	if s.inbox, err = ring.NewSPSC[inboxEntry](cfg.EventQueueSize); err != nil {
		return nil, err
	}
	if s.events, err = ring.NewSPSC[eventEntry](eventRingSize(n)); err != nil {
		return nil, err
	}
	if !cfg.Manual {
		if s.outbox, err = ring.NewSPSC[outboxEntry](cfg.SendQueueSize); err != nil {
			return nil, err
		}
		s.waker, _ = batchio.As[batchio.Waker](conn)
	}
	if r := cfg.Reliable; r != nil {
		if s.relPool, err = reliable.NewPool(*r, cfg.ReliablePoolBuffers, min(defaultRelPoolPerEndpoint, cfg.ReliablePoolBuffers)); err != nil {
			return nil, fmt.Errorf("netcode: server config: ReliablePoolBuffers: %w", err)
		}
		s.gather = make([]byte, r.MaxPacketSize)
	}
	return s, nil
}

// newChallengeKey makes a new random challenge key, at every start:
// challenge sequences restart at 0 and must never meet a key they were
// used with.
func (s *shard) newChallengeKey() error {
	if _, err := rand.Read(s.challengeID[:]); err != nil {
		return fmt.Errorf("netcode: challenge key: %w", err)
	}
	key, err := aead.NewChallengeKey(s.challengeID[:])
	if err != nil {
		return err
	}
	s.challengeKey, s.challengeSeq = key, 0
	return nil
}

// batchBucket is the histogram bucket of a batch of n datagrams (n >= 1):
// bucket k holds n from 2^k to 2^(k+1)-1.
func batchBucket(n int) int {
	return min(bits.Len(uint(n))-1, NumBatchBuckets-1)
}

// start begins a run of the shard at now with the restart rule's bound
// minExpire: a new challenge key, a new decryption budget and shedding
// window. The connect-token history is the server's and is kept.
func (s *shard) start(now time.Time, minExpire uint64) error {
	if err := s.newChallengeKey(); err != nil {
		return err
	}
	s.minExpire = minExpire
	s.maxLifetime = uint64((s.cfg.MaxConnectTokenLifetime + ConnectTokenClockSkew) / time.Second)
	s.loggedBeforeStart, s.loggedTooLong = false, false
	s.decrypts.init(s.cfg.TokenDecryptsPerSecond, time.Time{})
	s.shed = requestShedder{conn: s.shed.conn}
	s.stopped = false
	s.closing.Store(false)
	s.setNow(now)
	s.lastScan = now
	return nil
}

// pass is one turn of the shard at now: read what is waiting, run the
// timers, flush. (Server.Update in manual mode; shard.run in the default
// mode.)
func (s *shard) pass(now time.Time) {
	if s.stopped {
		return
	}
	s.setNow(now)
	s.receive(now)
	// The timer scans touch every connected slot; a busy server passes
	// thousands of times a second, and 10 Hz keep-alives and timeouts in
	// seconds don't need more than one scan per timerScanInterval.
	if d := now.Sub(s.lastScan); d >= timerScanInterval || d < 0 {
		s.lastScan = now
		s.sendKeepAlives(now)
		s.checkTimeouts(now)
		s.relScan(now)
		s.maps.expire(now)
		s.adm.sweepHistory(s.nowUnix)
	}
	s.adjustShedding(now)
	s.flush()
}

func (s *shard) setNow(now time.Time) {
	s.now = now
	s.nowUnix = unixSeconds(now)
}

func unixSeconds(t time.Time) uint64 {
	return uint64(max(t.Unix(), 0))
}

// receive drains the conn in batches.
func (s *shard) receive(now time.Time) {
	for range s.recvBatches {
		n, err := s.conn.ReadBatch(s.rx)
		n = min(max(n, 0), len(s.rx))
		if n > 0 {
			s.stats.RecvBatches[batchBucket(n)]++
		}
		s.shed.read += uint64(n)
		for i := range n {
			m := &s.rx[i]
			if m.N > 0 && m.Buf[0] == 0 {
				s.shed.seen++ // a connection request
			}
			s.processPacket(m.Buf[:m.N], m.Addr, now)
		}
		if err != nil {
			s.stats.ReadErrors++
			break
		}
		if n == 0 || n < s.readMax {
			// A batch smaller than the conn has returned before: the
			// socket held no more (recvmmsg returns what is queued), so
			// another call would come back empty. Under a steady trickle
			// that empty call was every other receive system call.
			s.shed.drained = true
			break
		}
		s.readMax = n
	}
}

// stop disconnects every client (NumDisconnectPackets disconnect packets to
// each network client), resets their slots with DisconnectServerStopped,
// forgets handshakes in progress and flushes.
func (s *shard) stop(now time.Time) {
	if s.stopped {
		return
	}
	s.setNow(now)
	for s.active.n > 0 {
		i := int(s.active.items[s.active.n-1])
		if !s.slots[i].loopback {
			s.sendDisconnects(i)
		}
		s.stats.ServerDisconnects++
		s.resetSlot(i, DisconnectServerStopped)
	}
	s.flush()
	s.maps.clear()
	s.stopShedding()
	s.stopped = true
}

// outBuf returns the buffer for the next datagram, flushing the batch
// first if it is full.
func (s *shard) outBuf() []byte {
	if s.outN == len(s.out) {
		s.flush()
	}
	return s.out[s.outN].Buf
}

// commit queues the n bytes written into outBuf for to.
func (s *shard) commit(n int, to netip.AddrPort) {
	m := &s.out[s.outN]
	m.N = n
	m.Addr = to
	s.outN++
}

func (s *shard) flush() {
	if s.outN == 0 {
		return
	}
	msgs := s.out[:s.outN]
	s.stats.SendBatches[batchBucket(len(msgs))]++
	// One call: WriteBatch tries every datagram and drops (and counts) what
	// it cannot send; sending any of them again could duplicate it.
	n, _ := s.conn.WriteBatch(msgs)
	n = min(max(n, 0), len(msgs))
	bytes := 0
	for _, m := range msgs {
		bytes += m.N
	}
	if n < len(msgs) {
		// Which ones failed is the conn's to know; count the bytes of the
		// ones reported sent as a share of the batch.
		bytes = bytes * n / len(msgs)
	}
	s.stats.PacketsOut += uint64(n)
	s.stats.BytesOut += uint64(bytes)
	s.stats.SendFailures += uint64(len(msgs) - n)
	s.outN = 0
}

// owns reports whether slot i is connected through this shard.
func (s *shard) owns(i int) bool {
	return i >= 0 && i < len(s.active.pos) && s.active.pos[i] < int32(s.active.n)
}

// send seals a payload for slot i, which this shard owns, into the
// outgoing batch. While the client has not confirmed its slot, a
// keep-alive goes first so that it learns its client index.
func (s *shard) send(i int, payload []byte) {
	sl := &s.slots[i]
	switch {
	case sl.loopback:
		seq := sl.sequence
		sl.sequence++
		s.cfg.SendLoopbackPacket(i, payload, seq)
	case sl.rel != nil:
		s.relSend(i, payload)
	default:
		s.seal(i, payload)
	}
}

// seal seals one payload datagram for network slot i into the outgoing
// batch.
func (s *shard) seal(i int, payload []byte) {
	sl := &s.slots[i]
	if !sl.confirmed {
		s.sendKeepAlive(i)
	}
	n, err := codec.WritePayloadPacket(s.outBuf(), sl.sequence, payload, sl.sendKey)
	if err != nil { // cannot happen: the payload size was checked
		s.stats.SendFailures++
		return
	}
	sl.sequence++
	sl.lastSend = s.now
	s.commit(n, sl.addr)
}

// broadcast sends payload to every client of the shard.
func (s *shard) broadcast(payload []byte) {
	for _, i := range s.active.items[:s.active.n] {
		s.send(int(i), payload)
	}
}

// kick disconnects slot i, which this shard owns, with disconnect packets.
func (s *shard) kick(i int) {
	if !s.slots[i].loopback {
		s.sendDisconnects(i)
	}
	s.stats.ServerDisconnects++
	s.resetSlot(i, DisconnectServerKicked)
}

// kickAll disconnects every network client of the shard; loopback clients
// stay, as in the reference.
func (s *shard) kickAll() {
	for k := s.active.n - 1; k >= 0; k-- {
		if k >= s.active.n {
			continue
		}
		if i := int(s.active.items[k]); !s.slots[i].loopback {
			s.kick(i)
		}
	}
}
