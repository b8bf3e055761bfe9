//go:build linux

package main

import (
	"encoding/hex"
	"fmt"
	"log/slog"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/bench"
	"github.com/netcode-go/netcode/engine"
)

// echoServer is a running echo server and what the reports need of its
// sockets.
type echoServer struct {
	echo  *bench.EchoServer
	addr  netip.AddrPort
	mode  string // -recv
	batch int
	done  chan error
}

// startEchoServer starts the echo server: -shards N sockets and shard
// goroutines (the default mode), or with -shards 0 one socket driven by
// the application goroutine (the manual mode).
func startEchoServer(o *options, addr netip.AddrPort) (*echoServer, error) {
	sock := batchio.Config{BatchSize: o.batch, DisableGSO: !o.gso, BlockingWait: o.recv == "block"}
	cfg := engine.ServerConfig{
		ProtocolID: o.protocolID,
		PrivateKey: o.key,
		MaxClients: o.clients,
		Manual:     o.shards == 0,
		// Validated by the engine, which names the allowed range.
		TokenDecryptsPerSecond: o.decryptRate,
		DisableRequestShedding: o.noShed,
	}
	if o.mode == "handshake" {
		// Every handshake uses a fresh token, and the history keeps each
		// until it expires: room for ~35,000 handshakes/s of 30 s tokens.
		cfg.TokenHistorySize = 1 << 20
	}
	srv, err := listenServer(cfg, sock, addr, max(o.shards, 1), o.recv)
	if err != nil {
		return nil, err
	}
	s := &echoServer{mode: o.recv, batch: o.batch, done: make(chan error, 1), addr: srv.LocalAddrs()[0],
		echo: bench.NewEchoServer(srv, bench.EchoConfig{Manual: cfg.Manual, LockOSThread: cfg.Manual && sock.BlockingWait})}
	go func() { s.done <- s.echo.Run() }()
	return s, nil
}

// listenServer starts the engine server on shards sockets for -recv:
// batchio's (mmsg, block) through engine.Listen, or bench's comparison
// sockets (xnet, single, which ignore GSO) given to engine.NewServer.
func listenServer(cfg engine.ServerConfig, sock batchio.Config, addr netip.AddrPort, shards int, recv string) (*engine.Server, error) {
	if recv != "xnet" && recv != "single" {
		cfg.Shards = shards
		return engine.Listen(cfg, sock, addr)
	}
	sock.ReusePort = shards > 1
	var conns []batchio.Conn
	closeAll := func() {
		for _, c := range conns {
			c.Close()
		}
	}
	for range shards {
		c, err := bench.ListenComparison(addr, recv, sock)
		if err != nil {
			closeAll()
			return nil, err
		}
		conns = append(conns, c)
		addr = c.LocalAddr()
	}
	srv, err := engine.NewServer(cfg, conns...)
	if err != nil {
		closeAll()
		return nil, err
	}
	return srv, nil // the comparison sockets live as long as the process
}

func (s *echoServer) close() error {
	s.echo.Stop()
	return <-s.done
}

// runServe is -serve ADDR: the echo server alone, until interrupted, with
// a status line every 5 seconds.
func runServe(o *options) error {
	addr, err := netip.ParseAddrPort(o.serve)
	if err != nil {
		return fmt.Errorf("-serve %q: want host:port: %w", o.serve, err)
	}
	srv, err := startEchoServer(o, addr)
	if err != nil {
		return err
	}
	slog.Info("netbench echo server", "addr", srv.addr, "shards", o.shards, "key", hex.EncodeToString(o.key),
		"protocol", "0x"+strconv.FormatUint(o.protocolID, 16), "max_clients", srv.echo.MaxClients(), "recv", o.recv)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	var stop <-chan time.Time // -duration, if given
	if o.durationSet {
		stop = time.After(o.duration)
	}
	last, lastAt := srv.echo.Counters(), time.Now()
	for {
		select {
		case <-sig:
			return srv.close()
		case <-stop:
			return srv.close()
		case err := <-srv.done:
			return err
		case now := <-t.C:
			c := srv.echo.Counters()
			dt := now.Sub(lastAt).Seconds()
			slog.Info("netbench echo server", "connected", c.Connected,
				"in_pps", int(float64(c.PacketsIn-last.PacketsIn)/dt),
				"out_pps", int(float64(c.PacketsOut-last.PacketsOut)/dt),
				"dropped", c.Dropped)
			last, lastAt = c, now
		}
	}
}
