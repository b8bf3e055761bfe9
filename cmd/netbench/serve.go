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

// echoServer is a running bench.EchoServer with its socket.
type echoServer struct {
	echo *bench.EchoServer
	conn *batchio.MmsgConn
	done chan error
}

func startEchoServer(o *options, addr netip.AddrPort) (*echoServer, error) {
	conn, err := batchio.ListenMmsg(addr, batchio.MmsgConfig{Mode: o.recvMode, BatchSize: o.batch})
	if err != nil {
		return nil, err
	}
	cfg := bench.EchoConfig{
		Server: engine.ServerConfig{
			ProtocolID: o.protocolID,
			PrivateKey: o.key,
			MaxClients: o.clients,
			// Enough buffers for every client to have a burst queued.
			ReceiveBuffers: min(max(16*o.clients, 4096), 1<<20),
		},
		LockOSThread: o.recvMode == batchio.RecvBlock,
	}
	echo, err := bench.NewEchoServer(cfg, conn)
	if err != nil {
		conn.Close()
		return nil, err
	}
	s := &echoServer{echo: echo, conn: conn, done: make(chan error, 1)}
	go func() { s.done <- echo.Run() }()
	return s, nil
}

func (s *echoServer) close() error {
	s.echo.Stop()
	err := <-s.done
	s.conn.Close()
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
	slog.Info("netbench echo server", "addr", srv.conn.LocalAddr(), "key", hex.EncodeToString(o.key),
		"protocol", "0x"+strconv.FormatUint(o.protocolID, 16), "max_clients", srv.echo.MaxClients(), "recv", o.recvMode)
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
			srv.conn.Close()
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
