// Command netcode-server is the reference netcode dedicated server: the
// engine's server with a built-in game (echo for load tests, relay), the
// operational HTTP endpoints (/metrics, /healthz, /readyz), a graceful
// drain on SIGTERM and, with -agones, the Agones GameServer lifecycle. It
// is a thin main around package engine/dedicated; a game team copies it
// and plugs in its own dedicated.Game.
//
//	netcode-server -protocol 1122334455667788 -key-file /run/secrets/netcode-key \
//	    -bind 0.0.0.0:40000 -bind [::]:40000 -public 203.0.113.7:40000 -http 0.0.0.0:8080
//
// Every flag can also come from the environment, NETCODE_ and its name
// upper-cased with dashes as underscores (NETCODE_MAX_CLIENTS); the
// command line wins. The private key comes from -key-file or from
// NETCODE_PRIVATE_KEY (64 hex digits); it is never a flag value, never
// logged and never echoed.
//
// Without a key the server runs in development mode: it makes a
// throwaway key for the run, writes it to a file only the user can read
// (its path is logged, with a netbench command line that loads the
// server), removes the file at exit, and serves on loopback addresses
// only, so that it can be run from a fresh clone with no secret on disk
// and is never reachable from elsewhere with a key nobody configured.
// -agones needs a real key.
//
// With -webtransport ADDR the same server also serves browsers, over
// WebTransport datagrams on that UDP address (package
// batchio/webtransport): their connect tokens name it (or
// -webtransport-public). -webtransport-cert and -webtransport-key give
// the certificate; without them a development certificate, on loopback
// only, whose SHA-256 pages pin with serverCertificateHashes: it is logged
// and, with -webtransport-hash-file, written for the token service.
//
// SIGTERM or SIGINT drains: new players are refused and /readyz answers
// 503 at once, players play on for up to -drain-grace, then are
// disconnected; the process exits 0. A second signal ends it at once.
//
// Exit status: 0 after a drain (and for -h and -version), 2 for a usage
// error (a bad flag, variable or argument; nothing was started), 1 when
// the server failed (an unreadable key file included).
package main

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"syscall"

	"github.com/netcode-go/netcode/cmd/internal/cli"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/dedicated"
	"github.com/netcode-go/netcode/engine/metrics"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() {
		<-ctx.Done()
		stop() // a second signal takes the default action: the process ends at once
	}()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

// run runs the server until ctx is done and returns the exit status.
func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, getenv, stdout)
	if err != nil {
		return cli.Exit(stderr, "netcode-server", err)
	}
	log := newLogger(o.logFormat, o.logLevel, stderr)
	cfg, g, cleanup, err := configure(o, getenv, log)
	if err != nil {
		return cli.Exit(stderr, "netcode-server", err)
	}
	defer cleanup()
	if wrapGame != nil {
		g = wrapGame(g)
	}
	if err := dedicated.Run(ctx, cfg, g); err != nil {
		log.Error("netcode-server failed", slog.Any("err", err))
		return cli.ExitFailure
	}
	return cli.ExitOK
}

// newLogger makes the structured logger of -log-format and -log-level
// (both checked when parsed).
func newLogger(format, level string, w io.Writer) *slog.Logger {
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	opts := &slog.HandlerOptions{Level: lv}
	if format == "json" {
		return slog.New(slog.NewJSONHandler(w, opts))
	}
	return slog.New(slog.NewTextHandler(w, opts))
}

// configure turns the options into the runner's config. cleanup removes
// the development key file, if one was made.
func configure(o *options, getenv func(string) string, log *slog.Logger) (cfg dedicated.Config, g dedicated.Game, cleanup func(), err error) {
	cleanup = func() {}
	if g, err = game(o.game); err != nil {
		return
	}
	key, err := readKey(o.keyFile, getenv)
	if err != nil {
		return
	}
	keySource := "-key-file " + o.keyFile
	if o.keyFile == "" {
		keySource = keyEnv
	}
	dev := key == nil
	if dev {
		if err = checkDev(o); err != nil {
			return
		}
		if o.protocolHex == "" {
			o.protocolHex = devProtocolHex
		}
	} else if o.protocolHex == "" {
		err = usagef("-protocol is required with a key: the game's protocol id, 1 to 16 hex digits")
		return
	}
	protocol, err := parseProtocol(o.protocolHex)
	if err != nil {
		return
	}
	if dev && o.webTransport.IsValid() && !o.webTransport.Addr().IsLoopback() {
		err = usagef("no private key: the development mode serves on loopback addresses only, and -webtransport %v is not one", o.webTransport)
		return
	}
	wt, err := webTransportConfig(o)
	if err != nil {
		return
	}
	if len(o.binds) == 0 {
		o.binds = addrList{netip.MustParseAddrPort(defaultBind)}
	}
	if len(o.public) == 0 && !o.agones {
		for _, b := range o.binds {
			if b.Addr().IsUnspecified() {
				err = usagef("-public is required with -bind %v: the address players reach, which the connect tokens name (or -agones, which reads it from the GameServer)", b)
				return
			}
		}
	}
	var devPath string
	if dev {
		if key, devPath, err = devKey(); err != nil {
			return
		}
		cleanup = func() { os.Remove(devPath) }
		keySource = "development key in " + devPath
	}
	// The first line names the build, then everything the flags decided.
	b := cli.Build()
	log.Info("netcode-server starting", slog.String("version", b.Version), slog.String("revision", b.Revision), slog.String("go", b.GoVersion),
		slog.String("game", o.game), slog.String("protocol", engine.IDString(protocol)),
		slog.String("key", keySource), slog.String("bind", o.binds.String()), slog.String("public", o.public.String()),
		slog.String("http", o.httpAddr), slog.String("webtransport", fmtOff(o.webTransport)), slog.Bool("agones", o.agones))
	if dev {
		target := o.binds[0]
		if len(o.public) > 0 {
			target = o.public[0]
		}
		log.Warn("development mode: no private key configured (-key-file or "+keyEnv+"); made a throwaway key for this run, serving on loopback only",
			slog.String("key_file", devPath),
			slog.String("load_it_with", fmt.Sprintf("go run ./cmd/netbench -target %v -protocol %s -key $(cat %s)", target, o.protocolHex, devPath)))
	}
	cfg = dedicated.Config{
		Server: engine.ServerConfig{
			ProtocolID:              protocol,
			PrivateKey:              key,
			PublicAddresses:         o.public,
			MaxClients:              o.maxClients,
			Shards:                  o.shards,
			MaxConnectTokenLifetime: o.tokenLifetime,
		},
		Socket:     socketConfig(o),
		Bind:       o.binds,
		HTTPAddr:   o.httpAddr,
		TickRate:   o.tick,
		DrainGrace: o.drainGrace,
		GameStall:  o.gameStall,
		Logger:     log,
		Registry:   registry(b),
	}
	if wt != nil {
		cfg.WebTransport, cfg.WebTransportPublic = wt, o.webTransportPublic
		cfg.WebTransportListening = publishHash(o, log, wt.Certificate == nil)
	}
	if o.agones {
		a := &dedicated.AgonesConfig{PortName: o.agonesPort}
		if a.Lifecycle.Tracking, err = tracking(o.agonesTracking); err != nil {
			cleanup()
			return
		}
		cfg.Agones = a
	}
	return cfg, g, cleanup, nil
}

// registry is the server's metrics registry: the Go runtime's and the
// process's collectors, and netcode_build_info.
func registry(b cli.BuildInfo) metrics.Registry {
	reg := metrics.NewRegistry()
	reg.MustRegister(metrics.NewBuildInfo(b.Version, b.Revision, b.GoVersion))
	return reg
}

// checkDev fills in and checks the development mode's binds: loopback only,
// and no Agones.
func checkDev(o *options) error {
	if o.agones {
		return usagef("-agones needs the private key the token service uses: give -key-file FILE or set %s (64 hex digits)", keyEnv)
	}
	if len(o.binds) == 0 {
		o.binds = addrList{netip.MustParseAddrPort(devBind)}
	}
	for _, b := range o.binds {
		if !b.Addr().IsLoopback() {
			return usagef("no private key: give -key-file FILE or set %s (64 hex digits; netcode-token keygen makes one). Without one the server makes a throwaway development key, on loopback addresses only (-bind %s), not on %v", keyEnv, devBind, b)
		}
	}
	return nil
}

func fmtOff(a netip.AddrPort) string {
	if !a.IsValid() {
		return "off"
	}
	return a.String()
}
