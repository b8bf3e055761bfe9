package engine

import (
	"errors"
	"fmt"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/ring"
)

// ShardedConfig configures a ShardedServer.
type ShardedConfig struct {
	// Server is the protocol configuration shared by every shard
	// (MaxEncryptionMappings is per shard, by default an even share of
	// 2*MaxClients, at least 256). Its
	// OnConnect, OnDisconnect and SendLoopbackPacket must be nil: a sharded
	// server reports connects and disconnects through Poll, and has no
	// loopback clients.
	Server ServerConfig
	// Bind are the addresses to serve (for example an IPv4 and an IPv6
	// one). Each shard opens one SO_REUSEPORT socket on each; a port of 0
	// is replaced by the port the first socket got.
	Bind []netip.AddrPort
	// Shards is the number of sockets (and goroutines) per bind address
	// (default runtime.GOMAXPROCS(0), at most 256). The kernel's SO_REUSEPORT
	// hash, not the server, decides which shard a client's packets reach;
	// the shard that receives them owns the client.
	Shards int
	// Socket sets the batch size, buffer sizes and wait of the sockets
	// (ReusePort is always on; GSO is on unless Socket.DisableGSO or
	// DisableGSO is set). A BlockingWait socket's shard goroutine is
	// locked to its OS thread.
	Socket batchio.Config
	// DisableGSO sends every datagram on its own even when several in a
	// row go to one client (the same as Socket.DisableGSO). GSO (one system
	// call for a run of equal-sized datagrams to one address) is on by
	// default where the kernel has it.
	DisableGSO bool
	// InboxSize is how many received payloads each shard can hold for
	// Poll, and OutboxSize how many sends the application can queue for each
	// shard. Powers of two; default 4096 each. One entry holds a whole
	// 1200-byte payload. (Connects and disconnects have a ring of their own
	// with room for every slot.)
	InboxSize, OutboxSize int
	// WrapConn, if set, is applied to each shard's socket once it is open,
	// and the shard reads, writes and waits through the conn it returns:
	// a hook for fault injection (batchiotest.FaultConn) and instrumentation.
	// The wrapper must pass WaitRead through to the socket (or return no
	// later), since the shard parks in it. If the wrapper has no Wake
	// method, the shard is woken through the socket's. Close closes the
	// wrapper and then the socket. nil means the sockets are used as they
	// are.
	WrapConn func(batchio.Conn) batchio.Conn
}

// EventKind says what a ShardedServer event reports.
type EventKind uint8

// Event kinds.
const (
	// EventConnect: a client connected in slot ClientIndex with ClientID.
	EventConnect EventKind = iota + 1
	// EventDisconnect: the client in slot ClientIndex left (Reason).
	EventDisconnect
	// EventPayload: the client in slot ClientIndex sent Payload.
	EventPayload
)

// Event is one thing a ShardedServer reports to the application. Payload
// is valid only during the Poll callback.
type Event struct {
	Kind        EventKind
	ClientIndex int
	ClientID    uint64           // EventConnect
	Reason      DisconnectReason // EventDisconnect
	Sequence    uint64           // EventPayload
	Payload     []byte           // EventPayload
}

// ShardedStats are the counters of one shard.
type ShardedStats struct {
	ServerStats
	// StaleSends counts application sends for a connection that had ended
	// by the time the shard saw them; OutboxFull counts sends refused
	// because the shard's outbox was full.
	StaleSends, OutboxFull uint64
	// Loops counts shard loop iterations and Parks those that waited for
	// the network.
	Loops, Parks uint64
	// Connected is the number of clients the shard owns.
	Connected int
	// RecvCalls/RecvPackets and SendCalls/SendPackets are the socket's
	// system calls and datagrams (their ratio is the mean batch size), when
	// it is a batchio.StatsReader.
	RecvCalls, RecvPackets, SendCalls, SendPackets uint64
	// KernelDrops is the datagrams the kernel dropped for the shard's
	// socket before the shard could read them: shed connection requests
	// (ServerStats.ShedShift) and overflows of its receive queue. Read
	// when Stats is called, from a socket that can tell (a batchio.Shedder);
	// 0 after Close.
	KernelDrops uint64
}

// ShardedServer is a netcode server for many players: N shards, each a
// goroutine with its own SO_REUSEPORT socket, its own buffers and the
// clients whose packets the kernel delivers to that socket. Client ids,
// used tokens and the slot count are global (admission state behind a lock,
// touched only by handshakes).
//
// The application talks to the shards through lock-free rings, from one
// goroutine of its own (its game loop): Poll receives payloads, connects
// and disconnects; SendPacket, Broadcast and DisconnectClient queue work
// for the owning shard. Those methods must not be called concurrently with
// each other; Stats, NumConnectedClients and Close may be called from any
// goroutine.
type ShardedServer struct {
	cfg    ShardedConfig
	shards []*shard
	slots  []slot
	adm    *admission
	// owner[i] is 0 when slot i is free, else gen<<32 | shard+1, set by the
	// owning shard before it reports the connect.
	owner []atomic.Uint64
	// events is signalled when a shard hands the application something.
	events chan struct{}
	ev     Event       // reused by Poll so that it does not allocate
	timer  *time.Timer // reused by WaitEvents
	wg     sync.WaitGroup
	closed atomic.Bool
	public []netip.AddrPort
}

// inboxEntry is a received payload waiting for Poll.
type inboxEntry struct {
	order  uint64 // the shard's hand-off count: Poll merges the rings by it
	client int32
	n      int32
	seq    uint64
	data   [codec.MaxPayloadBytes]byte
}

// eventEntry is a connect or disconnect waiting for Poll. Events have their
// own small-entry ring, sized so that every client a shard can hold has
// room for its disconnect event.
type eventEntry struct {
	order    uint64
	kind     EventKind
	reason   DisconnectReason
	client   int32
	clientID uint64
}

type outboxKind uint8

const (
	outSend outboxKind = iota + 1
	outBroadcast
	outDisconnect
)

type outboxEntry struct {
	kind   outboxKind
	client int32
	gen    uint32
	n      int32
	data   [codec.MaxPayloadBytes]byte
}

// shard is one goroutine, its socket and the Server core that handles the
// clients behind it.
type shard struct {
	id     int
	owner  *ShardedServer
	conn   batchio.Conn
	sock   batchio.Conn // the socket under conn (conn itself unless WrapConn)
	waker  batchio.Waker
	srv    *Server
	inbox  *ring.SPSC[inboxEntry]
	events *ring.SPSC[eventEntry]
	outbox *ring.SPSC[outboxEntry]
	// order stamps every hand-off to the application; reserved is how many
	// event entries are kept for the disconnect events of this shard's
	// connected clients. Shard goroutine only.
	order    uint64
	reserved int
	parked   atomic.Bool
	closing  atomic.Bool
	lock     bool
	pushed   bool // shard goroutine: handed the application something this loop
	outWork  bool // shard goroutine: took work from the outbox this loop

	staleSends, loops, parks uint64
	outboxFull               atomic.Uint64
	statsMu                  sync.Mutex
	snapshot                 ShardedStats
}

var _ payloadSink = (*shard)(nil)

const (
	maxShards       = 256
	defaultRingSize = 4096
)

// NewShardedServer opens the sockets and starts the shards.
func NewShardedServer(cfg ShardedConfig) (*ShardedServer, error) {
	if cfg.Server.OnConnect != nil || cfg.Server.OnDisconnect != nil || cfg.Server.SendLoopbackPacket != nil {
		return nil, errors.New("netcode: sharded server config: OnConnect, OnDisconnect and SendLoopbackPacket must be nil; events come through Poll")
	}
	if len(cfg.Bind) == 0 {
		return nil, errors.New("netcode: sharded server config: Bind needs at least one address")
	}
	if cfg.Shards == 0 {
		cfg.Shards = runtime.GOMAXPROCS(0)
	}
	if cfg.Shards < 1 || cfg.Shards > maxShards {
		return nil, fmt.Errorf("netcode: sharded server config: Shards %d; allowed 1 to %d (0 means GOMAXPROCS)", cfg.Shards, maxShards)
	}
	for _, size := range []*int{&cfg.InboxSize, &cfg.OutboxSize} {
		if *size == 0 {
			*size = defaultRingSize
		}
		if *size < 4 || *size > 1<<20 || *size&(*size-1) != 0 {
			return nil, fmt.Errorf("netcode: sharded server config: inbox/outbox size %d; want a power of two from 4 to %d", *size, 1<<20)
		}
	}
	cfg.Socket.ReusePort = true
	cfg.Socket.DisableGSO = cfg.Socket.DisableGSO || cfg.DisableGSO
	// Handshakes spread over the shards like clients do: split the default
	// budget of 2*MaxClients encryption mappings between them.
	if cfg.Server.MaxEncryptionMappings == 0 {
		slots := cfg.Server.MaxClients
		if slots == 0 {
			slots = DefaultMaxClients
		}
		cfg.Server.MaxEncryptionMappings = max(256, 2*slots/(cfg.Shards*len(cfg.Bind)))
	}
	// Payloads go to the inbox, not to per-slot queues: keep those minimal.
	cfg.Server.ReceiveQueueLen = 1
	cfg.Server.ReceiveBuffers = 1

	s := &ShardedServer{cfg: cfg, events: make(chan struct{}, 1)}
	var conns []batchio.Conn
	fail := func(err error) (*ShardedServer, error) {
		for _, c := range conns {
			c.Close()
		}
		return nil, err
	}
	for _, bind := range cfg.Bind {
		addr := bind
		for range cfg.Shards {
			c, err := batchio.Listen(addr, cfg.Socket)
			if err != nil {
				return fail(fmt.Errorf("netcode: shard socket on %v: %w", addr, err))
			}
			warnBufferShortfall(cfg.Server.Logger, c)
			conns = append(conns, c)
			addr = c.LocalAddr() // the rest share the port the first got
		}
		if len(cfg.Server.PublicAddresses) == 0 {
			s.public = append(s.public, addr)
		}
	}
	if len(cfg.Server.PublicAddresses) == 0 {
		cfg.Server.PublicAddresses = s.public
	}
	if err := cfg.Server.normalize(conns); err != nil {
		return fail(err)
	}
	s.public = cfg.Server.PublicAddresses
	s.cfg = cfg
	var err error
	if s.slots, err = newSlots(cfg.Server.MaxClients, cfg.Server.ReceiveQueueLen); err != nil {
		return fail(err)
	}
	s.adm = newAdmission(cfg.Server.MaxClients, cfg.Server.TokenHistorySize)
	s.owner = make([]atomic.Uint64, cfg.Server.MaxClients)

	for i, c := range conns {
		sh := &shard{id: i, owner: s, conn: c, sock: c}
		if st, ok := batchio.As[batchio.StatsReader](c); ok {
			sh.lock = st.Stats().BlockingWait
		}
		if cfg.WrapConn != nil {
			if sh.conn = cfg.WrapConn(c); sh.conn == nil {
				return fail(fmt.Errorf("netcode: sharded server config: WrapConn returned nil for the socket on %v", c.LocalAddr()))
			}
		}
		if w, ok := batchio.As[batchio.Waker](sh.conn); ok {
			sh.waker = w
		} else if w, ok := batchio.As[batchio.Waker](c); ok {
			sh.waker = w
		}
		if sh.inbox, err = ring.NewSPSC[inboxEntry](cfg.InboxSize); err != nil {
			return fail(err)
		}
		if sh.events, err = ring.NewSPSC[eventEntry](eventRingSize(cfg.Server.MaxClients)); err != nil {
			return fail(err)
		}
		if sh.outbox, err = ring.NewSPSC[outboxEntry](cfg.OutboxSize); err != nil {
			return fail(err)
		}
		scfg := cfg.Server
		scfg.OnConnect = sh.onConnect
		scfg.OnDisconnect = sh.onDisconnect
		if sh.srv, err = newServer(scfg, []batchio.Conn{sh.conn}, s.slots, s.adm); err != nil {
			return fail(err)
		}
		sh.srv.sink = sh
		// Shed on the socket itself, under any wrapper.
		sh.srv.initShedding([]batchio.Conn{sh.sock})
		sh.srv.recvBatches = shardRecvBatches
		s.shards = append(s.shards, sh)
	}
	// One start for every shard: the restart rule's bound is the server's.
	start := cfg.Server.now()
	for _, sh := range s.shards {
		sh.srv.start(start)
	}
	for _, sh := range s.shards {
		s.wg.Add(1)
		go sh.run()
	}
	return s, nil
}

// eventRingSize holds a connect and a disconnect event for every slot.
func eventRingSize(maxClients int) int {
	n := 16
	for n < 2*maxClients+16 {
		n <<= 1
	}
	return n
}

// PublicAddresses returns the addresses clients' tokens must name.
func (s *ShardedServer) PublicAddresses() []netip.AddrPort { return s.public }

// LocalAddrs returns the bound address of every shard's socket.
func (s *ShardedServer) LocalAddrs() []netip.AddrPort {
	out := make([]netip.AddrPort, len(s.shards))
	for i, sh := range s.shards {
		out[i] = sh.conn.LocalAddr()
	}
	return out
}

// NumShards returns the number of shards (sockets).
func (s *ShardedServer) NumShards() int { return len(s.shards) }

// MaxClients returns the number of client slots.
func (s *ShardedServer) MaxClients() int { return len(s.slots) }

// NumConnectedClients returns the number of connected clients.
func (s *ShardedServer) NumConnectedClients() int { return s.adm.connected() }

// ClientShard returns the shard that owns slot i, or -1 if it is free.
func (s *ShardedServer) ClientShard(i int) int {
	if i < 0 || i >= len(s.owner) {
		return -1
	}
	v := s.owner[i].Load()
	return int(v&0xffffffff) - 1
}

// Stats returns each shard's counters as of the end of its last loop pass
// (one batch, or one idle wake, ago).
func (s *ShardedServer) Stats() []ShardedStats {
	return s.AppendStats(make([]ShardedStats, 0, len(s.shards)))
}

// AppendStats appends each shard's counters to dst, like Stats without
// allocating when dst has room.
func (s *ShardedServer) AppendStats(dst []ShardedStats) []ShardedStats {
	for _, sh := range s.shards {
		sh.statsMu.Lock()
		st := sh.snapshot
		sh.statsMu.Unlock()
		st.OutboxFull = sh.outboxFull.Load()
		if k, ok := batchio.As[batchio.Shedder](sh.sock); ok {
			st.KernelDrops = k.KernelDrops()
		}
		dst = append(dst, st)
	}
	return dst
}

// Poll calls fn for each event the shards have queued, at most one
// inbox's worth of payloads per shard, and returns how many it handled.
// Each shard's events come in the order the shard produced them (a
// client's connect before its payloads, its payloads before its
// disconnect). Application goroutine only; ev and its Payload are valid
// only during fn.
func (s *ShardedServer) Poll(fn func(ev *Event)) int {
	handled := 0
	for _, sh := range s.shards {
		for range sh.inbox.Cap() + sh.events.Cap() {
			p, hasPayload := sh.inbox.Front()
			e, hasEvent := sh.events.Front()
			switch {
			case hasEvent && (!hasPayload || e.order < p.order):
				s.ev = Event{Kind: e.kind, ClientIndex: int(e.client), ClientID: e.clientID, Reason: e.reason}
				fn(&s.ev)
				sh.events.Release()
			case hasPayload:
				s.ev = Event{Kind: EventPayload, ClientIndex: int(p.client), Sequence: p.seq, Payload: p.data[:p.n]}
				fn(&s.ev)
				s.ev.Payload = nil
				sh.inbox.Release()
			default:
				goto next
			}
			handled++
		}
	next:
	}
	return handled
}

// WaitEvents blocks until a shard has queued something for Poll, the
// deadline passes, or the server is closed. Application goroutine only.
func (s *ShardedServer) WaitEvents(deadline time.Time) {
	for _, sh := range s.shards {
		if sh.inbox.Len() > 0 || sh.events.Len() > 0 {
			return
		}
	}
	d := time.Until(deadline)
	if d <= 0 || s.closed.Load() {
		return
	}
	if s.timer == nil {
		s.timer = time.NewTimer(d)
	} else {
		s.timer.Reset(d)
	}
	defer s.timer.Stop()
	select {
	case <-s.events:
	case <-s.timer.C:
	}
}

// route finds the shard and connection generation of slot i.
func (s *ShardedServer) route(i int) (*shard, uint32, error) {
	if i < 0 || i >= len(s.owner) {
		return nil, 0, fmt.Errorf("%w: %d; want 0 to %d", ErrSlotIndex, i, len(s.owner)-1)
	}
	v := s.owner[i].Load()
	if v == 0 {
		return nil, 0, ErrSlotNotConnected
	}
	return s.shards[int(v&0xffffffff)-1], uint32(v >> 32), nil
}

// SendPacket queues a payload (1 to 1200 bytes) for the client in slot i;
// its shard seals and sends it. Application goroutine only.
func (s *ShardedServer) SendPacket(i int, payload []byte) error {
	if len(payload) < 1 || len(payload) > codec.MaxPayloadBytes {
		return codec.ErrPayloadSize
	}
	sh, gen, err := s.route(i)
	if err != nil {
		return err
	}
	return sh.queue(outSend, int32(i), gen, payload)
}

// Broadcast queues a payload for every connected client: one outbox entry
// per shard, which sends it to each of its clients. Application goroutine
// only.
func (s *ShardedServer) Broadcast(payload []byte) error {
	if len(payload) < 1 || len(payload) > codec.MaxPayloadBytes {
		return codec.ErrPayloadSize
	}
	var errs []error
	for _, sh := range s.shards {
		if err := sh.queue(outBroadcast, -1, 0, payload); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// DisconnectClient asks the owning shard to disconnect slot i (with
// redundant disconnect packets). Application goroutine only.
func (s *ShardedServer) DisconnectClient(i int) error {
	sh, gen, err := s.route(i)
	if err != nil {
		return err
	}
	return sh.queue(outDisconnect, int32(i), gen, nil)
}

// ErrOutboxFull is returned when a shard's outbox has no room: the
// application sends faster than the shard can.
var ErrOutboxFull = errors.New("netcode: shard outbox full")

// Close stops the shards (each disconnects its clients) and closes the
// sockets. It returns when every shard goroutine has exited.
func (s *ShardedServer) Close() error {
	if s.closed.Swap(true) {
		return nil
	}
	for _, sh := range s.shards {
		sh.closing.Store(true)
		if sh.waker != nil {
			sh.waker.Wake()
		}
	}
	s.wg.Wait()
	var errs []error
	for _, sh := range s.shards {
		errs = append(errs, sh.conn.Close())
		if sh.sock != sh.conn {
			errs = append(errs, sh.sock.Close()) // a no-op if the wrapper closed it
		}
	}
	return errors.Join(errs...)
}

// queue puts work for the shard in its outbox and wakes the shard if it is
// parked. Application goroutine only.
func (sh *shard) queue(kind outboxKind, client int32, gen uint32, payload []byte) error {
	e, ok := sh.outbox.Reserve()
	if !ok {
		sh.outboxFull.Add(1)
		return ErrOutboxFull
	}
	e.kind, e.client, e.gen = kind, client, gen
	e.n = int32(copy(e.data[:], payload))
	sh.outbox.Commit()
	if sh.parked.Load() && sh.waker != nil {
		sh.waker.Wake()
	}
	return nil
}

// run is the shard goroutine.
func (sh *shard) run() {
	defer sh.owner.wg.Done()
	if sh.lock {
		runtime.LockOSThread()
		defer runtime.UnlockOSThread()
	}
	srv := sh.srv
	for !sh.closing.Load() {
		now := time.Now()
		sh.loops++
		in := srv.stats.PacketsIn
		sh.pushed, sh.outWork = false, false
		sh.drainOutbox(now)
		srv.Update(now) // receive, timers, flush
		if sh.pushed {
			select {
			case sh.owner.events <- struct{}{}:
			default:
			}
		}
		// Publish after every pass: once per batch (or per idle timer
		// wake), an uncontended lock and a small copy, so Stats is never
		// more than one batch old.
		sh.publish()
		if srv.stats.PacketsIn != in || sh.outWork {
			if sh.pushed {
				// The application goroutine may share this P (GOMAXPROCS
				// = shards is common, 1 in netbench's server): without a
				// turn it would wait for the socket to run dry, which a
				// flood never lets happen, or for preemption, and replies
				// would wait with it.
				runtime.Gosched()
			}
			continue
		}
		// Nothing came in and nothing was queued: park until a datagram,
		// the next timer scan or a Wake from the application.
		sh.parked.Store(true)
		if _, ok := sh.outbox.Front(); ok {
			sh.parked.Store(false)
			continue
		}
		sh.parks++
		err := sh.conn.WaitRead(now.Add(timerScanInterval))
		sh.parked.Store(false)
		if errors.Is(err, batchio.ErrClosed) {
			break
		}
	}
	srv.Stop(time.Now())
	sh.publish()
}

// drainOutbox applies the application's queued work.
func (sh *shard) drainOutbox(now time.Time) {
	srv := sh.srv
	srv.setNow(now)
	for range sh.outbox.Cap() {
		e, ok := sh.outbox.Front()
		if !ok {
			return
		}
		sh.outWork = true
		switch e.kind {
		case outSend:
			i := int(e.client)
			// The slot is read only if this shard owns it; gen tells an old
			// connection's send from the current one's.
			if srv.owns(i) && srv.slots[i].gen == e.gen {
				_ = srv.SendPacket(i, e.data[:e.n])
			} else {
				sh.staleSends++
			}
		case outBroadcast:
			for _, i := range srv.active.items[:srv.active.n] {
				_ = srv.SendPacket(int(i), e.data[:e.n])
			}
		case outDisconnect:
			i := int(e.client)
			if srv.owns(i) && srv.slots[i].gen == e.gen {
				_ = srv.DisconnectClient(i, now)
			} else {
				sh.staleSends++
			}
		}
		sh.outbox.Release()
	}
}

// canAdmit reports whether the event ring has room for a new client's
// connect and its later disconnect, beyond what is kept for the clients
// the shard already has (producer side).
func (sh *shard) canAdmit() bool {
	return sh.events.Cap()-sh.events.Len() >= sh.reserved+2
}

func (sh *shard) deliver(i int32, sl *slot, payload []byte, seq uint64) bool {
	e, ok := sh.inbox.Reserve()
	if !ok {
		return false
	}
	sh.order++
	e.order, e.client, e.seq = sh.order, i, seq
	e.n = int32(copy(e.data[:], payload))
	sh.inbox.Commit()
	sh.pushed = true
	return true
}

// onConnect runs on the shard goroutine when the core admits a client.
func (sh *shard) onConnect(i int, clientID uint64) {
	gen := sh.srv.slots[i].gen
	sh.owner.owner[i].Store(uint64(gen)<<32 | uint64(sh.id+1))
	sh.reserved++
	sh.pushEvent(EventConnect, i, clientID, 0)
}

// onDisconnect runs on the shard goroutine when a slot is reset.
func (sh *shard) onDisconnect(i int, reason DisconnectReason) {
	sh.owner.owner[i].Store(0)
	sh.reserved--
	sh.pushEvent(EventDisconnect, i, 0, reason)
}

// pushEvent queues a connect or disconnect event; canAdmit kept room.
func (sh *shard) pushEvent(kind EventKind, i int, clientID uint64, reason DisconnectReason) {
	e, ok := sh.events.Reserve()
	if !ok {
		return // cannot happen: room is reserved
	}
	sh.order++
	e.order, e.kind, e.client, e.clientID, e.reason = sh.order, kind, int32(i), clientID, reason
	sh.events.Commit()
	sh.pushed = true
}

// publish copies the shard's counters where Stats can read them.
func (sh *shard) publish() {
	st := ShardedStats{
		ServerStats: sh.srv.stats, StaleSends: sh.staleSends,
		Loops: sh.loops, Parks: sh.parks, Connected: sh.srv.active.n,
	}
	if m, ok := batchio.As[batchio.StatsReader](sh.sock); ok {
		ms := m.Stats()
		st.RecvCalls, st.RecvPackets = ms.RecvCalls, ms.RecvPackets
		st.SendCalls, st.SendPackets = ms.SendCalls, ms.SendPackets
	}
	sh.statsMu.Lock()
	sh.snapshot = st
	sh.statsMu.Unlock()
}
