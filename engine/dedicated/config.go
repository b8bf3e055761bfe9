package dedicated

import (
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/webtransport"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/agones"
	"github.com/netcode-go/netcode/engine/health"
	"github.com/netcode-go/netcode/engine/metrics"
)

// Defaults and bounds of Config.
const (
	// DefaultTickRate is the game's tick rate when Config.TickRate is 0.
	DefaultTickRate = 30
	// MaxTickRate bounds Config.TickRate.
	MaxTickRate = 1000
	// DefaultDrainGrace is how long draining players may play on when
	// Config.DrainGrace is 0.
	DefaultDrainGrace = 30 * time.Second
	// MaxDrainGrace bounds Config.DrainGrace.
	MaxDrainGrace = time.Hour
	// HTTPShutdownTimeout bounds the HTTP server's graceful close.
	HTTPShutdownTimeout = 2 * time.Second
	// DefaultAddressTimeout bounds the wait for the GameServer's status
	// when the public address comes from Agones.
	DefaultAddressTimeout = 2 * time.Minute
	// DefaultAgonesShutdownTimeout bounds the sidecar's Shutdown call.
	DefaultAgonesShutdownTimeout = 5 * time.Second
	// DefaultGameStall is how long one call into the game may last when
	// Config.GameStall is 0: a hundred and fifty ticks at the default
	// rate, far beyond any tick a player would sit through.
	DefaultGameStall = 5 * time.Second
	// MinGameStall and MaxGameStall bound Config.GameStall.
	MinGameStall = 10 * time.Millisecond
	MaxGameStall = 10 * time.Minute
)

// Config configures Run.
type Config struct {
	// Server is the netcode server's configuration: ProtocolID and
	// PrivateKey are required. Run uses the default mode (Manual must be
	// false); Shards is the sockets per bind address. PublicAddresses may
	// be left empty when the binds are specific addresses with ports, or
	// when Agones tells the address. Logger defaults to Config.Logger.
	Server engine.ServerConfig
	// Socket configures the UDP sockets.
	Socket batchio.Config
	// Bind are the addresses to listen on (one or more, IPv4 and IPv6).
	Bind []netip.AddrPort
	// HTTPAddr is where /metrics, /healthz and /readyz are served
	// (host:port; port 0 picks one). Empty: no HTTP server.
	HTTPAddr string
	// TickRate is how many times a second Game.Tick runs (0 means
	// DefaultTickRate; allowed above 0 up to MaxTickRate).
	TickRate float64
	// DrainGrace is how long connected players may play on once the
	// drain has begun (0 means DefaultDrainGrace; allowed 1ms to
	// MaxDrainGrace).
	DrainGrace time.Duration
	// LiveStall is how long a shard may go without a pass before the
	// server is not live: /healthz, netcode_live and the Agones Health
	// pings (0 means health.DefaultStall; allowed 1ms to 1h).
	LiveStall time.Duration
	// GameStall is how long one call into the game (a Tick, or the
	// events of one poll) may last before the game counts as hung: the
	// server is then not live (/healthz 503, netcode_live 0, no Agones
	// Health pings), and the drain stops waiting for the game (0 means
	// DefaultGameStall; allowed MinGameStall to MaxGameStall).
	GameStall time.Duration
	// WebTransport, if not nil, serves browsers too: a WebTransport
	// listener (package batchio/webtransport) is one more shard of the
	// same server, so limits, metrics and the drain cover both.
	WebTransport *webtransport.Config
	// WebTransportPublic is the address browsers' tokens name for the
	// WebTransport listener, added to Server.PublicAddresses when those
	// are given (or come from Agones). Zero: the listener's address,
	// which must then be a specific one.
	WebTransportPublic netip.AddrPort
	// WebTransportListening, if set, is called once the WebTransport
	// listener is open, before the server starts: to publish its
	// certificate hash, for example. An error stops Run.
	WebTransportListening func(*webtransport.Conn) error
	// Agones, if not nil, runs the Agones GameServer lifecycle.
	Agones *AgonesConfig
	// Logger receives the lifecycle (nil: nothing is logged).
	Logger *slog.Logger
	// Registry is where the server's metrics are registered and served
	// from; a game may register its own there. Nil means a new registry
	// with the Go runtime's and the process's collectors.
	Registry metrics.Registry
	// Serving, if set, is called once the server listens, with the HTTP
	// server's address (nil without one), before any game callback.
	Serving func(srv *engine.Server, httpAddr net.Addr)
}

// AgonesConfig configures the Agones lifecycle (see package agones).
type AgonesConfig struct {
	// SDK reaches the sidecar; the zero value means
	// localhost:$AGONES_SDK_HTTP_PORT.
	SDK agones.Config
	// Lifecycle sets the Health and player sync periods, the player
	// tracking (Counter, List or the alpha player tracking) and labels.
	// Its Logger defaults to Config.Logger.
	Lifecycle agones.LifecycleConfig
	// PortName is the GameServer port whose host port clients reach, for
	// the public address ("" means the first port).
	PortName string
	// AddressTimeout bounds the wait for the sidecar's GameServer status
	// when Server.PublicAddresses is empty and the public address comes
	// from it (0 means DefaultAddressTimeout).
	AddressTimeout time.Duration
	// ShutdownTimeout bounds the Shutdown call at the end of the drain (0
	// means DefaultAgonesShutdownTimeout; allowed up to 1 min).
	ShutdownTimeout time.Duration
}

// check fills in defaults and checks every field.
func (c *Config) check() error {
	switch {
	case c.Server.Manual:
		return errors.New("dedicated: Config.Server.Manual is set; the dedicated server runs the default mode (shard goroutines)")
	case len(c.Bind) == 0:
		return errors.New("dedicated: Config.Bind is empty; want at least one address to listen on, such as 0.0.0.0:40000")
	}
	for i, b := range c.Bind {
		if !b.IsValid() {
			return fmt.Errorf("dedicated: Config.Bind[%d] is not an address; want IPv4:port or [IPv6]:port", i)
		}
	}
	if c.WebTransport == nil && c.WebTransportPublic.IsValid() {
		return errors.New("dedicated: Config.WebTransportPublic is set without Config.WebTransport")
	}
	if a := c.WebTransportPublic; a.IsValid() && (a.Addr().IsUnspecified() || a.Port() == 0) {
		return fmt.Errorf("dedicated: Config.WebTransportPublic %v; want the address browsers reach, with a port", a)
	}
	if c.HTTPAddr != "" {
		if _, _, err := net.SplitHostPort(c.HTTPAddr); err != nil {
			return fmt.Errorf("dedicated: Config.HTTPAddr %q; want host:port (such as 127.0.0.1:8080), or empty for no HTTP server", c.HTTPAddr)
		}
	}
	if c.TickRate == 0 {
		c.TickRate = DefaultTickRate
	}
	if math.IsNaN(c.TickRate) || c.TickRate <= 0 || c.TickRate > MaxTickRate {
		return fmt.Errorf("dedicated: Config.TickRate %v; allowed above 0 up to %d Hz (0 means %d)", c.TickRate, MaxTickRate, DefaultTickRate)
	}
	if c.DrainGrace == 0 {
		c.DrainGrace = DefaultDrainGrace
	}
	if c.DrainGrace < time.Millisecond || c.DrainGrace > MaxDrainGrace {
		return fmt.Errorf("dedicated: Config.DrainGrace %v; allowed 1ms to %v (0 means %v)", c.DrainGrace, MaxDrainGrace, DefaultDrainGrace)
	}
	if c.LiveStall == 0 {
		c.LiveStall = health.DefaultStall
	}
	if c.LiveStall < time.Millisecond || c.LiveStall > time.Hour {
		return fmt.Errorf("dedicated: Config.LiveStall %v; allowed 1ms to 1h (0 means %v)", c.LiveStall, health.DefaultStall)
	}
	if c.GameStall == 0 {
		c.GameStall = DefaultGameStall
	}
	if c.GameStall < MinGameStall || c.GameStall > MaxGameStall {
		return fmt.Errorf("dedicated: Config.GameStall %v; allowed %v to %v (0 means %v)", c.GameStall, MinGameStall, MaxGameStall, DefaultGameStall)
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.DiscardHandler)
	}
	if c.Server.Logger == nil {
		c.Server.Logger = c.Logger
	}
	if c.Agones != nil {
		a := *c.Agones // defaults go into Run's copy, not the caller's
		c.Agones = &a
		if a.AddressTimeout == 0 {
			a.AddressTimeout = DefaultAddressTimeout
		}
		if a.AddressTimeout < time.Millisecond || a.AddressTimeout > time.Hour {
			return fmt.Errorf("dedicated: AgonesConfig.AddressTimeout %v; allowed 1ms to 1h (0 means %v)", a.AddressTimeout, DefaultAddressTimeout)
		}
		if a.ShutdownTimeout == 0 {
			a.ShutdownTimeout = DefaultAgonesShutdownTimeout
		}
		if a.ShutdownTimeout < time.Millisecond || a.ShutdownTimeout > time.Minute {
			return fmt.Errorf("dedicated: AgonesConfig.ShutdownTimeout %v; allowed 1ms to 1m (0 means %v)", a.ShutdownTimeout, DefaultAgonesShutdownTimeout)
		}
		if a.Lifecycle.Logger == nil {
			a.Lifecycle.Logger = c.Logger
		}
	}
	return nil
}
