package engine

import (
	"errors"
	"fmt"
	"log/slog"
	"net/netip"
	"runtime"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/reliable"
)

// Server limits and defaults.
const (
	// DefaultMaxClients is the slot count when ServerConfig.MaxClients is 0
	// (the reference's NETCODE_MAX_CLIENTS).
	DefaultMaxClients = 256
	// MaxServerClients is the largest MaxClients a server accepts.
	MaxServerClients = 1 << 16
	// DefaultMaxConnectTokenLifetime is the restart rule's lifetime when
	// ServerConfig.MaxConnectTokenLifetime is 0 (the reference's default).
	DefaultMaxConnectTokenLifetime = 30 * time.Second
	// MaxConnectTokenLifetimeLimit is the largest MaxConnectTokenLifetime
	// a server accepts.
	MaxConnectTokenLifetimeLimit = 24 * time.Hour
	// ConnectTokenClockSkew is how far the web backend's clock may run
	// ahead of the server's: a token may expire up to
	// MaxConnectTokenLifetime plus this after the server's now (expiry
	// has one-second resolution, so even synchronized clocks differ by up
	// to a second). The restart rule adds it too (see
	// MaxConnectTokenLifetime).
	ConnectTokenClockSkew = 2 * time.Second
	// DefaultQueueSize is the default of ServerConfig.EventQueueSize and
	// SendQueueSize.
	DefaultQueueSize = 4096
	// MinTokenHistorySize is the smallest connect-token history, whatever
	// the slot count (the reference's 8 × 256): filling it, which locks
	// every new player out, takes MinTokenHistorySize /
	// PendingTokensPerClientID = 512 accounts.
	MinTokenHistorySize = 2048
	// PendingTokensPerClientID is the most pending connect-token history
	// entries (tokens presented whose handshake has not finished, and
	// that have not expired) one client id holds; a new token beyond them
	// is ignored (ServerDropTokenClientLimit). A client has one pending at
	// a time unless its handshakes fail.
	PendingTokensPerClientID = 4
	// TokenHistoryPerClientID is the most connect-token history entries,
	// pending or consumed, one client id holds: a player who connects more
	// than this often within a token lifetime (30 s) is refused until its
	// oldest token expires. It bounds what an account that finishes its
	// handshakes (it needs free slots) can take of the history.
	TokenHistoryPerClientID = 16

	maxShards             = 256
	maxQueueSize          = 1 << 20
	maxEncryptionMappings = 1 << 20
	maxTokenHistorySize   = 1 << 22
	// historyPerSlot is the default connect-token history per client slot,
	// as in the reference.
	historyPerSlot = 8
	// minShardMappings is the least a shard's default share of
	// MaxEncryptionMappings: handshakes spread over shards as clients do,
	// but not evenly.
	minShardMappings = 256
)

// ServerConfig configures a Server: the protocol and its limits. Socket
// options are batchio.Config's. Zero values select the defaults noted; a
// value outside its range, or a setting that does not apply to the mode
// chosen, is an error that says so.
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
	// MaxClients is the number of client slots, shared by all shards: 1 to
	// MaxServerClients (default DefaultMaxClients).
	MaxClients int

	// Manual selects the manual mode: the server starts no goroutines and
	// the caller drives it with Update(now), for small games, loopback
	// clients and deterministic tests. By default each shard is a goroutine
	// of its own that reads the clock itself.
	Manual bool
	// Shards is, for Listen, the number of sockets (and shards) per bind
	// address: the kernel's SO_REUSEPORT hash decides which shard a
	// client's packets reach, and that shard owns the client. Default
	// runtime.GOMAXPROCS(0), or 1 in manual mode; allowed 1 to 256 in all.
	// NewServer makes one shard per conn given and needs 0 here.
	Shards int
	// Clock reads the time where the caller gives none: the start of each
	// run (the restart rule's bound, see MaxConnectTokenLifetime) and, in
	// the default mode, every pass of a shard. Waiting always uses real
	// time, so a test can drive a server with a fake clock and still
	// have it respond promptly. Default time.Now.
	Clock func() time.Time

	// EventQueueSize is how many received payloads each shard holds for
	// Poll; a payload that finds its shard's queue full is dropped
	// (ServerDropAppBacklog). One entry holds a whole 1200-byte payload.
	// (Connects and disconnects have a queue of their own with room for
	// every slot.) A power of two from 4 to 2^20, default DefaultQueueSize.
	EventQueueSize int
	// SendQueueSize is how many sends, broadcasts and disconnects the
	// application can queue for each shard before SendPacket returns
	// ErrSendQueueFull. Default mode only (manual mode seals sends at
	// once); a power of two from 4 to 2^20, default DefaultQueueSize.
	SendQueueSize int

	// MaxEncryptionMappings bounds clients in the middle of a handshake,
	// for the whole server (each shard gets an even share). Each mapping
	// holds a pending entry of the connect-token history, so the default
	// takes as many accounts to fill as the history (MinTokenHistorySize):
	// 2*MaxClients, at least 256 per shard and at least
	// MinTokenHistorySize; allowed 1 to 2^20.
	MaxEncryptionMappings int
	// TokenHistorySize is how many connect tokens the server remembers, each
	// until it expires, so that a token carries one session only (see
	// MaxConnectTokenLifetime). A token presented while every entry holds an
	// unexpired token is ignored (ServerDropTokenHistoryFull); nothing is
	// ever evicted. It should hold every token the web backend issues for
	// this server within one token lifetime. One history serves all shards.
	// Default 8*MaxClients (as the reference) and at least
	// MinTokenHistorySize; allowed MinTokenHistorySize to 2^22. 2048
	// entries take about 120 KiB.
	TokenHistorySize int
	// testHistorySize, when set, replaces TokenHistorySize below the
	// minimum: tests fill small histories.
	testHistorySize int
	// MaxConnectTokenLifetime is the longest lifetime (expire minus create)
	// of the tokens the web backend issues. Two rules follow from it, and
	// together they let no token carry a session in two runs of a server
	// (whose history is gone after a restart):
	//
	//   - The expiry bound: a token that expires later than this plus
	//     ConnectTokenClockSkew from now is ignored before decryption
	//     (ServerDropTokenTooLong). Tokens that never expire are always
	//     refused; no setting admits them.
	//   - The restart rule: at every start the server ignores tokens that
	//     expire at or before the start plus this plus
	//     ConnectTokenClockSkew (ServerDropTokenBeforeStart). So a freshly
	//     started server refuses tokens minted before it started, in its
	//     start second and in the ConnectTokenClockSkew after (3 s in all
	//     with the defaults and a backend in step); tokens minted later are
	//     admitted.
	//
	// Default DefaultMaxConnectTokenLifetime (30 s); allowed whole seconds
	// from 1s to MaxConnectTokenLifetimeLimit (24h).
	MaxConnectTokenLifetime time.Duration
	// AllowNoTimeoutTokens admits tokens whose timeout is -1 (development
	// only). By default they are ignored after decryption
	// (ServerDropTokenNoTimeout): a client with no timeout that goes
	// silent keeps its slot until the application disconnects it or the
	// server stops.
	AllowNoTimeoutTokens bool
	// TokenDecryptsPerSecond bounds, per shard, how many connection
	// requests per second that pass the cheap checks (size, version,
	// protocol id, expiry) have their connect token decrypted, the most
	// expensive work an unauthenticated datagram can cause. Requests beyond
	// it are dropped before decryption (ServerDropRequestRate) like lost
	// packets, and the client's next request (10 Hz) tries again. Default
	// DefaultTokenDecryptsPerSecond; -1 means no limit; allowed 1 to 2^24.
	TokenDecryptsPerSecond int
	// DisableRequestShedding turns off kernel shedding of connection-request
	// floods. By default, when a socket reads more than 4 ×
	// TokenDecryptsPerSecond connection requests per second (or its queue
	// stays full of them), the server has the kernel drop a random share
	// of them before they are queued (a socket filter; batchio.Shedder
	// sockets only), keeping the requests it reads between 1 and 4 ×
	// TokenDecryptsPerSecond. Other packets are never shed. Shedding is
	// also off when TokenDecryptsPerSecond is -1.
	DisableRequestShedding bool
	// KeepAliveInterval is how long a connected client may go without a
	// packet from the server before it is sent a keep-alive: the server's
	// send rate when idle (default PacketSendInterval, 10 Hz; allowed 1 ms to
	// 10 s, and it should stay well below the tokens' timeout).
	KeepAliveInterval time.Duration
	// Logger receives lifecycle events (start, stop, connect, disconnect);
	// nothing is logged per packet. nil discards.
	Logger *slog.Logger
	// Reliable, when set, gives every network client's slot a reliable 1.0
	// endpoint (package reliable; DefaultReliableConfig is the C library's
	// defaults): every payload then carries its header, SendPacket takes
	// packets of up to Reliable.MaxPacketSize and sends the longer ones as
	// fragments, Poll reports reassembled packets and the client's acks
	// (EventAcks), and NextSequence and ReliableStats tell sequences and
	// estimates. The clients must use reliable endpoints with the same
	// FragmentSize. Every datagram must fit in a netcode payload. Loopback
	// clients do not use it. Memory: about 18 KiB per slot, plus the
	// shards' pools (ReliablePoolBuffers).
	Reliable *reliable.Config
	// ReliablePoolBuffers is each shard's number of reassembly buffers
	// (Reliable.MaxPacketSize each, 16 KiB by default): packets arriving
	// in fragments wait in them, at most 4 per client, and a fragment that
	// would start one more when none is free is dropped
	// (reliable.DropReassemblyPoolExhausted). Default one per two slots of
	// an even share, from 64 to 65,536; allowed 1 to 2^24. Reliable only.
	ReliablePoolBuffers int
	// SendLoopbackPacket receives what SendPacket and Broadcast send to a
	// loopback client (ConnectLoopbackClient); payload is valid during the
	// call only. Manual mode only; required to connect loopback clients.
	SendLoopbackPacket func(clientIndex int, payload []byte, sequence uint64)
}

var errPublicUnspecified = errors.New("netcode: ServerConfig.PublicAddresses is required when a conn is bound to an unspecified address or port 0")

// normalize fills in defaults and checks every field for a server of
// shards shards.
func (c *ServerConfig) normalize(shards int) error {
	if len(c.PrivateKey) != codec.KeyBytes {
		return fmt.Errorf("netcode: server config: PrivateKey is %d bytes; want %d", len(c.PrivateKey), codec.KeyBytes)
	}
	if c.MaxClients == 0 {
		c.MaxClients = DefaultMaxClients
	}
	if c.MaxClients < 1 || c.MaxClients > MaxServerClients {
		return fmt.Errorf("netcode: server config: MaxClients %d; allowed 1 to %d (0 means %d)", c.MaxClients, MaxServerClients, DefaultMaxClients)
	}
	if c.EventQueueSize == 0 {
		c.EventQueueSize = DefaultQueueSize
	}
	if err := checkQueueSize("EventQueueSize", c.EventQueueSize); err != nil {
		return err
	}
	if c.Manual {
		if c.SendQueueSize != 0 {
			return fmt.Errorf("netcode: server config: SendQueueSize %d is for the default mode; manual mode seals sends at once (leave it 0)", c.SendQueueSize)
		}
	} else {
		if c.SendLoopbackPacket != nil {
			return errors.New("netcode: server config: SendLoopbackPacket is set, but loopback clients need the manual mode (Manual: true)")
		}
		if c.SendQueueSize == 0 {
			c.SendQueueSize = DefaultQueueSize
		}
		if err := checkQueueSize("SendQueueSize", c.SendQueueSize); err != nil {
			return err
		}
	}
	if c.KeepAliveInterval == 0 {
		c.KeepAliveInterval = PacketSendInterval
	}
	if c.KeepAliveInterval < time.Millisecond || c.KeepAliveInterval > 10*time.Second {
		return fmt.Errorf("netcode: server config: KeepAliveInterval %v; allowed 1ms to 10s (0 means %v)", c.KeepAliveInterval, PacketSendInterval)
	}
	if c.MaxEncryptionMappings == 0 {
		c.MaxEncryptionMappings = max(2*c.MaxClients, minShardMappings*shards, MinTokenHistorySize)
	}
	if c.MaxEncryptionMappings < 1 || c.MaxEncryptionMappings > maxEncryptionMappings {
		return fmt.Errorf("netcode: server config: MaxEncryptionMappings %d; allowed 1 to %d (0 means 2*MaxClients, at least %d per shard and %d in all)", c.MaxEncryptionMappings, maxEncryptionMappings, minShardMappings, MinTokenHistorySize)
	}
	if c.TokenHistorySize == 0 {
		c.TokenHistorySize = max(historyPerSlot*c.MaxClients, MinTokenHistorySize)
	}
	if c.TokenHistorySize < MinTokenHistorySize || c.TokenHistorySize > maxTokenHistorySize {
		return fmt.Errorf("netcode: server config: TokenHistorySize %d; allowed %d to %d (0 means %d*MaxClients, at least %d)", c.TokenHistorySize, MinTokenHistorySize, maxTokenHistorySize, historyPerSlot, MinTokenHistorySize)
	}
	if c.testHistorySize > 0 {
		c.TokenHistorySize = c.testHistorySize
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
	if err := c.normalizeReliable(shards); err != nil {
		return err
	}
	if c.Clock == nil {
		c.Clock = time.Now
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}

func checkQueueSize(name string, n int) error {
	if n < 4 || n > maxQueueSize || n&(n-1) != 0 {
		return fmt.Errorf("netcode: server config: %s %d; want a power of two from 4 to %d (0 means %d)", name, n, maxQueueSize, DefaultQueueSize)
	}
	return nil
}

// listenShards checks ServerConfig.Shards for Listen and returns the
// sockets to open per bind address.
func (c *ServerConfig) listenShards() (int, error) {
	n := c.Shards
	if n == 0 {
		n = runtime.GOMAXPROCS(0)
		if c.Manual {
			n = 1
		}
	}
	if n < 1 || n > maxShards {
		return 0, fmt.Errorf("netcode: server config: Shards %d; allowed 1 to %d (0 means GOMAXPROCS, or 1 in manual mode)", c.Shards, maxShards)
	}
	return n, nil
}

// setPublic checks PublicAddresses, or takes the conns' addresses when it
// is empty.
func (c *ServerConfig) setPublic(conns []batchio.Conn) error {
	if len(c.PublicAddresses) == 0 {
		var pub []netip.AddrPort
		for _, conn := range conns {
			a := conn.LocalAddr()
			if !a.IsValid() || a.Addr().IsUnspecified() || a.Port() == 0 {
				return fmt.Errorf("%w (conn bound to %v)", errPublicUnspecified, a)
			}
			a = netip.AddrPortFrom(a.Addr().WithZone(""), a.Port())
			if !containsAddr(pub, a) { // shards of one bind share an address
				pub = append(pub, a)
			}
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

func containsAddr(list []netip.AddrPort, a netip.AddrPort) bool {
	for _, b := range list {
		if a == b {
			return true
		}
	}
	return false
}
