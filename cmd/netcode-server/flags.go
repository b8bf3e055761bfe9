package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"strconv"
	"strings"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/agones"
	"github.com/netcode-go/netcode/engine/dedicated"
)

// envPrefix is the prefix of the environment variables that set flags:
// -max-clients is NETCODE_MAX_CLIENTS. A flag on the command line wins.
const envPrefix = "NETCODE_"

// keyEnv holds the private key itself (the file's content).
const keyEnv = "NETCODE_PRIVATE_KEY"

// Defaults the flags document.
const (
	defaultBind    = "0.0.0.0:40000"
	devBind        = "127.0.0.1:40000"
	defaultHTTP    = "127.0.0.1:8080"
	devProtocolHex = "6e6574636f6465" // "netcode"
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
	tokenLifetime  time.Duration
	agones         bool
	agonesTracking string
	agonesPort     string
	game           string
	tick           float64
	logFormat      string
	logLevel       string
}

// usageError marks errors in the command line or environment (exit 2).
type usageError struct{ err error }

func (e usageError) Error() string { return e.err.Error() }
func (e usageError) Unwrap() error { return e.err }

func usagef(format string, args ...any) error { return usageError{fmt.Errorf(format, args...)} }

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

// parseFlags reads args, then the environment for every flag not given.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (*options, error) {
	o := &options{}
	fs := flag.NewFlagSet("netcode-server", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Var(&o.binds, "bind", "UDP address to listen on; repeat for IPv4 and IPv6 (default "+defaultBind+", or "+devBind+" without a key)")
	fs.Var(&o.public, "public", "address the connect tokens name for this server; repeat for several (default: the bind addresses, or the Agones GameServer's address with -agones)")
	fs.StringVar(&o.protocolHex, "protocol", "", "the game's protocol id in hex, 1 to 16 digits (required with a key; "+devProtocolHex+" in development mode)")
	fs.StringVar(&o.keyFile, "key-file", "", "file holding the 32-byte private key as 64 hex digits (or set "+keyEnv+"); without either, a throwaway development key on loopback only")
	fs.IntVar(&o.maxClients, "max-clients", engine.DefaultMaxClients, fmt.Sprintf("client slots, 1 to %d", engine.MaxServerClients))
	fs.IntVar(&o.shards, "shards", 0, "sockets and shard goroutines per bind address, 1 to 256 (0: one per CPU)")
	fs.StringVar(&o.httpAddr, "http", defaultHTTP, "TCP address of /metrics, /healthz and /readyz (empty or off: none)")
	fs.DurationVar(&o.drainGrace, "drain-grace", dedicated.DefaultDrainGrace, "on SIGTERM, how long players may play on before they are disconnected")
	fs.DurationVar(&o.tokenLifetime, "token-lifetime", engine.DefaultMaxConnectTokenLifetime, "the connect tokens' lifetime as the token service issues them (whole seconds)")
	fs.BoolVar(&o.agones, "agones", false, "take part in the Agones GameServer lifecycle through the SDK sidecar (localhost:$AGONES_SDK_HTTP_PORT)")
	fs.StringVar(&o.agonesTracking, "agones-tracking", "counter", "how players are reported to Agones: counter, list (the Counter or List \"players\"), players (alpha player tracking) or none")
	fs.StringVar(&o.agonesPort, "agones-port", "", "the GameServer port that names the public address (empty: the first)")
	fs.StringVar(&o.game, "game", "echo", "built-in game: echo (payloads back to their sender) or relay (to every other client)")
	fs.Float64Var(&o.tick, "tick", dedicated.DefaultTickRate, fmt.Sprintf("game ticks per second, above 0 up to %d", dedicated.MaxTickRate))
	fs.StringVar(&o.logFormat, "log-format", "text", "log format: json or text")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "usage: netcode-server [flags]\n\nEvery flag can also be set by the environment: -max-clients as %sMAX_CLIENTS\n(repeatable flags as a comma-separated list); the command line wins.\n\n", envPrefix)
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil, err
		}
		return nil, usageError{err}
	}
	if fs.NArg() > 0 {
		return nil, usagef("unexpected arguments %q; every setting is a flag", fs.Args())
	}
	given := make(map[string]bool)
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		name := envName(f.Name)
		v := getenv(name)
		if err != nil || given[f.Name] || v == "" {
			return
		}
		if serr := f.Value.Set(v); serr != nil {
			err = usagef("%s: %v", name, serr)
		}
	})
	return o, err
}

// envName is the variable for a flag: NETCODE_ and the name upper-cased,
// dashes as underscores.
func envName(flagName string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(flagName, "-", "_"))
}

// parseProtocol reads 1 to 16 hex digits, 0x optional.
func parseProtocol(s string) (uint64, error) {
	t := strings.TrimPrefix(strings.TrimPrefix(s, "0x"), "0X")
	v, err := strconv.ParseUint(t, 16, 64)
	if t == "" || len(t) > 16 || err != nil {
		return 0, usagef("-protocol %q: want 1 to 16 hex digits (0x optional)", s)
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
