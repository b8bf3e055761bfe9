package main

import (
	"fmt"
	"io"
	"net/netip"
	"strings"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/webtransport"
	"github.com/netcode-go/netcode/cmd/internal/cli"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/agones"
	"github.com/netcode-go/netcode/engine/dedicated"
)

// keyEnv holds the private key itself (the file's content).
const keyEnv = "NETCODE_PRIVATE_KEY"

// Defaults the flags document.
const (
	defaultBind    = "0.0.0.0:40000"
	devBind        = "127.0.0.1:40000"
	defaultHTTP    = "127.0.0.1:8080"
	devProtocolHex = "6e6574636f6465" // "netcode"
	maxShards      = 256
)

// options are the parsed flags.
type options struct {
	binds, public  addrList
	protocolHex    string
	keyFile        string
	maxClients     int
	shards         int
	httpAddr       string
	drainGrace     time.Duration
	gameStall      time.Duration
	tokenLifetime  time.Duration
	agones         bool
	agonesTracking string
	agonesPort     string
	game           string
	tick           float64
	logFormat      string
	logLevel       string
	sourceLimit    string
	sourceRate     int
	sourceBurst    int
	xdp            string
	xdpIf          string

	webTransport       netip.AddrPort // zero: none
	webTransportPublic netip.AddrPort
	webTransportCert   string
	webTransportKey    string
	webTransportHash   string
	webTransportOrigin []string
}

func usagef(format string, args ...any) error { return cli.Usagef(format, args...) }

// addrList is a repeatable address flag; from the environment it takes a
// comma-separated list.
type addrList []netip.AddrPort

func (l *addrList) String() string {
	if l == nil {
		return ""
	}
	s := make([]string, len(*l))
	for i, a := range *l {
		s[i] = a.String()
	}
	return strings.Join(s, ",")
}

func (l *addrList) Set(s string) error {
	for part := range strings.SplitSeq(s, ",") {
		a, err := netip.ParseAddrPort(strings.TrimSpace(part))
		if err != nil {
			return fmt.Errorf("%q: want IPv4:port or [IPv6]:port", part)
		}
		*l = append(*l, a)
	}
	return nil
}

// Choices of the flags that take a name.
var (
	gameChoices      = []string{"echo", "relay"}
	trackingChoices  = []string{"counter", "list", "players", "none"}
	logFormatChoices = []string{"json", "text"}
	logLevelChoices  = []string{"debug", "info", "warn", "error"}
	limitChoices     = []string{"off", "on", "try"}
	xdpChoices       = []string{"off", "native", "generic", "try"}
)

// maxSourceRate bounds -source-rate and -source-burst (batchio allows
// more; no game needs it).
const maxSourceRate = 1 << 24

// flagSet defines the command's flags on o.
func flagSet(o *options) *cli.FlagSet {
	fs := cli.New("netcode-server", "[flags]")
	fs.Var(&o.binds, "bind", "UDP `ADDR` to listen on; repeat for IPv4 and IPv6 (default "+defaultBind+", or "+devBind+" without a key)")
	fs.Var(&o.public, "public", "`ADDR` the connect tokens name for this server; repeat for several (default: the bind addresses, or the Agones GameServer's address with -agones)")
	fs.Hex(&o.protocolHex, "protocol", "the game's protocol id, 1 to 16 `HEX` digits (required with a key; "+devProtocolHex+" in development mode)")
	fs.StringVar(&o.keyFile, "key-file", "", "`FILE` holding the 32-byte private key as 64 hex digits (or set $"+keyEnv+"); without either, a throwaway development key on loopback only")
	fs.Int(&o.maxClients, "max-clients", engine.DefaultMaxClients, 1, engine.MaxServerClients, fmt.Sprintf("client slots, `N` from 1 to %d", engine.MaxServerClients))
	fs.Int(&o.shards, "shards", 0, 0, maxShards, fmt.Sprintf("sockets and shard goroutines per bind address, `N` from 1 to %d (0: one per CPU)", maxShards))
	fs.HostPort(&o.httpAddr, "http", defaultHTTP, true, "TCP `ADDR` of /metrics, /healthz and /readyz (off: none)")
	fs.Duration(&o.drainGrace, "drain-grace", dedicated.DefaultDrainGrace, time.Millisecond, dedicated.MaxDrainGrace, 0,
		fmt.Sprintf("on SIGTERM, how long players may play on before they are disconnected, a `DURATION` from 1ms to %v", dedicated.MaxDrainGrace))
	fs.Duration(&o.gameStall, "game-stall", dedicated.DefaultGameStall, dedicated.MinGameStall, dedicated.MaxGameStall, 0,
		fmt.Sprintf("how long one call into the game may last before the server reports itself not live (/healthz 503, no Agones health) and a shutdown gives up on it, a `DURATION` from %v to %v", dedicated.MinGameStall, dedicated.MaxGameStall))
	fs.Duration(&o.tokenLifetime, "token-lifetime", engine.DefaultMaxConnectTokenLifetime, time.Second, engine.MaxConnectTokenLifetimeLimit, time.Second,
		fmt.Sprintf("the connect tokens' lifetime as the token service issues them, a `DURATION` of whole seconds from 1s to %v", engine.MaxConnectTokenLifetimeLimit))
	fs.Bool(&o.agones, "agones", false, "take part in the Agones GameServer lifecycle through the SDK sidecar (localhost:$AGONES_SDK_HTTP_PORT)")
	fs.Choice(&o.agonesTracking, "agones-tracking", "counter", trackingChoices, "how players are reported to Agones: counter, list (the Counter or List \"players\"), players (alpha player tracking) or none")
	fs.StringVar(&o.agonesPort, "agones-port", "", "the GameServer port `NAME` that names the public address (empty: the first)")
	fs.Choice(&o.game, "game", "echo", gameChoices, "built-in game: echo (payloads back to their sender) or relay (to every other client)")
	fs.Float(&o.tick, "tick", dedicated.DefaultTickRate, 0, dedicated.MaxTickRate, fmt.Sprintf("game ticks per second, `HZ` above 0 up to %d", dedicated.MaxTickRate))
	fs.Choice(&o.sourceLimit, "source-limit", "off", limitChoices,
		"per-source limit in the kernel (an eBPF socket filter; Linux, CAP_BPF): off, on (fail without eBPF) or try (run without it, with a warning)")
	fs.Int(&o.sourceRate, "source-rate", batchio.DefaultSourceRate, 1, maxSourceRate,
		fmt.Sprintf("with -source-limit, the datagrams per second one source address and port may send, `N` from 1 to %d", maxSourceRate))
	fs.Int(&o.sourceBurst, "source-burst", batchio.DefaultSourceBurst, 1, maxSourceRate,
		fmt.Sprintf("with -source-limit, the datagrams one source may send at once, `N` from 1 to %d", maxSourceRate))
	fs.Choice(&o.xdp, "xdp", "off", xdpChoices,
		"datagram path: off (sockets), or AF_XDP with an XDP program on -xdp-if attached native, generic, or try (native, else generic, else sockets); Linux, root")
	fs.StringVar(&o.xdpIf, "xdp-if", "", "the network `INTERFACE` -xdp attaches to (the one the bind address arrives on)")
	addrOrOff := func(s string) (netip.AddrPort, error) {
		if s == "" || s == "off" {
			return netip.AddrPort{}, nil
		}
		a, err := netip.ParseAddrPort(s)
		if err != nil {
			return a, fmt.Errorf("want IPv4:port or [IPv6]:port, or off")
		}
		return a, nil
	}
	fmtAddr := func(a netip.AddrPort) string {
		if !a.IsValid() {
			return ""
		}
		return a.String()
	}
	cli.Var(fs, &o.webTransport, "webtransport", netip.AddrPort{},
		"UDP `ADDR` to serve browsers on, over WebTransport (HTTP/3) at path "+webtransport.DefaultPath+", beside the UDP binds (default: off)", addrOrOff, fmtAddr)
	cli.Var(fs, &o.webTransportPublic, "webtransport-public", netip.AddrPort{},
		"`ADDR` browsers' connect tokens name for -webtransport (default: its address; required when it is 0.0.0.0 or [::] and -public is given)", addrOrOff, fmtAddr)
	fs.StringVar(&o.webTransportCert, "webtransport-cert", "", "PEM `FILE` of the WebTransport TLS certificate (chain), with -webtransport-key; without both, a development certificate valid 10 days, on loopback only, whose hash is logged")
	fs.StringVar(&o.webTransportKey, "webtransport-key", "", "PEM `FILE` of the WebTransport certificate's private key")
	fs.StringVar(&o.webTransportHash, "webtransport-hash-file", "", "`FILE` to write the WebTransport certificate's SHA-256 to, as 64 hex digits, for the token service (netcode-token serve -webtransport-cert-hash-file)")
	cli.Var(fs, &o.webTransportOrigin, "webtransport-origin", nil,
		"web `ORIGIN`s (scheme://host[:port], comma-separated) whose pages may open WebTransport sessions (default: any)", parseOrigins, func(l []string) string { return strings.Join(l, ",") })
	fs.Choice(&o.logFormat, "log-format", "text", logFormatChoices, "log format: json or text")
	fs.Choice(&o.logLevel, "log-level", "info", logLevelChoices, "log level: debug, info, warn or error")
	fs.Notes("The private key itself may come from $" + keyEnv + " (64 hex digits); it is never a flag.\n" +
		"Exit status: 0 after a drain (or -h, -version), 2 for a usage error, 1 when the server failed.")
	return fs
}

// parseFlags reads args, then the environment for every flag not given.
// It returns cli.ErrDone after -h or -version.
func parseFlags(args []string, getenv func(string) string, stdout io.Writer) (*options, error) {
	o := &options{}
	fs := flagSet(o)
	if err := fs.Parse(args, getenv, stdout); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected arguments %q; every setting is a flag", fs.Args())
	}
	if (o.xdp == "off") != (o.xdpIf == "") {
		return nil, usagef("-xdp %s with -xdp-if %q: give both (an AF_XDP mode and the interface) or neither", o.xdp, o.xdpIf)
	}
	return o, nil
}

// parseProtocol reads the (already checked) protocol id.
func parseProtocol(s string) (uint64, error) {
	v, err := cli.ParseHex64(s)
	if err != nil {
		return 0, usagef("-protocol %q: %v", s, err)
	}
	return v, nil
}

// tracking reads -agones-tracking.
func tracking(s string) (agones.Tracking, error) {
	for _, t := range []agones.Tracking{agones.TrackNone, agones.TrackCounter, agones.TrackList, agones.TrackPlayers} {
		if s == t.String() {
			return t, nil
		}
	}
	return 0, usagef("-agones-tracking %q: want counter, list, players or none", s)
}

// game reads -game.
func game(s string) (dedicated.Game, error) {
	switch s {
	case "echo":
		return dedicated.Echo(), nil
	case "relay":
		return dedicated.Relay(), nil
	}
	return nil, usagef("-game %q: want echo or relay", s)
}

// socketConfig reads -source-limit, -source-rate, -source-burst, -xdp and
// -xdp-if.
func socketConfig(o *options) batchio.Config {
	var c batchio.Config
	if o.sourceLimit != "off" {
		c.SourceLimit = batchio.SourceLimit{Rate: o.sourceRate, Burst: o.sourceBurst, Optional: o.sourceLimit == "try"}
	}
	if mode, err := batchio.ParseXDPMode(o.xdp); err == nil && mode != batchio.XDPOff { // checked as a choice
		c.XDP = batchio.XDP{Mode: mode, Interface: o.xdpIf}
	}
	return c
}

// parseOrigins reads -webtransport-origin: a comma-separated list.
func parseOrigins(s string) ([]string, error) {
	var out []string
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		if !strings.Contains(part, "://") {
			return nil, fmt.Errorf("%q: want an origin, scheme://host[:port]", part)
		}
		out = append(out, part)
	}
	return out, nil
}
