package engine

import (
	"crypto/rand"
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"time"

	"github.com/netcode-go/netcode/aead"
	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// Server limits.
const (
	// DefaultMaxClients is the slot count when ServerConfig.MaxClients is 0
	// (the reference's NETCODE_MAX_CLIENTS).
	DefaultMaxClients = 256
	// MaxServerClients is the largest MaxClients a server accepts.
	MaxServerClients = 1 << 16
	// MaxReceiveQueueLen is the largest per-client receive queue.
	MaxReceiveQueueLen = 1 << 16

	// maxQueueEntries bounds MaxClients * ReceiveQueueLen, the receive
	// queues' entries (16 bytes each: 256 MiB at the bound), which is
	// every slot at MaxServerClients with the default queue length.
	maxQueueEntries       = 1 << 24
	maxEncryptionMappings = 1 << 20
	maxTokenHistorySize   = 1 << 22
	maxReceiveBuffers     = 1 << 22
	// historyPerSlot is the default connect-token history per client slot,
	// as in the reference.
	historyPerSlot = 8

	// DefaultMaxConnectTokenLifetime is the restart rule's lifetime when
	// ServerConfig.MaxConnectTokenLifetime is 0 (the reference's default).
	DefaultMaxConnectTokenLifetime = 30 * time.Second
	// MaxConnectTokenLifetimeLimit is the largest MaxConnectTokenLifetime
	// a server accepts.
	MaxConnectTokenLifetimeLimit = 24 * time.Hour

	// recvBatchSize and sendBatchSize are the datagrams moved per
	// ReadBatch / WriteBatch call.
	recvBatchSize = 64
	sendBatchSize = 64
	// maxRecvBatches bounds the batches read from one conn per Update
	// (64 * 16 datagrams, a few milliseconds of work), so that a flood on a
	// socket that never drains delays keep-alives, timeouts and the flush
	// of sends by at most that much: the reference reads up to 64 * 256 per
	// update and can starve them. A busy loop calls Update again at once,
	// so throughput does not depend on it.
	maxRecvBatches = 16
	// shardRecvBatches is a shard's bound: a shard gives the application
	// goroutine a turn after every pass (see shard.run), so its passes are
	// kept short (256 datagrams, about a millisecond of bad requests under
	// a flood) to bound how long a payload waits for its reply.
	shardRecvBatches = 4
)

// DisconnectReason says why a client slot was reset.
type DisconnectReason uint8

// Disconnect reasons passed to ServerConfig.OnDisconnect.
const (
	// DisconnectTimedOut: nothing was received from the client within the
	// token's timeout.
	DisconnectTimedOut DisconnectReason = iota + 1
	// DisconnectClientDisconnected: the client sent a disconnect packet.
	DisconnectClientDisconnected
	// DisconnectServerKicked: the application called DisconnectClient or
	// DisconnectAll.
	DisconnectServerKicked
	// DisconnectServerStopped: the server was stopped or closed.
	DisconnectServerStopped
	// DisconnectLoopbackClosed: the application called
	// DisconnectLoopbackClient.
	DisconnectLoopbackClosed
)

var disconnectReasonText = [...]string{
	DisconnectTimedOut:           "timed out",
	DisconnectClientDisconnected: "client disconnected",
	DisconnectServerKicked:       "disconnected by server",
	DisconnectServerStopped:      "server stopped",
	DisconnectLoopbackClosed:     "loopback client disconnected",
}

func (r DisconnectReason) String() string {
	if int(r) < len(disconnectReasonText) && disconnectReasonText[r] != "" {
		return disconnectReasonText[r]
	}
	return fmt.Sprintf("DisconnectReason(%d)", uint8(r))
}

// ServerConfig configures a Server. Zero values select the defaults noted.
type ServerConfig struct {
	// ProtocolID identifies the game; requests for other ids are ignored.
	ProtocolID uint64
	// PrivateKey is the 32-byte key shared with the web backend.
	PrivateKey []byte
	// PublicAddresses are the server's own addresses as the web backend
	// writes them into connect tokens (the tokens' internal addresses). A
	// request is answered only if one of them is in its token. Empty means
	// the conns' local addresses, which is only possible when none is
	// unspecified (0.0.0.0, ::) or has port 0.
	PublicAddresses []netip.AddrPort
	// MaxClients is the number of client slots: 1 to MaxServerClients
	// (default DefaultMaxClients).
	MaxClients int
	// ReceiveQueueLen is each client's receive queue length, a power of two
	// up to MaxReceiveQueueLen (default ReceiveQueueSize); MaxClients ×
	// ReceiveQueueLen may be at most 2^24 (16 bytes each).
	ReceiveQueueLen int
	// ReceiveBuffers is the number of 1200-byte payload buffers shared by
	// all receive queues (default 4*MaxClients, at least 1024, at most
	// MaxClients*ReceiveQueueLen). A payload that finds none is dropped.
	ReceiveBuffers int
	// MaxEncryptionMappings bounds clients in the middle of a handshake
	// (default 2*MaxClients, at most 2^20).
	MaxEncryptionMappings int
	// TokenHistorySize is how many connect tokens the server remembers, each
	// until it expires, so that a token carries one session only (see
	// MaxConnectTokenLifetime). A token presented while every entry holds an
	// unexpired token is ignored (ServerDropTokenHistoryFull); nothing is
	// ever evicted. It should hold every token the web backend issues for
	// this server within one token lifetime. Default 8*MaxClients (as the
	// reference); allowed 1 to 2^22. 2048 entries take about 250 KiB.
	TokenHistorySize int
	// MaxConnectTokenLifetime is the longest lifetime (expire minus create)
	// of the tokens the web backend issues. At every start the server
	// ignores tokens that expire less than this after the start
	// (ServerDropTokenBeforeStart): any of them may have been issued before
	// the start and used with an earlier run whose history is gone. So a
	// freshly started server refuses tokens minted before it started, for
	// up to this long; tokens minted later with this lifetime are admitted.
	// Tokens issued with a longer lifetime weaken the rule. Default
	// DefaultMaxConnectTokenLifetime (30 s); allowed whole seconds from 1s
	// to MaxConnectTokenLifetimeLimit (24h).
	MaxConnectTokenLifetime time.Duration
	// TokenDecryptsPerSecond bounds how many connection requests per
	// second that pass the cheap checks (size, version, protocol id,
	// expiry) have their connect token decrypted, the most expensive work
	// an unauthenticated datagram can cause. Requests beyond it are dropped
	// before decryption (ServerDropRequestRate) like lost packets, and the
	// client's next request (10 Hz) tries again; so a flood of forged
	// requests costs the server a read and a few compares each instead of a
	// decryption, and connected clients keep their share of the core. Each
	// shard of a ShardedServer has its own budget. Default
	// DefaultTokenDecryptsPerSecond; -1 means no limit; allowed 1 to 2^24.
	TokenDecryptsPerSecond int
	// DisableRequestShedding turns off kernel shedding of connection-request
	// floods. By default, when a socket reads more than 4 ×
	// TokenDecryptsPerSecond connection requests per second (or its queue
	// stays full of them), the server has the kernel drop a random share
	// of them before they are queued (a socket filter; Linux sockets from
	// batchio only), keeping the requests it reads between 1 and 4 ×
	// TokenDecryptsPerSecond. Other packets are never shed, so a flood can
	// no longer fill the socket's queue and push out connected clients'
	// packets. Shedding is also off when TokenDecryptsPerSecond is -1.
	DisableRequestShedding bool
	// KeepAliveInterval is how long a connected client may go without a
	// packet from the server before it is sent a keep-alive: the server's
	// send rate when idle (default PacketSendInterval, 10 Hz; allowed 1 ms to
	// 10 s, and it should stay well below the tokens' timeout).
	KeepAliveInterval time.Duration
	// Clock reads the time where the caller gives none: the server's start
	// (the restart rule's bound) is Clock() at NewServer. nil means
	// time.Now; tests give a fake clock.
	Clock func() time.Time
	// Logger receives lifecycle events (start, stop, connect, disconnect);
	// nothing is logged per packet. nil discards.
	Logger *slog.Logger
	// OnConnect and OnDisconnect are called on the goroutine that calls
	// Update (or the API method that caused the event), after the slot has
	// been set up or reset.
	OnConnect    func(clientIndex int, clientID uint64)
	OnDisconnect func(clientIndex int, reason DisconnectReason)
	// SendLoopbackPacket receives what SendPacket sends to a loopback
	// client. Required to connect loopback clients.
	SendLoopbackPacket func(clientIndex int, payload []byte, sequence uint64)
}

// Errors returned by the Server API.
var (
	ErrSlotIndex         = errors.New("netcode: client index out of range")
	ErrSlotNotConnected  = errors.New("netcode: client slot is not connected")
	ErrSlotInUse         = errors.New("netcode: client slot is already connected")
	ErrSlotIsLoopback    = errors.New("netcode: client slot holds a loopback client")
	ErrSlotNotLoopback   = errors.New("netcode: client slot does not hold a loopback client")
	ErrClientIDInUse     = errors.New("netcode: a client with this id is already connected")
	ErrNoLoopbackSender  = errors.New("netcode: ServerConfig.SendLoopbackPacket is nil; loopback clients need it")
	ErrReceiveQueueFull  = errors.New("netcode: client receive queue or receive buffer pool is full")
	ErrServerStopped     = errors.New("netcode: server stopped")
	errNoConns           = errors.New("netcode: server needs at least one conn")
	errPublicUnspecified = errors.New("netcode: ServerConfig.PublicAddresses is required when a conn is bound to an unspecified address or port 0")
)

// Server is a netcode dedicated server. It is driven by one goroutine: the
// owner calls Update(now) in its loop and the API methods from the same
// goroutine; the server starts no goroutines. Everything the per-packet path
// touches is allocated by NewServer.
type Server struct {
	cfg         ServerConfig
	log         *slog.Logger
	conns       []batchio.Conn
	recvBatches int            // batches read per conn per Update
	owned       []batchio.Conn // opened by ListenServer; closed by Close
	public      []netip.AddrPort

	tokenKey     *aead.TokenKey
	challengeKey *aead.ChallengeKey
	challengeID  [aead.KeyBytes]byte // the challenge key, kept for tests
	challengeSeq uint64
	// startedAt is when this run of the server started: NewServer (Clock)
	// or Start. minExpire is the restart rule's bound: requests whose token
	// expires before it are ignored.
	startedAt time.Time
	minExpire uint64
	// loggedBeforeStart: the restart rule's refusal was logged this run.
	loggedBeforeStart bool

	// slots may be shared with other shards: this server touches only the
	// slots it admitted (listed in active) and takes and frees them through
	// adm, which holds the global state (client ids, used tokens, free
	// slots).
	slots  []slot
	adm    *admission
	active partition // this server's connected slots first
	// sink, when set (a shard of a ShardedServer), takes received payloads
	// instead of the per-slot queues.
	sink   payloadSink
	byAddr oaTable[netip.AddrPort]
	maps   mappingTable

	pool     []byte  // ReceiveBuffers * MaxPayloadBytes
	freeBufs []int32 // stack of free pool buffers

	rx  []batchio.Message
	out []sendBatch

	// Scratch for one packet; reused so the per-packet path does not
	// allocate.
	rp      codec.ReadParams
	pkt     codec.Packet
	priv    codec.PrivateToken
	chal    codec.ChallengeToken
	chalBuf [codec.ChallengeTokenBytes]byte
	// decrypts rations connect-token decryptions (TokenDecryptsPerSecond).
	decrypts tokenBucket
	// shed is each conn's kernel shedding of request floods (shed.go).
	shed         []requestShedder
	shedReadRate float64

	now     time.Time
	nowUnix uint64
	stopped bool
	// lastScan is when the per-slot timers last ran (see timerScanInterval).
	lastScan time.Time
	stats    ServerStats
}

// payloadSink receives what a shard hands to the application.
type payloadSink interface {
	// deliver hands over a payload from slot i; false means no room.
	deliver(i int32, sl *slot, payload []byte, seq uint64) bool
	// canAdmit reports whether a new client's events would fit.
	canAdmit() bool
}

// owns reports whether slot i is connected through this server.
func (s *Server) owns(i int) bool {
	return i >= 0 && i < len(s.active.pos) && s.active.pos[i] < int32(s.active.n)
}

// sendBatch is the outgoing datagrams of one conn, flushed with WriteBatch.
type sendBatch struct {
	conn batchio.Conn
	msgs []batchio.Message
	n    int
}

func (c *ServerConfig) normalize(conns []batchio.Conn) error {
	if len(c.PrivateKey) != codec.KeyBytes {
		return fmt.Errorf("netcode: server config: PrivateKey is %d bytes; want %d", len(c.PrivateKey), codec.KeyBytes)
	}
	if c.MaxClients == 0 {
		c.MaxClients = DefaultMaxClients
	}
	if c.MaxClients < 1 || c.MaxClients > MaxServerClients {
		return fmt.Errorf("netcode: server config: MaxClients %d; allowed 1 to %d (0 means %d)", c.MaxClients, MaxServerClients, DefaultMaxClients)
	}
	if c.ReceiveQueueLen == 0 {
		c.ReceiveQueueLen = ReceiveQueueSize
	}
	if q := c.ReceiveQueueLen; q < 1 || q > MaxReceiveQueueLen || q&(q-1) != 0 {
		return fmt.Errorf("netcode: server config: ReceiveQueueLen %d; want a power of two from 1 to %d (0 means %d)", q, MaxReceiveQueueLen, ReceiveQueueSize)
	}
	if n := c.MaxClients * c.ReceiveQueueLen; n > maxQueueEntries {
		return fmt.Errorf("netcode: server config: MaxClients %d × ReceiveQueueLen %d is %d queue entries; allowed at most %d (lower either)", c.MaxClients, c.ReceiveQueueLen, n, maxQueueEntries)
	}
	if c.ReceiveBuffers == 0 {
		c.ReceiveBuffers = min(max(4*c.MaxClients, 1024), c.MaxClients*c.ReceiveQueueLen)
	}
	if c.ReceiveBuffers < 1 || c.ReceiveBuffers > maxReceiveBuffers {
		return fmt.Errorf("netcode: server config: ReceiveBuffers %d; allowed 1 to %d (0 means 4*MaxClients)", c.ReceiveBuffers, maxReceiveBuffers)
	}
	if c.KeepAliveInterval == 0 {
		c.KeepAliveInterval = PacketSendInterval
	}
	if c.KeepAliveInterval < time.Millisecond || c.KeepAliveInterval > 10*time.Second {
		return fmt.Errorf("netcode: server config: KeepAliveInterval %v; allowed 1ms to 10s (0 means %v)", c.KeepAliveInterval, PacketSendInterval)
	}
	if c.MaxEncryptionMappings == 0 {
		c.MaxEncryptionMappings = 2 * c.MaxClients
	}
	if c.MaxEncryptionMappings < 1 || c.MaxEncryptionMappings > maxEncryptionMappings {
		return fmt.Errorf("netcode: server config: MaxEncryptionMappings %d; allowed 1 to %d (0 means 2*MaxClients)", c.MaxEncryptionMappings, maxEncryptionMappings)
	}
	if c.TokenHistorySize == 0 {
		c.TokenHistorySize = historyPerSlot * c.MaxClients
	}
	if c.TokenHistorySize < 1 || c.TokenHistorySize > maxTokenHistorySize {
		return fmt.Errorf("netcode: server config: TokenHistorySize %d; allowed 1 to %d (0 means %d*MaxClients)", c.TokenHistorySize, maxTokenHistorySize, historyPerSlot)
	}
	if c.MaxConnectTokenLifetime == 0 {
		c.MaxConnectTokenLifetime = DefaultMaxConnectTokenLifetime
	}
	if l := c.MaxConnectTokenLifetime; l < time.Second || l > MaxConnectTokenLifetimeLimit || l%time.Second != 0 {
		return fmt.Errorf("netcode: server config: MaxConnectTokenLifetime %v; allowed whole seconds from 1s to %v (0 means %v)", l, MaxConnectTokenLifetimeLimit, DefaultMaxConnectTokenLifetime)
	}
	if c.TokenDecryptsPerSecond == 0 {
		c.TokenDecryptsPerSecond = DefaultTokenDecryptsPerSecond
	}
	if c.TokenDecryptsPerSecond != -1 && (c.TokenDecryptsPerSecond < 1 || c.TokenDecryptsPerSecond > maxTokenDecryptsPerSecond) {
		return fmt.Errorf("netcode: server config: TokenDecryptsPerSecond %d; allowed 1 to %d, or -1 for no limit (0 means %d)", c.TokenDecryptsPerSecond, maxTokenDecryptsPerSecond, DefaultTokenDecryptsPerSecond)
	}
	if len(conns) == 0 {
		return errNoConns
	}
	for i, conn := range conns {
		if conn == nil {
			return fmt.Errorf("netcode: server conn %d is nil", i)
		}
	}
	if len(c.PublicAddresses) == 0 {
		pub := make([]netip.AddrPort, 0, len(conns))
		for _, conn := range conns {
			a := conn.LocalAddr()
			if !a.IsValid() || a.Addr().IsUnspecified() || a.Port() == 0 {
				return fmt.Errorf("%w (conn bound to %v)", errPublicUnspecified, a)
			}
			pub = append(pub, netip.AddrPortFrom(a.Addr().WithZone(""), a.Port()))
		}
		c.PublicAddresses = pub
	} else {
		c.PublicAddresses = append([]netip.AddrPort(nil), c.PublicAddresses...)
	}
	for i, a := range c.PublicAddresses {
		if err := codec.CheckAddress(a); err != nil {
			return fmt.Errorf("netcode: server config: PublicAddresses[%d] %v: %w", i, a, err)
		}
		if a.Addr().IsUnspecified() || a.Port() == 0 {
			return fmt.Errorf("netcode: server config: PublicAddresses[%d] %v is unspecified; want the address clients' tokens name", i, a)
		}
	}
	return nil
}

// NewServer starts a server on one or more conns, for example an IPv4 and
// an IPv6 socket: each reply goes out the conn its request came in on. The
// server does not close conns it was given.
func NewServer(cfg ServerConfig, conns ...batchio.Conn) (*Server, error) {
	if err := cfg.normalize(conns); err != nil {
		return nil, err
	}
	slots, err := newSlots(cfg.MaxClients, cfg.ReceiveQueueLen)
	if err != nil {
		return nil, err
	}
	s, err := newServer(cfg, conns, slots, newAdmission(cfg.MaxClients, cfg.TokenHistorySize))
	if err != nil {
		return nil, err
	}
	s.start(cfg.now())
	return s, nil
}

func (c *ServerConfig) now() time.Time {
	if c.Clock != nil {
		return c.Clock()
	}
	return time.Now()
}

// newSlots allocates the client slots.
func newSlots(n, queueLen int) ([]slot, error) {
	slots := make([]slot, n)
	for i := range slots {
		if err := slots[i].queue.Init(queueLen); err != nil {
			return nil, err
		}
		slots[i].replay.Reset()
	}
	return slots, nil
}

// newServer builds a server on slots and admission state that other
// servers (shards) may share.
func newServer(cfg ServerConfig, conns []batchio.Conn, slots []slot, adm *admission) (*Server, error) {
	s := &Server{cfg: cfg, log: cfg.Logger, conns: append([]batchio.Conn(nil), conns...), public: cfg.PublicAddresses,
		recvBatches: maxRecvBatches}
	if s.log == nil {
		s.log = slog.New(slog.DiscardHandler)
	}
	var err error
	if s.tokenKey, err = aead.NewTokenKey(cfg.PrivateKey); err != nil {
		return nil, err
	}
	if err := s.newChallengeKey(); err != nil {
		return nil, err
	}

	n := cfg.MaxClients
	s.slots = slots
	s.adm = adm
	s.active.init(n)
	s.byAddr.init(n, newAddrHash())
	s.maps.init(cfg.MaxEncryptionMappings)
	s.decrypts.init(cfg.TokenDecryptsPerSecond, time.Time{})
	s.initShedding(conns)

	s.pool = make([]byte, cfg.ReceiveBuffers*codec.MaxPayloadBytes)
	s.freeBufs = make([]int32, cfg.ReceiveBuffers)
	for i := range s.freeBufs {
		s.freeBufs[i] = int32(cfg.ReceiveBuffers - 1 - i)
	}

	s.rx = batchio.NewMessages(recvBatchSize, codec.MaxPacketBytes)
	s.out = make([]sendBatch, len(conns))
	for c := range s.out {
		s.out[c] = sendBatch{conn: conns[c], msgs: batchio.NewMessages(sendBatchSize, codec.MaxPacketBytes)}
	}

	s.rp = codec.ReadParams{Role: codec.RoleServer, ProtocolID: cfg.ProtocolID, TokenKey: s.tokenKey}
	return s, nil
}

// newChallengeKey makes a new random challenge key, at every start:
// challenge sequences restart at 0 and must never meet a key they were
// used with.
func (s *Server) newChallengeKey() error {
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

// start begins a run of the server at now: the restart rule's bound is
// computed from it.
func (s *Server) start(now time.Time) {
	s.startedAt = now
	s.minExpire = unixSeconds(now) + uint64(s.cfg.MaxConnectTokenLifetime/time.Second)
	s.loggedBeforeStart = false
	s.log.Info("netcode server started",
		slog.Any("public", s.public), slog.Int("conns", len(s.conns)),
		slog.Int("max_clients", len(s.slots)), slog.Uint64("protocol_id", s.cfg.ProtocolID),
		slog.Duration("max_connect_token_lifetime", s.cfg.MaxConnectTokenLifetime))
}

// Start starts a stopped server again at now, like the reference's
// netcode_server_start after netcode_server_stop: with a new challenge key,
// a new restart-rule bound and empty slots. The connect-token history is
// kept (the reference clears it): every token consumed before the stop
// stays refused whatever its lifetime, so stopping and starting a server
// can never let a token carry a second session. Start on a running server
// returns an error.
func (s *Server) Start(now time.Time) error {
	if !s.stopped {
		return errors.New("netcode: Start: the server is running; Stop it first")
	}
	if err := s.newChallengeKey(); err != nil {
		return err
	}
	s.decrypts.init(s.cfg.TokenDecryptsPerSecond, time.Time{})
	for i := range s.shed {
		s.shed[i] = requestShedder{conn: s.shed[i].conn} // new windows, same sockets
	}
	s.stopped = false
	s.setNow(now)
	s.start(now)
	return nil
}

// Update reads every datagram waiting on the conns and processes it, sends
// keep-alives, times out silent clients and stale encryption mappings, then
// flushes the datagrams it queued. now is the caller's clock; the server
// never reads the time itself.
func (s *Server) Update(now time.Time) {
	if s.stopped {
		return
	}
	s.setNow(now)
	s.receive(now)
	// The timer scans touch every connected slot; a busy server calls Update
	// thousands of times a second, and 10 Hz keep-alives and timeouts in
	// seconds don't need more than one scan per timerScanInterval.
	if d := now.Sub(s.lastScan); d >= timerScanInterval || d < 0 {
		s.lastScan = now
		s.sendKeepAlives(now)
		s.checkTimeouts(now)
		s.maps.expire(now)
		s.adm.sweepHistory(s.nowUnix)
	}
	s.adjustShedding(now)
	s.flush()
}

// timerScanInterval is the most often Update scans the slots for
// keep-alives, timeouts and expired encryption mappings. It bounds how late a
// keep-alive can be (a tenth of the 10 Hz interval).
const timerScanInterval = PacketSendInterval / 10

func (s *Server) setNow(now time.Time) {
	s.now = now
	s.nowUnix = unixSeconds(now)
}

func unixSeconds(t time.Time) uint64 {
	return uint64(max(t.Unix(), 0))
}

// receive drains the conns in batches.
func (s *Server) receive(now time.Time) {
	for sock, conn := range s.conns {
		for range s.recvBatches {
			n, err := conn.ReadBatch(s.rx)
			n = min(max(n, 0), len(s.rx))
			shed := &s.shed[sock]
			shed.read += uint64(n)
			for i := range n {
				m := &s.rx[i]
				if m.N > 0 && m.Buf[0] == 0 {
					shed.seen++ // a connection request
				}
				s.processPacket(sock, m.Buf[:m.N], m.Addr, now)
			}
			if err != nil {
				s.stats.ReadErrors++
				break
			}
			if n == 0 {
				shed.drained = true
				break
			}
		}
	}
}

// Stop disconnects every client (NumDisconnectPackets disconnect packets to
// each network client), resets all slots with DisconnectServerStopped,
// forgets handshakes in progress and flushes. Afterwards Update does nothing
// and SendPacket fails until Start. The connect-token history is kept.
func (s *Server) Stop(now time.Time) {
	if s.stopped {
		return
	}
	s.setNow(now)
	for k := s.active.n - 1; k >= 0; k-- {
		if k >= s.active.n {
			continue // a callback changed the set
		}
		i := int(s.active.items[k])
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
	s.log.Info("netcode server stopped", slog.Any("public", s.public))
}

// Close stops the server at time.Now() and closes the conns it opened
// (ListenServer); conns given to NewServer stay open.
func (s *Server) Close() error {
	s.Stop(time.Now())
	var errs []error
	for _, c := range s.owned {
		if err := c.Close(); err != nil {
			errs = append(errs, err)
		}
	}
	s.owned = nil
	return errors.Join(errs...)
}

// Conns returns the server's conns, for the owner's WaitRead.
func (s *Server) Conns() []batchio.Conn { return s.conns }

// PublicAddresses returns the addresses the server checks tokens against.
func (s *Server) PublicAddresses() []netip.AddrPort {
	return append([]netip.AddrPort(nil), s.public...)
}

// MaxClients returns the number of slots.
func (s *Server) MaxClients() int { return len(s.slots) }

// NumConnectedClients returns the number of occupied slots.
func (s *Server) NumConnectedClients() int { return s.active.n }

// Stats returns a copy of the counters.
func (s *Server) Stats() ServerStats { return s.stats }

// ClientConnected reports whether slot clientIndex holds a client.
func (s *Server) ClientConnected(clientIndex int) bool {
	return clientIndex >= 0 && clientIndex < len(s.slots) && s.slots[clientIndex].connected
}

// ClientID returns the client id in slot clientIndex (0 if empty).
func (s *Server) ClientID(clientIndex int) uint64 {
	if !s.ClientConnected(clientIndex) {
		return 0
	}
	return s.slots[clientIndex].clientID
}

// ClientAddress returns the address of the client in slot clientIndex; it
// is the zero value for empty slots and loopback clients.
func (s *Server) ClientAddress(clientIndex int) netip.AddrPort {
	if !s.ClientConnected(clientIndex) {
		return netip.AddrPort{}
	}
	return s.slots[clientIndex].addr
}

// ClientUserData returns the 256 bytes of user data from the client's
// connect token (zero for empty slots).
func (s *Server) ClientUserData(clientIndex int) [codec.UserDataBytes]byte {
	if !s.ClientConnected(clientIndex) {
		return [codec.UserDataBytes]byte{}
	}
	return s.slots[clientIndex].userData
}

// checkSlot returns the connected slot clientIndex or an error saying why
// there is none.
func (s *Server) checkSlot(clientIndex int) (*slot, error) {
	if clientIndex < 0 || clientIndex >= len(s.slots) {
		return nil, fmt.Errorf("%w: %d; want 0 to %d", ErrSlotIndex, clientIndex, len(s.slots)-1)
	}
	sl := &s.slots[clientIndex]
	if !sl.connected {
		return nil, fmt.Errorf("%w: %d", ErrSlotNotConnected, clientIndex)
	}
	return sl, nil
}

// SendPacket sends a payload of 1 to 1200 bytes to a connected client. It is
// sealed straight into the outgoing batch, which Update (or Flush) sends.
// While the client has not confirmed its slot, a keep-alive goes first so
// that it learns its client index.
func (s *Server) SendPacket(clientIndex int, payload []byte) error {
	if s.stopped {
		return ErrServerStopped
	}
	sl, err := s.checkSlot(clientIndex)
	if err != nil {
		return err
	}
	if len(payload) < 1 || len(payload) > codec.MaxPayloadBytes {
		return fmt.Errorf("%w, got %d", codec.ErrPayloadSize, len(payload))
	}
	if sl.loopback {
		seq := sl.sequence
		sl.sequence++
		s.cfg.SendLoopbackPacket(clientIndex, payload, seq)
		return nil
	}
	if !sl.confirmed {
		s.sendKeepAlive(clientIndex)
	}
	buf := s.outBuf(sl.sock)
	n, err := codec.WritePayloadPacket(buf, sl.sequence, payload, sl.sendKey)
	if err != nil {
		return err
	}
	sl.sequence++
	sl.lastSend = s.now
	s.commit(sl.sock, n, sl.addr)
	return nil
}

// ReceivePacket copies the oldest queued payload from the client into dst
// and returns its length and sequence. ok is false when nothing is queued.
// dst should hold codec.MaxPayloadBytes; a longer payload is truncated to
// len(dst) and n still reports its full length.
func (s *Server) ReceivePacket(clientIndex int, dst []byte) (n int, sequence uint64, ok bool) {
	if !s.ClientConnected(clientIndex) {
		return 0, 0, false
	}
	e, ok := s.slots[clientIndex].queue.Pop()
	if !ok {
		return 0, 0, false
	}
	off := int(e.buf) * codec.MaxPayloadBytes
	copy(dst, s.pool[off:off+int(e.n)])
	s.freeBufs = append(s.freeBufs, e.buf)
	return int(e.n), e.seq, true
}

// Flush sends the datagrams queued by SendPacket now instead of at the end
// of the next Update.
func (s *Server) Flush() { s.flush() }

// outBuf returns the buffer for the next datagram to conn sock, flushing the
// batch first if it is full.
func (s *Server) outBuf(sock int) []byte {
	b := &s.out[sock]
	if b.n == len(b.msgs) {
		s.flushConn(sock)
	}
	return b.msgs[b.n].Buf
}

// commit queues the n bytes written into outBuf(sock) for to.
func (s *Server) commit(sock, n int, to netip.AddrPort) {
	b := &s.out[sock]
	m := &b.msgs[b.n]
	m.N = n
	m.Addr = to
	b.n++
}

func (s *Server) flush() {
	for sock := range s.out {
		s.flushConn(sock)
	}
}

func (s *Server) flushConn(sock int) {
	b := &s.out[sock]
	if b.n == 0 {
		return
	}
	// One call: WriteBatch tries every datagram and drops (and counts) what
	// it cannot send; sending any of them again could duplicate it.
	n, _ := b.conn.WriteBatch(b.msgs[:b.n])
	n = min(max(n, 0), b.n)
	bytes := 0
	for _, m := range b.msgs[:b.n] {
		bytes += m.N
	}
	if n < b.n {
		// Which ones failed is the conn's to know; count the bytes of the
		// ones reported sent as a share of the batch.
		bytes = bytes * n / b.n
	}
	s.stats.PacketsOut += uint64(n)
	s.stats.BytesOut += uint64(bytes)
	s.stats.SendFailures += uint64(b.n - n)
	b.n = 0
}
