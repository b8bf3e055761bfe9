//go:build linux

package main

import (
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"net"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/webtransport"
	"github.com/netcode-go/netcode/bench"
	"github.com/netcode-go/netcode/engine"
)

// app is the server application netbench runs: bench's EchoServer,
// GameServer or BareServer.
type app interface {
	Run() error
	Stop()
	Counters() bench.ServerCounters
	DropReasons() map[string]uint64
}

// ticker is an app with ticks (GameServer, BareServer).
type ticker interface {
	TakeTicks() (bench.Percentiles, int64)
}

// server is a running server application and what the reports need of
// its sockets.
type server struct {
	app   app
	addr  netip.AddrPort
	mode  string // -recv
	batch int
	done  chan error
	// wt is the WebTransport listener, a shard of the same engine
	// server (-webtransport).
	wt *webtransport.Conn
	// xdp is the server's conns on the AF_XDP path (-xdp), opened here
	// so that their counters can be read, and xdpIf their interface.
	xdp   []batchio.Conn
	xdpIf string
}

// slots is the server's client slots: a game sweep's most players, else
// -clients.
func (o *options) slots() int {
	if o.mode == "game" && o.sweep {
		return o.maxClients
	}
	if o.mode == "handshake" {
		// Each handshake is a player of its own (bench.Load): room for a
		// session whose disconnect is not polled yet beside its successor.
		return 2 * o.clients
	}
	if o.mode == "flood" && o.floodKind == "payload" {
		return o.clients + 1 // the player whose address floods
	}
	return o.clients
}

// startServer starts the server application of -mode (echo, game; bare
// with -bare) on -shards N sockets and shard goroutines (the default
// mode), or with -shards 0 on one socket driven by the application
// goroutine (the manual mode). A bare server runs one loop per socket.
func startServer(o *options, addr netip.AddrPort) (*server, error) {
	sock := batchio.Config{BatchSize: o.batch, DisableGSO: !o.gso, BlockingWait: o.recv == "block"}
	if o.sourceLimit != "off" {
		sock.SourceLimit = batchio.SourceLimit{Rate: o.sourceRate, Burst: o.sourceBurst, Optional: o.sourceLimit == "try"}
	}
	if err := setXDP(&sock, o, addr.Addr()); err != nil {
		return nil, err
	}
	s := &server{mode: o.recv, batch: o.batch, done: make(chan error, 1)}
	if o.bare {
		conns, err := listenConns(sock, addr, max(o.shards, 1), o.recv)
		if err != nil {
			return nil, err
		}
		b, err := bench.NewBareServer(bench.BareConfig{Game: o.mode == "game", TickHz: o.tickHz, SnapshotBytes: o.size,
			MaxClients: o.slots(), LockOSThread: sock.BlockingWait}, conns...)
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, err
		}
		s.app, s.addr = b, conns[0].LocalAddr()
	} else {
		cfg := engine.ServerConfig{
			ProtocolID: o.protocolID,
			PrivateKey: o.key,
			MaxClients: o.slots(),
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
		if o.reliable {
			// The C library's defaults, which a client of another
			// implementation keeps too (-serve).
			rc := engine.DefaultReliableConfig()
			cfg.Reliable = &rc
		}
		// Room for as many payloads of -size as of 1,200 bytes (a long
		// reliable packet takes an entry per 1,200 bytes); a game queues a
		// tick's snapshots at once, and a tick's inputs may wait for the
		// next poll.
		cfg.EventQueueSize = bench.QueueSize(engine.DefaultQueueSize, o.size)
		if o.mode == "game" {
			cfg.EventQueueSize = bench.GameQueueSize(cfg.MaxClients, o.size)
		}
		if !cfg.Manual {
			cfg.SendQueueSize = cfg.EventQueueSize
		}
		var more []batchio.Conn
		if o.webTransport > 0 {
			wt, err := listenWebTransport(o, addr)
			if err != nil {
				return nil, err
			}
			s.wt = wt
			more = append(more, s.wt)
		}
		var srv *engine.Server
		var err error
		if sock.XDP.Mode != batchio.XDPOff && o.recv != "xnet" && o.recv != "single" {
			srv, s.xdp, err = listenXDPServer(cfg, sock, addr, max(o.shards, 1), more...)
			s.xdpIf = sock.XDP.Interface
		} else {
			srv, err = listenServer(cfg, sock, addr, max(o.shards, 1), o.recv, more...)
		}
		if err != nil {
			if s.wt != nil {
				s.wt.Close()
			}
			return nil, err
		}
		s.addr = srv.LocalAddrs()[0]
		lock := cfg.Manual && sock.BlockingWait
		if o.mode == "game" {
			g, err := bench.NewGameServer(srv, bench.GameConfig{Manual: cfg.Manual, LockOSThread: lock, TickHz: o.tickHz,
				SnapshotBytes: o.size, Reliable: cfg.Reliable})
			if err != nil {
				srv.Close()
				return nil, err
			}
			s.app = g
		} else {
			s.app = bench.NewEchoServer(srv, bench.EchoConfig{Manual: cfg.Manual, LockOSThread: lock})
		}
	}
	go func() { s.done <- s.app.Run() }()
	return s, nil
}

// listenServer starts the engine server on shards sockets for -recv:
// batchio's (mmsg, block) through engine.Listen, or bench's comparison
// sockets (xnet, single, which ignore GSO) given to engine.NewServer.
func listenServer(cfg engine.ServerConfig, sock batchio.Config, addr netip.AddrPort, shards int, recv string, more ...batchio.Conn) (*engine.Server, error) {
	if recv != "xnet" && recv != "single" {
		cfg.Shards = shards
		return engine.ListenWith(cfg, sock, []netip.AddrPort{addr}, more...)
	}
	if sock.XDP.Mode != batchio.XDPOff {
		return nil, fmt.Errorf("-xdp with -recv %s: the comparison sockets have no AF_XDP path", recv)
	}
	conns, err := listenConns(sock, addr, shards, recv)
	if err != nil {
		return nil, err
	}
	srv, err := engine.NewServer(cfg, append(conns, more...)...)
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		return nil, err
	}
	return srv, nil // the comparison sockets live as long as the process
}

// listenXDPServer starts the engine server on shards conns of the AF_XDP
// path, which it returns too: engine.Listen would open the same, but
// keep them from the reports' XDP counters.
func listenXDPServer(cfg engine.ServerConfig, sock batchio.Config, addr netip.AddrPort, shards int, more ...batchio.Conn) (*engine.Server, []batchio.Conn, error) {
	conns, err := batchio.ListenGroup(addr, shards, sock)
	if err != nil {
		return nil, nil, err
	}
	srv, err := engine.NewServer(cfg, append(conns[:len(conns):len(conns)], more...)...)
	if err != nil {
		for _, c := range conns {
			c.Close()
		}
		return nil, nil, err
	}
	return srv, conns, nil
}

// listenConns opens shards sockets of -recv on addr (SO_REUSEPORT when
// there are several).
func listenConns(sock batchio.Config, addr netip.AddrPort, shards int, recv string) ([]batchio.Conn, error) {
	if sock.XDP.Mode != batchio.XDPOff {
		// One XDP program per interface: the group shares it.
		return batchio.ListenGroup(addr, shards, sock)
	}
	sock.ReusePort = shards > 1
	var conns []batchio.Conn
	for range shards {
		var c batchio.Conn
		var err error
		if recv == "xnet" || recv == "single" {
			c, err = bench.ListenComparison(addr, recv, sock)
		} else {
			c, err = batchio.Listen(addr, sock)
		}
		if err != nil {
			for _, c := range conns {
				c.Close()
			}
			return nil, err
		}
		conns = append(conns, c)
		addr = c.LocalAddr()
	}
	return conns, nil
}

func (s *server) close() error {
	s.app.Stop()
	err := <-s.done
	if s.wt != nil {
		s.wt.Close()
	}
	for _, c := range s.xdp {
		c.Close() // the engine server closes only the conns it opened
	}
	return err
}

// listenWebTransport opens the WebTransport listener of -webtransport on
// addr's loopback address. Its limits are a benchmark's: every player
// connects from one IP, at once.
func listenWebTransport(o *options, addr netip.AddrPort) (*webtransport.Conn, error) {
	n := max(o.slots(), 1)
	return webtransport.Listen(webtransport.Config{
		Addr:        netip.AddrPortFrom(addr.Addr(), 0),
		MaxSessions: n + 16, MaxPendingSessions: n + 16,
		SessionsPerSecond: 1e6, SessionBurst: n + 16,
		SessionsPerSecondPerIP: 1e6, SessionBurstPerIP: n + 16,
		DatagramsPerSecond: 1e6, DatagramBurst: 1 << 16,
		InboxSize: max(webtransport.DefaultInboxSize, 64*n),
	})
}

// runServe is -serve ADDR: the server alone, until interrupted, with a
// status line every 5 seconds.
func runServe(o *options) error {
	addr, err := netip.ParseAddrPort(o.serve)
	if err != nil {
		return fmt.Errorf("-serve %q: want host:port: %w", o.serve, err)
	}
	srv, err := startServer(o, addr)
	if err != nil {
		return err
	}
	// "netbench echo server addr=" is what scripts wait for (interop labs
	// among them): keep the message and the first attribute.
	slog.Info("netbench "+o.mode+" server", "addr", srv.addr, "bare", o.bare, "reliable", o.reliable, "shards", o.shards, "key", hex.EncodeToString(o.key),
		"protocol", "0x"+strconv.FormatUint(o.protocolID, 16), "max_clients", o.slots(), "recv", o.recv)
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, os.Interrupt, syscall.SIGTERM)
	defer signal.Stop(sig)
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	var stop <-chan time.Time // -duration, if given
	if o.durationSet {
		stop = time.After(o.duration)
	}
	last, lastAt := srv.app.Counters(), time.Now()
	// With -reliable, each status line says what the server's endpoints
	// saw over its interval: whether a client of another implementation
	// acks the server's packets, and the RTT it leaves them to estimate.
	var relSrv *engine.Server
	if e, ok := srv.app.(interface{ Server() *engine.Server }); ok && o.reliable {
		relSrv = e.Server()
	}
	var relLast, relNow bench.ReliableMark
	if relSrv != nil {
		relLast.ReadServer(relSrv)
	}
	for {
		select {
		case <-sig:
			return srv.close()
		case <-stop:
			return srv.close()
		case err := <-srv.done:
			if err == nil {
				err = errors.New("server stopped")
			}
			return err
		case now := <-t.C:
			c := srv.app.Counters()
			dt := now.Sub(lastAt).Seconds()
			attrs := []any{"connected", c.Connected,
				"in_pps", int(float64(c.PacketsIn-last.PacketsIn) / dt),
				"out_pps", int(float64(c.PacketsOut-last.PacketsOut) / dt),
				"dropped", c.Dropped, "ticks_skipped", c.TicksSkipped}
			if relSrv != nil {
				relNow.ReadServer(relSrv)
				f := bench.WindowFigures(&relLast, &relLast, &relNow, &relNow)
				// Datagrams per packet count keep-alives to idle clients too.
				attrs = append(attrs, "rtt_ms", round3(f.RTTMs), "packets_sent", f.Sent, "acked", round3(f.AckRatio),
					"datagrams_per_packet", round3(f.DatagramsPerPacket))
				relLast, relNow = relNow, relLast
			}
			slog.Info("netbench "+o.mode+" server", attrs...)
			last, lastAt = c, now
		}
	}
}

// round3 rounds x to three decimals, for status lines.
func round3(x float64) float64 { return math.Round(x*1000) / 1000 }

// setXDP sets sock's AF_XDP path from -xdp and -xdp-if; without -xdp-if
// it attaches to the interface that holds the server's address.
func setXDP(sock *batchio.Config, o *options, ip netip.Addr) error {
	mode, err := batchio.ParseXDPMode(o.xdp)
	if err != nil || mode == batchio.XDPOff {
		return err
	}
	name := o.xdpIf
	if name == "" {
		if name, err = interfaceOf(ip); err != nil {
			return fmt.Errorf("-xdp: %w; name one with -xdp-if", err)
		}
	}
	sock.XDP = batchio.XDP{Mode: mode, Interface: name}
	return nil
}

// loadXDP is the load's AF_XDP path from -load-xdp and -load-xdp-if;
// without -load-xdp-if, the interface on the server's subnet.
func loadXDP(o *options, server netip.Addr) (batchio.XDP, error) {
	mode, err := batchio.ParseXDPMode(o.loadXDP)
	if err != nil || mode == batchio.XDPOff {
		return batchio.XDP{}, err
	}
	name := o.loadXDPIf
	if name == "" {
		if name, err = interfaceToward(server); err != nil {
			return batchio.XDP{}, fmt.Errorf("-load-xdp: %w; name one with -load-xdp-if", err)
		}
	}
	return batchio.XDP{Mode: mode, Interface: name, Frames: loadXDPFrames}, nil
}

// loadXDPFrames is the load's UMEM (128 MiB): its worker shares a core
// with the NAPI thread that fills its ring, which preempts it, and 32,768
// receive frames hold 200 ms of a 2,700-player game's snapshots where
// the default 8,192 overflowed in such waits with the process at 50-63%
// of its core. The wait still shows in the latency.
const loadXDPFrames = 65536

// interfaceToward is the name of the interface with an address on ip's
// subnet (ip itself included).
func interfaceToward(ip netip.Addr) (string, error) {
	name, err := findInterface(func(p netip.Prefix) bool { return p.Masked().Contains(ip.Unmap()) })
	if err == nil && name == "" {
		err = fmt.Errorf("no interface is on the subnet of %v", ip)
	}
	return name, err
}

// interfaceOf is the name of the interface that has ip.
func interfaceOf(ip netip.Addr) (string, error) {
	name, err := findInterface(func(p netip.Prefix) bool { return p.Addr() == ip.Unmap() })
	if err == nil && name == "" {
		err = fmt.Errorf("no interface has %v", ip)
	}
	return name, err
}

// findInterface is the name of the first interface with an address
// (as a prefix, IPv4 unmapped) that match accepts, or "".
func findInterface(match func(netip.Prefix) bool) (string, error) {
	ifs, err := net.Interfaces()
	if err != nil {
		return "", err
	}
	for _, in := range ifs {
		addrs, err := in.Addrs()
		if err != nil {
			continue
		}
		for _, a := range addrs {
			n, ok := a.(*net.IPNet)
			if !ok {
				continue
			}
			ip, ok := netip.AddrFromSlice(n.IP)
			if !ok {
				continue
			}
			bits, total := n.Mask.Size()
			if ip.Is4In6() {
				ip = ip.Unmap()
				if total == 128 {
					bits -= 96
				}
			}
			if match(netip.PrefixFrom(ip, bits)) {
				return in.Name, nil
			}
		}
	}
	return "", nil
}

// addWebTransportDrops adds the WebTransport listener's drops and
// refusals since it started, by reason, to a window's drop reasons, as
// webtransport_REASON.
func addWebTransportDrops(m map[string]uint64, st webtransport.Stats) map[string]uint64 {
	if m == nil {
		m = map[string]uint64{}
	}
	for name, v := range map[string]uint64{
		"oversized": st.DroppedOversized, "rate": st.DroppedRate, "session_queue_full": st.DroppedSessionFull,
		"inbox_full": st.DroppedInboxFull, "truncated": st.DroppedTruncated, "session_closed": st.DroppedClosed,
		"send_no_session": st.SendNoSession, "send_queue_full": st.SendQueueFull, "send_too_large": st.SendTooLarge,
		"send_errors": st.SendErrors, "refused": st.RefusedRate + st.RefusedRateIP + st.RefusedIPTableFull +
			st.RefusedMaxSessions + st.RefusedPending + st.RefusedOrigin + st.RefusedClosed,
		"closed_idle": st.ClosedIdle, "closed_unanswered": st.ClosedHandshake, "closed_stream": st.StreamsRefused,
	} {
		if v > 0 {
			m["webtransport_"+name] = v
		}
	}
	return m
}
