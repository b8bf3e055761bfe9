//go:build linux

package bench

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net/netip"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/HdrHistogram/hdrhistogram-go"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/reliable"
)

// Load limits and defaults.
const (
	// maxSendBurst is the most payloads one client sends in one wake-up
	// when it is behind its schedule; beyond that it skips sends and counts
	// them as send lag, so that a slow load generator shows up in the report
	// instead of as a burst that distorts the server's numbers.
	maxSendBurst = 32
	// maxInputBurst is maxSendBurst for a game's inputs: a player's
	// input is stale a tick later, and a load that the machine starved
	// for a moment must not answer with a flood of old inputs.
	maxInputBurst = 2
	// maxLoadShards bounds the histograms: one per group of clients.
	maxLoadShards = 16
	// maxLoadWorkers bounds LoadConfig.Workers.
	maxLoadWorkers = 64
	// clientSocketBuffer is each client socket's buffer size.
	clientSocketBuffer = 256 << 10
	// clientQueue is each engine client's receive queue in echo mode; the
	// goroutine drains it at every wake-up. A game client gets one
	// snapshot per tick and needs less (gameClientQueue), which keeps
	// thousands of clients' memory down.
	clientQueue     = 64
	gameClientQueue = 8
	// fullPathEvery is how often a client that does not open its replies
	// (LoadConfig.SampleEvery) still hands one to its engine client, which
	// would otherwise time the connection out. fullPathSpread spreads the
	// clients' turns: clients that opened a reply at the same moment (at a
	// window's start) would otherwise all open one in the same tick a
	// second later, and every second after.
	fullPathEvery  = time.Second
	fullPathSpread = fullPathEvery / 2
	// lateLimit is how long after a game window's end a snapshot sent in
	// it is still counted.
	lateLimit = time.Second
	// updateEvery is how often a shared-socket client that got nothing
	// runs its engine client's update (timers: keep-alives at 10 Hz,
	// timeouts in seconds) when it wakes only to send; its payloads go
	// out at once all the same.
	updateEvery = 50 * time.Millisecond
	// connectSpacing paces the start of clients: connectGroup clients per
	// connectSpacing, so that thousands of 1078-byte requests do not
	// overflow the server's socket buffer at once.
	connectGroup   = 64
	connectSpacing = 2 * time.Millisecond
)

// LoadMode selects what the load's clients do.
type LoadMode int

const (
	// LoadEcho: connect once, then send stamped payloads at the rate set by
	// BeginWindow and time their echoes.
	LoadEcho LoadMode = iota
	// LoadHandshake: connect, and as soon as connected disconnect and
	// connect again; the histogram times connect-to-connected.
	LoadHandshake
	// LoadGame: the server sends snapshots (stamped as PutSnapshotStamp
	// describes) at its tick rate to every connected client; the clients
	// send stamped inputs at the rate set by BeginWindow and count and
	// time the snapshots sent within the window.
	LoadGame
)

// LoadConfig configures a Load.
type LoadConfig struct {
	// Server is the address the clients connect to (also the address in
	// their connect tokens).
	Server netip.AddrPort
	// PrivateKey and ProtocolID mint the connect tokens; they must be the
	// server's.
	PrivateKey []byte
	ProtocolID uint64
	// Clients is the number of clients. The server tells clients apart by
	// address, so each needs its own: see Sockets.
	Clients int
	// PayloadBytes is the payload size (a game's input): StampBytes to
	// 1200, or with Reliable to its MaxPacketSize.
	PayloadBytes int
	// Mode selects echo, handshake or game load.
	Mode LoadMode
	// SnapshotBytes (LoadGame) is the size of the server's snapshots,
	// within the same bounds as PayloadBytes.
	SnapshotBytes int
	// TickHz (LoadGame) is the server's tick rate: it sizes the edges of
	// the window where every client opens its snapshots (SampleEvery).
	TickHz float64
	// Bare runs the protocol-free control: clients without netcode (see
	// BareServer), for an echo or game load.
	Bare bool
	// Reliable gives every client a reliable endpoint with this config
	// (engine.ClientConfig.Reliable; the server needs them too). Acks work
	// only when every packet goes through the endpoint, so every client
	// then opens every reply: SampleEvery does not apply.
	Reliable *reliable.Config
	// SampleEvery makes only every SampleEvery-th client (index 0, N,
	// 2N, ...) open and time every reply; the others count their replies
	// by address, size and clear packet sequence, opening one a second
	// (to stay connected) and, in game mode, those that arrive near the
	// window's edges (to place them in or out of it). Every client still
	// runs the full protocol: handshake, sealed payloads, keep-alives, so
	// the server's work is the same. 0 or 1: every client opens
	// everything. Shared sockets only: with per-client sockets, or with
	// Reliable, every client opens everything.
	SampleEvery int
	// Active is how many clients (the first ones) connect at Start; 0
	// means all. SetActive changes it.
	Active int

	// Bind is the local address of the client sockets; the zero value is
	// the loopback address of Server's family.
	Bind netip.Addr
	// ClientIDBase is the first client id (0 means 1).
	ClientIDBase uint64
	// TimeoutSeconds is the tokens' connection timeout (0 means 10).
	TimeoutSeconds int32
	// ExpireSeconds is the tokens' life (0 means the servers' default
	// MaxConnectTokenLifetime, 30 s). Each handshake gets a token minted
	// as it begins, so a token from before the server started is never
	// used (the restart rule) and none carries two sessions.
	ExpireSeconds int64
	// Sockets selects how clients get their addresses (default
	// SocketsAuto).
	Sockets LoadSockets
	// ClientNet is the IPv4 block (a /8 or /16) shared sockets give their
	// clients addresses from; it must be routed to the load as local (as
	// 127.0.0.0/8 is, and as scripts/testbed.sh routes 198.19.0.0/16).
	// Zero: 127.0.0.0/8, for a server on IPv4 loopback.
	ClientNet netip.Prefix
	// Workers is how many goroutines drive the clients when they share
	// sockets (0: GOMAXPROCS, and no more than one per 64 clients).
	Workers int
	// PresealLimit, when more than 0, has BeginWindow seal every payload
	// of a closed window ahead (see preseal.go), holding at most this
	// many bytes of them; a window that would need more is refused. Shared
	// sockets, netcode (not Bare) and no Reliable only; 0 seals each
	// payload as it is sent.
	PresealLimit int64
	// SendGrid, when more than 0, rounds each client's place in the
	// send interval down to a multiple of it: instead of one datagram
	// every interval/clients, the load sends a batch of about
	// clients×SendGrid/interval every SendGrid, one wake and one
	// sendmmsg (or AF_XDP kick) for the batch. The stamps carry the
	// grid's times. 0 to 10ms; a grid over a tenth of the interval is
	// not used.
	SendGrid time.Duration
	// XDP puts the shared sockets on batchio's AF_XDP path (a Mode other
	// than XDPOff): the load's own datagrams then skip the kernel's UDP
	// stack, as the server's do with its own XDP config. Shared sockets
	// and one worker only, since an interface takes one AF_XDP group and
	// a veth end has one receive queue. With SampleEvery above 1 (echo
	// and game) the load sets XDP.Prefilter: its program counts and
	// drops the replies of the clients that do not open them
	// (kernelCounter).
	XDP batchio.XDP
	// Dial, if set, makes client i's conn instead of a UDP socket: clients
	// over another transport, such as WebTransport sessions for
	// browser-like players (netbench -webtransport). Each client then has
	// its own conn and goroutine (SocketsPerClient); the load closes the
	// conns.
	Dial func(i int) (batchio.Conn, error)
	// Logger receives lifecycle events; nil discards.
	Logger *slog.Logger
}

// LoadSockets selects how a load gives its clients distinct addresses.
type LoadSockets int

var loadSocketsNames = []string{"auto", "shared", "per-client"}

func (s LoadSockets) String() string {
	if s >= 0 && int(s) < len(loadSocketsNames) {
		return loadSocketsNames[s]
	}
	return fmt.Sprintf("LoadSockets(%d)", int(s))
}

// ParseLoadSockets parses "auto", "shared" or "per-client".
func ParseLoadSockets(s string) (LoadSockets, error) {
	for i, n := range loadSocketsNames {
		if n == s {
			return LoadSockets(i), nil
		}
	}
	return 0, fmt.Errorf("bench: sockets %q; want auto, shared or per-client", s)
}

const (
	// SocketsAuto shares sockets when the server is on IPv4 loopback and
	// Bind is not set, and gives each client its own otherwise.
	SocketsAuto LoadSockets = iota
	// SocketsShared gives each worker one socket bound to the IPv4
	// wildcard address and each client its own address in 127.0.0.0/8 on
	// it (see muxWorker): the workers batch every client's datagrams into
	// one recvmmsg and one sendmmsg. It needs an IPv4 loopback server.
	SocketsShared
	// SocketsPerClient gives each client its own socket and goroutine,
	// which works towards any server but cannot batch across clients.
	SocketsPerClient
)

// loadShard holds the counters and histogram of a group of clients. Its
// mutex is taken once per received echo and once per send burst; with
// clients spread over shards it is rarely contended.
type loadShard struct {
	mu   sync.Mutex
	hist *hdrhistogram.Histogram
	LoadTotals
	_ [64]byte // keep shards' hot fields on separate cache lines
}

type loadClient struct {
	idx   int
	conn  batchio.Conn // SocketsPerClient: the client's own socket
	cl    loadEndpoint
	shard *loadShard
	pay   []byte // the outgoing payload, stamped in place
	rbuf  []byte
	seq   uint64
	// track sees the packet sequence of every reply counted, so that
	// duplicates are told apart whether the reply was opened or not.
	track   SeqTracker
	up      bool // counted in Load.connected
	ever    bool // was connected at least once
	running bool // connecting or connected (started and not deactivated)
	sampled bool // opens and times every reply
	// open is a sampled client's session key for the server's packets,
	// with which its worker opens the replies (muxWorker.open); nil where
	// the engine client opens them all.
	open *openKey
	// lastFull is when a reply last went to the engine client (clients
	// that are not sampled), less the client's share of fullPathSpread.
	lastFull time.Time
	// edges places a game window's snapshots by packet sequence, so the
	// client opens few of them (placeByEdges); kslot is its entry in
	// Load.kc (its index in its worker).
	edges seqEdges
	kslot int
	// got: the worker has datagrams for the client (shared sockets);
	// lastUpdate is when its engine client last ran (see updateEvery).
	got        bool
	lastUpdate time.Time
	// winRecv counts the window's snapshots (game); read by Totals.
	winRecv atomic.Uint64

	// rel is the engine client when it has a reliable endpoint; its
	// figures are published at every tick for Load.ReliableMark. acks
	// takes its acks (reliable.Config.AckBufferSize of them).
	rel *engine.Client
	// eng is the engine client (nil in a bare load); seal its payloads
	// sealed ahead for the current window (preseal.go).
	eng               *engine.Client
	seal              sealBlock
	acks              []uint16
	relRTT, relAvg    atomic.Uint32 // float32 bits, ms
	relSent, relAcked atomic.Uint64

	// Schedule, owned by the goroutine that drives the client.
	gen       uint64        // of the rate settings below
	interval  time.Duration // between payloads; 0: paused
	next, end time.Time     // next payload; window end (zero: open)
	began     time.Time     // of the handshake in progress
	sessions  uint64        // handshakes begun
}

// Load is a set of real netcode clients driving a server. With shared
// sockets a few workers each drive many clients through one socket (see
// muxWorker); with per-client sockets each client has its own goroutine,
// which parks in WaitRead with its next send time as the deadline. Either
// way an echo is timed when it wakes its driver, and idle clients cost
// nothing.
type Load struct {
	cfg     LoadConfig
	log     *slog.Logger
	start   time.Time // the monotonic epoch of payload stamps
	clients []*loadClient
	shards  []*loadShard
	workers []*muxWorker // SocketsShared only
	net     muxNet       // the shared sockets' client addresses

	startWall int64 // l.start in Unix nanoseconds: snapshot stamps' clock
	sample    int   // the effective SampleEvery
	// kc counts the unsampled clients' replies in the load's XDP
	// program (echo and game on AF_XDP), nil otherwise.
	kc        *kernelCounter
	replySize int // the payload size of a reply: echo or snapshot

	gen      atomic.Uint64 // bumped when the fields below change
	interval atomic.Int64  // ns between sends per client; 0: paused
	winStart atomic.Int64  // window start, ns since start (noWindow: none yet)
	winEnd   atomic.Int64  // window end, ns since start; 0: open

	active    atomic.Pointer[activeSet]
	activeGen atomic.Uint64

	// sealReq is the latest request to seal a window's payloads ahead;
	// sealNs how long one took a worker at the last one (PresealLead).
	sealReq atomic.Pointer[sealRequest]
	sealIDs atomic.Uint64
	sealNs  atomic.Int64

	connected atomic.Int64
	stopping  atomic.Bool
	started   bool
	wg        sync.WaitGroup
}

// noWindow is winStart before the first BeginWindow.
const noWindow = int64(-1) << 62

// activeSet is which clients are meant to run: the first n. Those from
// base up were activated at at (ns since the load's start) and begin
// their handshakes paced from then.
type activeSet struct {
	n, base int
	at      int64
}

// startAt returns when client idx may begin its handshake (ns since the
// load's start): connectGroup clients per connectSpacing, so that
// thousands of requests do not overflow the server's socket at once.
func (a *activeSet) startAt(idx int) int64 {
	k := max(idx-a.base, 0)
	return a.at + int64(k/connectGroup)*int64(connectSpacing)
}

func (c *LoadConfig) normalize() error {
	if !c.Server.IsValid() || c.Server.Port() == 0 {
		return fmt.Errorf("bench: load server address %v is not a valid address with a port", c.Server)
	}
	if c.Clients < 1 || c.Clients > MaxLoadClients {
		return fmt.Errorf("bench: %d clients; want 1 to %d", c.Clients, MaxLoadClients)
	}
	if n := maxPayload(c.Reliable); c.Mode != LoadHandshake && (c.PayloadBytes < StampBytes || c.PayloadBytes > n) {
		return fmt.Errorf("bench: payload of %d bytes; want %d to %d", c.PayloadBytes, StampBytes, n)
	}
	switch c.Mode {
	case LoadEcho, LoadHandshake:
	case LoadGame:
		g := GameConfig{TickHz: c.TickHz, SnapshotBytes: c.SnapshotBytes, Reliable: c.Reliable}
		if err := g.check(); err != nil {
			return err
		}
	default:
		return fmt.Errorf("bench: load mode %d; want LoadEcho, LoadHandshake or LoadGame", c.Mode)
	}
	if c.Bare && c.Mode == LoadHandshake {
		return errors.New("bench: a bare load has no handshakes; want LoadEcho or LoadGame")
	}
	if c.Reliable != nil && (c.Bare || c.Mode == LoadHandshake) {
		return errors.New("bench: reliable endpoints need a netcode echo or game load (not Bare, not LoadHandshake)")
	}
	if c.SampleEvery < 0 || c.SampleEvery > MaxLoadClients {
		return fmt.Errorf("bench: sample every %d clients; want 0 or 1 (all) to %d", c.SampleEvery, MaxLoadClients)
	}
	if c.Active < 0 || c.Active > c.Clients {
		return fmt.Errorf("bench: %d active clients of %d; want 0 (all) to %d", c.Active, c.Clients, c.Clients)
	}
	if c.Active == 0 {
		c.Active = c.Clients
	}
	bindSet := c.Bind.IsValid()
	if !bindSet {
		c.Bind = netip.IPv6Loopback()
		if c.Server.Addr().Unmap().Is4() {
			c.Bind = netip.AddrFrom4([4]byte{127, 0, 0, 1})
		}
		if !c.Server.Addr().IsLoopback() {
			// Another host or namespace: the route picks the source.
			c.Bind = netip.IPv6Unspecified()
			if c.Server.Addr().Unmap().Is4() {
				c.Bind = netip.IPv4Unspecified()
			}
		}
	}
	if _, err := newMuxNet(c.ClientNet); err != nil {
		return err
	}
	if c.ClientIDBase == 0 {
		c.ClientIDBase = 1
	}
	if c.TimeoutSeconds == 0 {
		c.TimeoutSeconds = 10
	}
	if c.ExpireSeconds == 0 {
		c.ExpireSeconds = int64(engine.DefaultMaxConnectTokenLifetime / time.Second)
	}
	loopback4 := c.Server.Addr().Unmap().Is4() && (c.Server.Addr().IsLoopback() || c.ClientNet.IsValid())
	if c.Dial != nil {
		if c.Bare {
			return errors.New("bench: a bare load has no netcode clients to give Dial's conns; want Bare off with Dial")
		}
		if c.Sockets == SocketsShared {
			return errors.New("bench: Dial gives each client its own conn; want SocketsAuto or SocketsPerClient")
		}
		c.Sockets = SocketsPerClient
	}
	switch c.Sockets {
	case SocketsAuto:
		c.Sockets = SocketsPerClient
		if loopback4 && !bindSet {
			c.Sockets = SocketsShared
		}
	case SocketsShared:
		if !loopback4 || bindSet {
			return fmt.Errorf("bench: shared sockets need a server on IPv4 loopback and no bind address (server %v)", c.Server)
		}
	case SocketsPerClient:
	default:
		return fmt.Errorf("bench: sockets mode %d; want SocketsAuto, SocketsShared or SocketsPerClient", c.Sockets)
	}
	if c.SendGrid < 0 || c.SendGrid > maxSendGrid {
		return fmt.Errorf("bench: send grid %v; want 0 (off) to %v", c.SendGrid, maxSendGrid)
	}
	if c.PresealLimit < 0 {
		return fmt.Errorf("bench: preseal limit %d bytes; want 0 (off) or more", c.PresealLimit)
	}
	if c.Workers < 0 || c.Workers > maxLoadWorkers {
		return fmt.Errorf("bench: %d workers; want 0 (automatic) to %d", c.Workers, maxLoadWorkers)
	}
	if c.XDP.Mode != batchio.XDPOff {
		if c.Sockets != SocketsShared {
			return fmt.Errorf("bench: an AF_XDP load needs shared sockets (IPv4, a client net or loopback, no bind address); sockets are %v", c.Sockets)
		}
		if c.Workers > 1 {
			return fmt.Errorf("bench: an AF_XDP load has one worker (one AF_XDP socket on the interface's one queue); want Workers 0 or 1, not %d", c.Workers)
		}
		c.Workers = 1
	}
	if c.Workers == 0 {
		c.Workers = max(1, min(runtime.GOMAXPROCS(0), (c.Clients+63)/64))
	}
	c.Workers = min(c.Workers, c.Clients)
	return nil
}

// NewLoad opens the sockets and makes the clients. Start starts them.
func NewLoad(cfg LoadConfig) (*Load, error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	l := &Load{cfg: cfg, log: cfg.Logger}
	l.net, _ = newMuxNet(cfg.ClientNet) // checked by normalize
	if l.log == nil {
		l.log = slog.New(slog.DiscardHandler)
	}
	nShards := min(cfg.Clients, maxLoadShards)
	l.shards = make([]*loadShard, nShards)
	for i := range l.shards {
		l.shards[i] = &loadShard{hist: NewHistogram()}
		l.shards[i].tickLo = ^uint64(0)
	}
	l.sample = cfg.SampleEvery
	if l.sample == 0 || cfg.Sockets != SocketsShared || cfg.Reliable != nil {
		l.sample = 1
	}
	l.replySize = cfg.PayloadBytes
	if cfg.Mode == LoadGame {
		l.replySize = cfg.SnapshotBytes
	}
	l.winStart.Store(noWindow)
	l.active.Store(&activeSet{n: cfg.Active})
	if cfg.XDP.Mode != batchio.XDPOff && cfg.Mode != LoadHandshake && l.sample > 1 {
		// One worker (normalize): its clients are the counter's.
		kc, pre, err := newKernelCounter(cfg.Clients, l.net, l.replySize, cfg.Bare, cfg.Mode == LoadGame)
		if err != nil {
			return nil, err
		}
		l.kc, l.cfg.XDP.Prefilter = kc, pre
	}
	if cfg.Sockets == SocketsShared {
		l.workers = make([]*muxWorker, 0, cfg.Workers)
		for range cfg.Workers {
			w, err := newMuxWorker(l, (cfg.Clients+cfg.Workers-1)/cfg.Workers)
			if err != nil {
				l.closeConns()
				return nil, err
			}
			l.workers = append(l.workers, w)
		}
	}
	if l.kc != nil {
		if _, ok := l.workers[0].conn.(batchio.XDPStatsReader); !ok {
			// XDPTry fell back to the socket path: no program.
			l.kc.close()
			l.kc = nil
		}
	}
	l.clients = make([]*loadClient, 0, cfg.Clients)
	for i := range cfg.Clients {
		c, err := l.newClient(i)
		if err != nil {
			l.closeConns()
			return nil, err
		}
		l.clients = append(l.clients, c)
		if len(l.workers) > 0 {
			l.workers[i%len(l.workers)].adopt(c)
		}
	}
	return l, nil
}

func (l *Load) newClient(i int) (*loadClient, error) {
	// Check the token parameters now, so that a bad one fails NewLoad.
	if !l.cfg.Bare {
		if _, err := l.mint(i, 0, time.Now()); err != nil {
			return nil, err
		}
	}
	var conn batchio.Conn
	var err error
	var own batchio.Conn
	if len(l.workers) > 0 {
		conn, err = l.workers[i%len(l.workers)].attach(i)
	} else if l.cfg.Dial != nil {
		own, err = l.cfg.Dial(i)
		conn = own
	} else {
		// GSO (the default) groups only runs of equal datagrams to one
		// address: a client's burst of payloads to its server.
		own, err = batchio.Listen(netip.AddrPortFrom(l.cfg.Bind, 0), batchio.Config{
			RecvBuffer: clientSocketBuffer, SendBuffer: clientSocketBuffer,
		})
		conn = own
	}
	if err != nil {
		return nil, fmt.Errorf("bench: client %d socket: %w", i, err)
	}
	queue := clientQueue
	if l.cfg.Mode == LoadGame {
		queue = gameClientQueue
	}
	// A long reply (reliable) takes an entry per 1,200 bytes: room for as
	// many replies as short ones.
	want := queue * ((l.replySize + codec.MaxPayloadBytes - 1) / codec.MaxPayloadBytes)
	for queue < want {
		queue *= 2
	}
	var cl loadEndpoint
	var eng *engine.Client
	if l.cfg.Bare {
		cl = newBareClient(conn, l.cfg.Server, time.Duration(l.cfg.TimeoutSeconds)*time.Second, queue)
	} else if eng, err = engine.NewClient(engine.ClientConfig{ReceiveQueueSize: queue, Reliable: l.cfg.Reliable,
		// A load of thousands connecting at once can keep a server busy
		// past the 1 s default: keep asking for the token's timeout, as
		// the standard does, rather than give up.
		NoChallengeTimeout: -1}, conn); err != nil {
		if own != nil {
			own.Close()
		}
		return nil, err
	} else {
		cl = eng
	}
	c := &loadClient{
		idx:     i,
		conn:    own,
		cl:      cl,
		shard:   l.shards[i%len(l.shards)],
		pay:     make([]byte, max(l.cfg.PayloadBytes, StampBytes)),
		rbuf:    make([]byte, maxPayload(l.cfg.Reliable)),
		sampled: i%l.sample == 0,
	}
	c.eng = eng
	if l.cfg.Reliable != nil {
		c.rel, c.acks = eng, make([]uint16, 0, l.cfg.Reliable.AckBufferSize)
	}
	for j := StampBytes; j < len(c.pay); j++ {
		c.pay[j] = byte(j)
	}
	return c, nil
}

func (l *Load) closeConns() error {
	var errs []error
	for _, c := range l.clients {
		if c.conn != nil {
			errs = append(errs, c.conn.Close())
		}
	}
	for _, w := range l.workers {
		errs = append(errs, w.conn.Close())
	}
	return errors.Join(errs...)
}

// Start starts the clients' goroutines; they connect, paced so as not to
// flood the server with requests. It returns at once.
func (l *Load) Start() {
	if l.started {
		return
	}
	l.started = true
	l.start = time.Now()
	l.startWall = l.start.UnixNano()
	if len(l.workers) > 0 {
		l.wg.Add(len(l.workers))
		for _, w := range l.workers {
			go w.run()
		}
		return
	}
	l.wg.Add(len(l.clients))
	for _, c := range l.clients {
		go l.run(c)
	}
}

// SetActive makes the first n clients (1 to Clients) the active ones:
// those beyond n disconnect, and those below it that are not running
// begin their handshakes, paced as at Start. Clients notice within
// engine.PacketSendInterval.
func (l *Load) SetActive(n int) error {
	if n < 1 || n > len(l.clients) {
		return fmt.Errorf("bench: %d active clients; want 1 to %d", n, len(l.clients))
	}
	old := l.active.Load()
	l.active.Store(&activeSet{n: n, base: old.n, at: int64(time.Since(l.start))})
	l.activeGen.Add(1)
	for _, w := range l.workers {
		w.wake()
	}
	return nil
}

// Active returns the number of active clients.
func (l *Load) Active() int { return l.active.Load().n }

// SampleEvery returns the effective LoadConfig.SampleEvery: 1 when every
// client opens its replies.
func (l *Load) SampleEvery() int { return l.sample }

// SocketPackets returns the datagrams the load's sockets received and
// sent so far, where the sockets count them (batchio's do); in includes
// the replies its XDP program took before they reached a socket (Load.kc),
// which the load's core handled all the same.
func (l *Load) SocketPackets() (in, out uint64) {
	if l.kc != nil {
		in = l.kc.taken()
	}
	add := func(c batchio.Conn) {
		if st, ok := batchio.As[batchio.StatsReader](c); ok {
			m := st.Stats()
			in += m.RecvPackets
			out += m.SendPackets
		}
	}
	for _, w := range l.workers {
		add(w.conn)
	}
	for _, c := range l.clients {
		if c.conn != nil {
			add(c.conn)
		}
	}
	return in, out
}

// WaitConnected waits until every active client is connected, the
// timeout passes, or stop is closed, and returns how many are connected.
func (l *Load) WaitConnected(timeout time.Duration, stop <-chan struct{}) int {
	deadline := time.Now().Add(timeout)
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	for {
		n := l.Connected()
		if n >= l.Active() || !time.Now().Before(deadline) {
			return n
		}
		select {
		case <-stop:
			return n
		case <-t.C:
		}
	}
}

// Sockets returns how the clients got their addresses.
func (l *Load) Sockets() LoadSockets { return l.cfg.Sockets }

// SharedStats are the shared sockets' own counters, summed over workers.
type SharedStats struct {
	Workers     int
	Stray       uint64 // datagrams for an address no client has
	Unread      uint64 // datagrams a client did not take (too long, or over its read budget)
	SendDropped uint64 // datagrams the sockets did not send
}

// SharedConns returns the shared sockets' conns, for their counters
// (batchio.StatsReader, XDPStatsReader); the load still owns them.
func (l *Load) SharedConns() []batchio.Conn {
	conns := make([]batchio.Conn, len(l.workers))
	for i, w := range l.workers {
		conns[i] = w.conn
	}
	return conns
}

// SharedStats returns the shared sockets' counters (zero with per-client
// sockets). Call it after Close.
func (l *Load) SharedStats() SharedStats {
	st := SharedStats{Workers: len(l.workers)}
	for _, w := range l.workers {
		st.Stray += w.stray
		st.Unread += w.unread
		st.SendDropped += w.sendDrops
	}
	return st
}

// Connected returns the number of clients connected now.
func (l *Load) Connected() int { return int(l.connected.Load()) }

// Clients returns the number of clients.
func (l *Load) Clients() int { return len(l.clients) }

// BeginWindow resets the counters and histograms and sets every client's
// send rate (payloads per second; 0 sends nothing) for the window [start,
// start+d); d = 0 leaves the window open until SetRate. Clients spread
// their first sends evenly over one interval after start. Give start a lead
// of at least engine.PacketSendInterval: an idle client notices the new
// window only when it next wakes, which is within that time; with
// LoadConfig.PresealLimit, add PresealLead: BeginWindow first has the
// workers seal the window's payloads and waits for them. It returns an
// error, and changes nothing, when the sealed payloads would exceed the
// limit, or ErrPresealLate when sealing them ended after start.
func (l *Load) BeginWindow(rateHz float64, start time.Time, d time.Duration) error {
	if l.presealing(rateHz, d) {
		if err := l.preseal(rateHz, start, d); err != nil {
			return err
		}
	}
	for _, s := range l.shards {
		s.mu.Lock()
		s.hist.Reset()
		s.LoadTotals = LoadTotals{tickLo: ^uint64(0)}
		s.mu.Unlock()
	}
	for _, c := range l.clients {
		c.winRecv.Store(0)
	}
	startNs := int64(start.Sub(l.start))
	l.winStart.Store(startNs)
	l.winEnd.Store(0)
	if d > 0 {
		l.winEnd.Store(startNs + int64(d))
	}
	if l.kc != nil {
		l.kc.beginWindow(l.start, startNs, l.winEnd.Load())
	}
	l.SetRate(rateHz)
	return nil
}

// SetRate changes the per-client send rate at once, keeping the counters
// and the window's end; 0 stops sending.
func (l *Load) SetRate(rateHz float64) {
	var iv int64
	if rateHz > 0 {
		iv = max(int64(float64(time.Second)/rateHz), 1)
	}
	l.interval.Store(iv)
	l.gen.Add(1)
}

// Totals returns the counters of the current window with a merged copy of
// its histogram.
func (l *Load) Totals() LoadTotals {
	t := LoadTotals{Hist: NewHistogram(), tickLo: ^uint64(0)}
	for _, s := range l.shards {
		s.mu.Lock()
		t.Sent += s.Sent
		t.Received += s.Received
		t.Duplicates += s.Duplicates
		t.Reordered += s.Reordered
		t.TooOld += s.TooOld
		t.Bad += s.Bad
		t.SendLag += s.SendLag
		t.Handshakes += s.Handshakes
		t.Failures += s.Failures
		for i, n := range s.FailedIn {
			t.FailedIn[i] += n
		}
		t.Hist.Merge(s.hist)
		t.tickLo = min(t.tickLo, s.tickLo)
		t.tickHi = max(t.tickHi, s.tickHi)
		s.mu.Unlock()
	}
	t.Connected = l.Connected()
	t.Active = l.Active()
	t.Elapsed = max(time.Since(l.start)-time.Duration(l.winStart.Load()), 0)
	if l.kc != nil {
		k := l.kc.sinceAll()
		t.KernelCounted = k.recv
		t.Received += k.recv
		t.Duplicates += k.dup
		t.Reordered += k.reord
		t.TooOld += k.old
	}
	if l.cfg.Mode == LoadGame {
		l.gameTotals(&t)
	}
	return t
}

// gameTotals turns the shards' game counts into snapshots owed and
// received: every active client is owed one snapshot per tick of the
// window.
func (l *Load) gameTotals(t *LoadTotals) {
	t.Inputs, t.Sent, t.Received = t.Sent, 0, 0
	if t.tickHi >= t.tickLo {
		t.Ticks = t.tickHi - t.tickLo + 1
	}
	for _, c := range l.clients[:t.Active] {
		r := c.winRecv.Load()
		if l.kc != nil {
			r += l.kc.since(c.kslot).recv
		}
		r = min(r, t.Ticks)
		t.Received += r
		if r < t.Ticks {
			t.ClientsWithLoss++
			t.WorstClientLoss = max(t.WorstClientLoss, float64(t.Ticks-r)/float64(t.Ticks))
		}
	}
	t.Sent = t.Ticks * uint64(t.Active)
}

// ClientsWithLoss returns how many clients lost at least one payload over
// the whole run. Call it after Close.
func (l *Load) ClientsWithLoss() int {
	n := 0
	for _, c := range l.clients {
		if c.track.Lost(c.seq) > 0 {
			n++
		}
	}
	return n
}

// EverConnected returns how many clients were connected at least once.
// Call it after Close.
func (l *Load) EverConnected() int {
	n := 0
	for _, c := range l.clients {
		if c.ever {
			n++
		}
	}
	return n
}

// Close disconnects the clients (each sends its disconnect packets), waits
// for their goroutines and closes the sockets.
func (l *Load) Close() error {
	l.stopping.Store(true)
	for _, w := range l.workers {
		w.wake()
	}
	l.wg.Wait()
	err := l.closeConns()
	if l.kc != nil {
		err = errors.Join(err, l.kc.close())
	}
	return err
}

// setUp keeps the connected count in step with the client's state.
func (l *Load) setUp(c *loadClient, up bool) {
	if up == c.up {
		return
	}
	c.up = up
	c.ever = c.ever || up
	if l.kc != nil && !c.sampled {
		l.kc.setCounting(c.kslot, up)
	}
	if up {
		l.connected.Add(1)
	} else {
		l.connected.Add(-1)
	}
}

// runReliable reads the client's acks, as a game would: an endpoint
// holding AckBufferSize unread acks takes no more (the C library's rule),
// so its packets stop counting as acked and its RTT stops being sampled.
// Then it publishes the client's figures for ReliableMark (the engine
// client is its goroutine's alone). At every tick, so that a mark at the
// end of a window counts every packet the window sent.
func (c *loadClient) runReliable() {
	c.acks, _ = c.rel.ReadAcks(c.acks[:0])
	st, err := c.rel.ReliableStats()
	if err != nil {
		return
	}
	c.relRTT.Store(math.Float32bits(st.RTT))
	c.relAvg.Store(math.Float32bits(st.RTTAvg))
	c.relSent.Store(st.PacketsSent)
	c.relAcked.Store(st.PacketsAcked)
}

// ReliableMark reads the active clients' reliable figures, as of each
// one's last tick, into m, reusing its slices; the datagrams are the load's
// sockets' (SocketPackets). Nothing but datagrams without
// LoadConfig.Reliable.
func (l *Load) ReliableMark(m *ReliableMark) {
	_, out := l.SocketPackets()
	*m = ReliableMark{RTTs: m.RTTs[:0], RTTAvgs: m.RTTAvgs[:0], Datagrams: out}
	if l.cfg.Reliable == nil {
		return
	}
	for _, c := range l.clients[:l.Active()] {
		m.Sent += c.relSent.Load()
		m.Acked += c.relAcked.Load()
		if rtt := math.Float32frombits(c.relRTT.Load()); rtt > 0 {
			m.RTTs = append(m.RTTs, rtt)
			m.RTTAvgs = append(m.RTTAvgs, math.Float32frombits(c.relAvg.Load()))
		}
	}
}

// run is one client's goroutine (SocketsPerClient).
func (l *Load) run(c *loadClient) {
	defer l.wg.Done()
	defer l.setUp(c, false)
	for {
		now := time.Now()
		if l.stopping.Load() {
			if c.running {
				c.cl.Disconnect(now)
			}
			return
		}
		deadline, ok := l.tick(c, now)
		if !ok {
			return
		}
		if deadline.IsZero() {
			deadline = now.Add(engine.PacketSendInterval) // inactive: look again
		}
		if err := c.conn.WaitRead(deadline); err != nil {
			return
		}
	}
}

// mint makes client i's connect token for its session-th handshake,
// beginning at now. Under LoadHandshake each handshake is a player of its
// own (the session in the id's high bits): a server keeps at most
// engine.TokenHistoryPerClientID unexpired tokens per client id.
func (l *Load) mint(i int, session uint64, now time.Time) ([]byte, error) {
	id := l.cfg.ClientIDBase + uint64(i)
	if l.cfg.Mode == LoadHandshake {
		id += session << 40
	}
	token, err := engine.GenerateConnectToken(engine.TokenParams{
		ProtocolID:      l.cfg.ProtocolID,
		PrivateKey:      l.cfg.PrivateKey,
		ClientID:        id,
		PublicAddresses: []netip.AddrPort{l.cfg.Server},
		ExpireSeconds:   l.cfg.ExpireSeconds,
		TimeoutSeconds:  l.cfg.TimeoutSeconds,
		Now:             now,
	})
	if err != nil {
		return nil, fmt.Errorf("bench: mint token: %w", err)
	}
	return token, nil
}

// begin starts a client's handshake with a token minted for it.
func (l *Load) begin(c *loadClient, now time.Time) bool {
	c.began = now
	var token []byte
	if !l.cfg.Bare {
		var err error
		if token, err = l.mint(c.idx, c.sessions, now); err != nil {
			l.log.Warn("bench: connect", "client", c.idx, "err", err)
			return false
		}
	}
	if err := c.cl.Connect(token, now); err != nil {
		l.log.Warn("bench: connect", "client", c.idx, "err", err)
		return false
	}
	c.open = nil
	if c.sampled && l.workers != nil && l.cfg.Reliable == nil && l.cfg.Mode != LoadHandshake && token != nil {
		var err error
		if c.open, err = newOpenKey(token, l.cfg.ProtocolID); err != nil {
			l.log.Warn("bench: connect", "client", c.idx, "err", err)
			return false
		}
	}
	c.sessions++
	c.running = true
	// A new session's packet sequences start again from 0.
	c.track = SeqTracker{Received: c.track.Received}
	c.edges = seqEdges{}
	if l.kc != nil && !c.sampled {
		l.kc.newSession(c.kslot)
	}
	return true
}

// tick runs a client at now: it starts or stops it as the active set
// says, then runs its engine update, its replies and the payloads due. It
// returns when the client next needs attention (zero: not until the
// active set changes), or false if it cannot go on.
func (l *Load) tick(c *loadClient, now time.Time) (time.Time, bool) {
	as := l.active.Load()
	if c.idx >= as.n {
		if c.running {
			c.cl.Disconnect(now)
			c.running = false
			l.setUp(c, false)
		}
		return time.Time{}, true
	}
	if !c.running {
		if at := l.start.Add(time.Duration(as.startAt(c.idx))); now.Before(at) {
			return at, true
		}
		if !l.begin(c, now) {
			return time.Time{}, false
		}
	}
	if l.cfg.Mode == LoadHandshake {
		return l.handshakeTick(c, now)
	}
	// A reliable endpoint times its sends by the engine client's clock,
	// which Update sets: a stale one would lengthen its RTT samples.
	if c.got || c.conn != nil || c.rel != nil || now.Sub(c.lastUpdate) >= updateEvery || c.cl.State() != engine.Connected {
		c.cl.Update(now)
		c.lastUpdate = now
	}
	c.got = false
	connected := c.cl.State() == engine.Connected
	l.setUp(c, connected)
	if c.cl.State() < engine.Disconnected {
		// Timed out or denied: connect again with a new token, as a
		// player would.
		c.running = false
		return now.Add(engine.PacketSendInterval), true
	}
	l.receive(c, now)
	if g := l.gen.Load(); g != c.gen {
		c.gen = g
		c.interval = time.Duration(l.interval.Load())
		start := l.start.Add(time.Duration(l.winStart.Load()))
		c.next = start.Add(l.phase(c, c.interval))
		c.end = time.Time{}
		if e := l.winEnd.Load(); e != 0 {
			c.end = l.start.Add(time.Duration(e))
		}
	}
	deadline := now.Add(engine.PacketSendInterval)
	if c.interval > 0 && connected && (c.end.IsZero() || c.next.Before(c.end)) {
		l.send(c, now)
		if c.next.Before(deadline) {
			deadline = c.next
		}
	}
	if c.rel != nil {
		c.runReliable()
	}
	return deadline, true
}

// receive counts (and, for sampled clients, times) every reply waiting
// in the client's queue.
func (l *Load) receive(c *loadClient, now time.Time) {
	s := c.shard
	locked := false
	for {
		n, pseq, ok := c.cl.ReceivePacket(c.rbuf)
		if !ok {
			break
		}
		if !locked {
			s.mu.Lock()
			locked = true
		}
		l.reply(c, s, c.rbuf[:min(n, len(c.rbuf))], n, pseq, now)
	}
	if locked {
		s.mu.Unlock()
	}
}

// reply counts a reply's payload p (n bytes long, p its first bytes; packet
// sequence pseq) and times it if the client is sampled. The caller holds
// the shard's lock.
func (l *Load) reply(c *loadClient, s *loadShard, p []byte, n int, pseq uint64, now time.Time) {
	if l.cfg.Mode == LoadGame {
		l.snapshot(c, s, p, pseq, now)
		return
	}
	sendNs, _, ok := ReadStamp(p)
	if !ok || n != len(c.pay) {
		s.Bad++
		return
	}
	if !l.observe(c, &s.LoadTotals, pseq) {
		return
	}
	s.Received++
	if c.sampled {
		RecordLatency(s.hist, time.Duration(int64(now.Sub(l.start))-sendNs))
	}
}

// observe files a reply's packet sequence with the client's tracker and
// the shard's counters; false means a duplicate, not to be counted.
func (l *Load) observe(c *loadClient, s *LoadTotals, seq uint64) bool {
	switch c.track.Observe(seq) {
	case Duplicate:
		s.Duplicates++
		return false
	case Reordered:
		s.Reordered++
	case TooOld:
		s.TooOld++
	}
	return true
}

// snapshot counts a game snapshot p (with packet sequence pseq) if the
// server sent it within the window, and times it if the client is
// sampled. The caller holds the shard's lock.
func (l *Load) snapshot(c *loadClient, s *loadShard, p []byte, pseq uint64, now time.Time) {
	sendWall, tick, ok := ReadSnapshotStamp(p)
	if !ok || len(p) != l.cfg.SnapshotBytes {
		s.Bad++
		return
	}
	// Edges place the snapshots of the clients that do not open them all.
	if !c.sampled && c.edges.learn(l.winStart.Load(), l.winEnd.Load(), sendWall-l.startWall, pseq) && l.kc != nil {
		l.kc.learn(c.kslot, &c.edges)
	}
	if !l.inWindow(sendWall - l.startWall) {
		return
	}
	if !l.observe(c, &s.LoadTotals, pseq) {
		return
	}
	c.winRecv.Add(1)
	s.Received++
	s.tickLo = min(s.tickLo, tick)
	s.tickHi = max(s.tickHi, tick)
	if c.sampled {
		RecordLatency(s.hist, time.Duration(now.UnixNano()-sendWall))
	}
}

// inWindow reports whether t (ns since the load's start) is in the
// current window.
func (l *Load) inWindow(t int64) bool {
	start, end := l.winStart.Load(), l.winEnd.Load()
	return start != noWindow && t >= start && (end == 0 || t < end)
}

// seqEdges are the first packet sequences a client was sent in a game
// window and at or after its end, learnt from snapshots it opened. The
// server numbers a client's packets in the order it sends them, so with
// them a snapshot is placed in or out of the window by its clear sequence.
type seqEdges struct {
	start    int64 // the window they belong to (Load.winStart)
	from, to uint64
	haveFrom bool
	haveTo   bool
}

// reset forgets the edges of an earlier window.
func (e *seqEdges) reset(start int64) {
	if e.start != start {
		*e = seqEdges{start: start}
	}
}

// learn files an opened snapshot with packet sequence seq, sent at sent
// (ns since the load's start), for the window [start, end), and reports
// whether it learnt an edge.
func (e *seqEdges) learn(start, end, sent int64, seq uint64) bool {
	if start == noWindow {
		return false
	}
	e.reset(start)
	learnt := false
	if sent >= start && !e.haveFrom {
		e.from, e.haveFrom, learnt = seq, true, true
	}
	if end != 0 && sent >= end && !e.haveTo {
		e.to, e.haveTo, learnt = seq, true, true
	}
	return learnt
}

// Where a game reply that a client does not open falls (placeByEdges).
const (
	zoneIgnore = iota // outside the window: not counted
	zoneCount         // in the window: counted unopened
	zoneOpen          // not known yet: opened to read its stamp
)

// placeByEdges places client c's snapshot with packet sequence seq that
// arrived at t (ns since the load's start) relative to the window. A
// snapshot is sent before it arrives, so one that arrives before the
// window's start was sent before it, and one that arrives before its end
// was sent before that. Otherwise its sequence places it, once the client
// has opened the window's first snapshot (and, after the end, the first
// one sent after it): every client opens about two snapshots a window,
// whatever the latency.
func (l *Load) placeByEdges(c *loadClient, seq uint64, t int64) int {
	start, end := l.winStart.Load(), l.winEnd.Load()
	if start == noWindow || t < start || (end != 0 && t >= end+int64(lateLimit)) {
		return zoneIgnore
	}
	e := &c.edges
	e.reset(start)
	switch {
	case !e.haveFrom:
		return zoneOpen
	case seq < e.from:
		return zoneIgnore
	case end == 0 || t < end:
		return zoneCount
	case !e.haveTo:
		return zoneOpen
	case seq >= e.to:
		return zoneIgnore
	}
	return zoneCount
}

// send sends the payloads due by now and before end (if not zero), at most
// maxSendBurst of them (maxInputBurst in game mode); if the client is
// further behind it skips the rest and counts them as lag.
func (l *Load) send(c *loadClient, now time.Time) {
	interval, next, end := c.interval, &c.next, c.end
	nowNs := int64(now.Sub(l.start))
	sent, lag := uint64(0), uint64(0)
	burst := uint64(maxSendBurst)
	if l.cfg.Mode == LoadGame {
		burst = maxInputBurst
	}
	for !next.After(now) && (end.IsZero() || next.Before(end)) {
		if sent == burst {
			behind := now.Sub(*next)/interval + 1
			*next = next.Add(behind * interval)
			lag = uint64(behind)
			c.seal.k += int(behind) // the skipped payloads' sealed packets
			break
		}
		if ok, sealed := c.sendSealed(c.gen); sealed {
			if !ok {
				break
			}
		} else {
			PutStamp(c.pay, nowNs, c.seq)
			if c.cl.SendPacket(c.pay) != nil {
				break
			}
			c.seq++
		}
		sent++
		*next = next.Add(interval)
	}
	if sent == 0 && lag == 0 {
		return
	}
	c.cl.Flush()
	s := c.shard
	s.mu.Lock()
	s.Sent += sent
	s.SendLag += lag
	s.mu.Unlock()
}

// maxSendGrid bounds LoadConfig.SendGrid.
const maxSendGrid = 10 * time.Millisecond

// phase is client c's first send in a window of the given interval: the
// active clients' sends spread evenly over one interval (a sweep's step
// has fewer than the load was made with: spread over all of them, its
// sends would come in a burst), each rounded down to a multiple of
// SendGrid (when set), so that clients sharing a grid slot send together.
func (l *Load) phase(c *loadClient, interval time.Duration) time.Duration {
	n := len(l.clients)
	if as := l.active.Load(); as != nil && as.n > c.idx {
		n = as.n
	}
	p := interval * time.Duration(c.idx) / time.Duration(n)
	if g := l.cfg.SendGrid; g > 0 && g*10 <= interval {
		p -= p % g
	}
	return p
}

// handshakeTick drives LoadHandshake: it disconnects a client as soon as
// it is connected and connects again with a new token (a token carries one
// session), timing each handshake.
func (l *Load) handshakeTick(c *loadClient, now time.Time) (time.Time, bool) {
	// A new handshake sends its request at once; an error state reached at
	// once (an expired token) is retried at the next tick, not in a loop.
	for range 2 {
		c.cl.Update(now)
		st := c.cl.State()
		switch {
		case st == engine.Connected:
			l.setUp(c, true)
			s := c.shard
			s.mu.Lock()
			s.Handshakes++
			RecordLatency(s.hist, now.Sub(c.began))
			s.mu.Unlock()
			c.cl.Disconnect(now)
			l.setUp(c, false)
			fallthrough
		case st <= engine.Disconnected:
			if st < engine.Disconnected {
				s := c.shard
				s.mu.Lock()
				s.Failures++
				if i := int(-st); i < len(s.FailedIn) {
					s.FailedIn[i]++
				}
				s.mu.Unlock()
			}
			if !l.begin(c, now) {
				return time.Time{}, false
			}
			continue
		}
		break
	}
	return now.Add(engine.PacketSendInterval), true
}
