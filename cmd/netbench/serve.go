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

// echoRunner is the echo server of either kind: the single-loop
// engine.Server (bench.EchoServer, -shards 0) or the sharded one
// (bench.ShardedEcho, -shards N).
type echoRunner interface {
	Run() error
	Stop()
	Counters() bench.EchoCounters
	DropReasons() map[string]uint64
	MaxClients() int
}

// echoServer is a running echo server and what the reports need of its
// sockets.
type echoServer struct {
	echo  echoRunner
	addr  netip.AddrPort
	mode  string // -recv
	batch int
	conn  batchio.Conn // the single-loop server's socket; nil when sharded
	done  chan error
}

func startEchoServer(o *options, addr netip.AddrPort) (*echoServer, error) {
	sock := batchio.Config{BatchSize: o.batch, DisableGSO: !o.gso, BlockingWait: o.recv == "block"}
	server := engine.ServerConfig{
		ProtocolID: o.protocolID,
		PrivateKey: o.key,
		MaxClients: o.clients,
		// Validated by the engine, which names the allowed range.
		TokenDecryptsPerSecond: o.decryptRate,
		DisableRequestShedding: o.noShed,
	}
	if o.mode == "handshake" {
		// Every handshake uses a fresh token, and the history keeps each
		// until it expires: room for ~35,000 handshakes/s of 30 s tokens.
		server.TokenHistorySize = 1 << 20
	}
	s := &echoServer{mode: o.recv, batch: o.batch, done: make(chan error, 1)}
	if o.shards > 0 {
		echo, err := bench.NewShardedEcho(engine.ShardedConfig{
			Server: server, Bind: []netip.AddrPort{addr}, Shards: o.shards, Socket: sock,
		})
		if err != nil {
			return nil, err
		}
		s.echo, s.addr = echo, echo.Server().LocalAddrs()[0]
	} else {
		conn, err := listenServerSocket(addr, o.recv, sock)
		if err != nil {
			return nil, err
		}
		// Enough buffers for every client to have a burst queued.
		server.ReceiveBuffers = min(max(16*o.clients, 4096), 1<<20)
		echo, err := bench.NewEchoServer(bench.EchoConfig{Server: server, LockOSThread: sock.BlockingWait}, conn)
		if err != nil {
			conn.Close()
			return nil, err
		}
		s.echo, s.conn, s.addr = echo, conn, conn.LocalAddr()
	}
	go func() { s.done <- s.echo.Run() }()
	return s, nil
}

// listenServerSocket opens the single-loop server's socket for -recv:
// batchio's (mmsg, block) or one of bench's comparison sockets (xnet,
// single), which ignore the GSO setting.
func listenServerSocket(addr netip.AddrPort, recv string, cfg batchio.Config) (batchio.Conn, error) {
	if recv == "xnet" || recv == "single" {
		return bench.ListenComparison(addr, recv, cfg)
	}
	return batchio.Listen(addr, cfg)
}

func (s *echoServer) close() error {
	s.echo.Stop()
	err := <-s.done
	if s.conn != nil {
		s.conn.Close()
	}
	return err
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
	last, lastAt := srv.echo.Counters(), time.Now()
	for {
		select {
		case <-sig:
			return srv.close()
		case err := <-srv.done:
			if srv.conn != nil {
				srv.conn.Close()
			}
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
