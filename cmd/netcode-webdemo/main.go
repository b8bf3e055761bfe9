// Command netcode-webdemo is the browser example: in one process, a
// netcode server running an echo game for UDP and WebTransport players,
// the token service, and the game's web backend, which serves a page that
// gets a connect token, connects from the browser (the Go client compiled
// to WebAssembly, web/netcode.js) and shows round-trip times.
//
//	go run ./cmd/netcode-webdemo        # then open the URL it prints
//
// It is a development setup: a throwaway key for the run, a self-signed
// certificate valid for days whose hash the page pins
// (serverCertificateHashes), the token service taking the player's id
// from the backend on loopback, and every address on loopback by default.
// The page is served over plain HTTP, which browsers treat as a secure
// context (WebTransport needs one) only on localhost addresses.
//
// The client is built at start with the go command (a few seconds);
// -dist DIR serves one built by go run ./web/build -o DIR instead.
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
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	os.Exit(run(ctx, os.Args[1:], os.Getenv, os.Stdout, os.Stderr))
}

func addrFlag(f *cli.FlagSet, p *netip.AddrPort, name, def, usage string) {
	cli.Var(f, p, name, netip.MustParseAddrPort(def), usage, func(s string) (netip.AddrPort, error) {
		a, err := netip.ParseAddrPort(s)
		if err != nil {
			return a, fmt.Errorf("want IP:port, such as %s", def)
		}
		return a, nil
	}, netip.AddrPort.String)
}

func run(ctx context.Context, args []string, getenv func(string) string, stdout, stderr io.Writer) int {
	var cfg config
	var level string
	f := cli.New("netcode-webdemo", "[flags]")
	addrFlag(f, &cfg.HTTP, "http", "127.0.0.1:8000", "serve the page, the client and /api/token on `ADDR`")
	addrFlag(f, &cfg.UDP, "udp", "127.0.0.1:40001", "the game server's UDP `ADDR`")
	addrFlag(f, &cfg.WebTransport, "webtransport", "127.0.0.1:4433", "the game server's WebTransport (HTTP/3, UDP) `ADDR`")
	f.StringVar(&cfg.Dist, "dist", "", "serve the client built in `DIR` (go run ./web/build -o DIR) instead of building it at start")
	f.Choice(&level, "log-level", "info", []string{"debug", "info", "warn", "error"}, "log `level`")
	if err := f.Parse(args, getenv, stdout); err != nil {
		return cli.Exit(stderr, f.Name(), err)
	}
	if f.NArg() > 0 {
		return cli.Exit(stderr, f.Name(), cli.Usagef("no arguments; got %q", f.Args()))
	}
	var lv slog.Level
	_ = lv.UnmarshalText([]byte(level))
	cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: lv}))
	d, err := start(ctx, cfg)
	if err != nil {
		return cli.Exit(stderr, f.Name(), err)
	}
	defer d.Close()
	fmt.Fprintf(stdout, "netcode-webdemo: open %s in a browser with WebTransport (Chromium, Firefox)\n", d.URL())
	fmt.Fprintf(stdout, "netcode-webdemo: native players: UDP %v, tokens from POST http://%v/?client_id=N (this host only)\n", d.udp.LocalAddr(), d.tokenLn.Addr())
	<-ctx.Done()
	return cli.ExitOK
}
