//go:build linux

package batchio_test

import (
	"bytes"
	"fmt"
	"net/netip"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/engine"
)

// An engine end to end over the AF_XDP path: engine.NewServer on an AF_XDP
// conn bound to a fixed address (a namespace of its own: no port clash)
// in namespace A, engine.Clients on ordinary sockets in namespace B;
// they connect, exchange payloads both ways with checked contents, and
// disconnect. The engine is the same as on sockets: only the conn differs.

var (
	e2eKey      = bytes.Repeat([]byte{0x5a}, 32)
	e2eProtocol = uint64(0x58445021)
)

const e2eClients, e2ePayloads = 8, 20

func init() {
	batchio.RegisterChildRole("engine-server", roleEngineServer)
	batchio.RegisterChildRole("engine-clients", roleEngineClients)
}

// roleEngineServer echoes every payload to its sender until every client
// has connected and left (bounded at 40 s).
func roleEngineServer(t *testing.T) {
	conn, err := batchio.Listen(netip.MustParseAddrPort(os.Getenv("XDP_BIND")),
		batchio.Config{XDP: batchio.XDP{Mode: batchio.XDPNative, Interface: os.Getenv("XDP_IF")}})
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	srv, err := engine.NewServer(engine.ServerConfig{ProtocolID: e2eProtocol, PrivateKey: e2eKey, MaxClients: e2eClients}, conn)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	batchio.Say("ready %d", conn.LocalAddr().Port())
	connects, disconnects, payloads := 0, 0, 0
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) && (connects < e2eClients || disconnects < e2eClients) {
		srv.Poll(func(ev *engine.Event) {
			switch ev.Kind {
			case engine.EventConnect:
				connects++
			case engine.EventDisconnect:
				if ev.Reason != engine.DisconnectClientDisconnected {
					t.Errorf("client %d left: %v", ev.ClientID, ev.Reason)
				}
				disconnects++
			case engine.EventPayload:
				payloads++
				if err := srv.SendPacket(ev.ClientIndex, ev.Payload); err != nil {
					t.Error(err)
				}
			}
		})
		srv.Flush()
		srv.Wait(time.Now().Add(5 * time.Millisecond))
	}
	xs := conn.(batchio.XDPStatsReader).XDPStats()
	st := conn.(batchio.StatsReader).Stats()
	batchio.Say("stats connects=%d disconnects=%d payloads=%d rx=%d kernrx=%d kerntx=%d sent=%d",
		connects, disconnects, payloads, st.RecvPackets, xs.KernelRx, xs.KernelTx, st.SendPackets)
}

// roleEngineClients connects the clients, has each send e2ePayloads
// payloads and checks their echoes in order, then disconnects them.
func roleEngineClients(t *testing.T) {
	server := netip.MustParseAddrPort(os.Getenv("XDP_DST"))
	src := netip.MustParseAddr(os.Getenv("XDP_SRC"))
	var clients []*engine.Client
	for k := range e2eClients {
		conn, err := batchio.Listen(netip.AddrPortFrom(src, 0), batchio.Config{})
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		c, err := engine.NewClient(engine.ClientConfig{}, conn)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		tok, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: e2eProtocol, PrivateKey: e2eKey,
			ClientID: uint64(100 + k), PublicAddresses: []netip.AddrPort{server}, ExpireSeconds: 30, TimeoutSeconds: 5})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Connect(tok, time.Now()); err != nil {
			t.Fatal(err)
		}
		clients = append(clients, c)
	}
	run := func(limit time.Duration, done func() bool) bool {
		end := time.Now().Add(limit)
		for time.Now().Before(end) {
			now := time.Now()
			for _, c := range clients {
				c.Update(now)
			}
			if done() {
				return true
			}
			time.Sleep(time.Millisecond)
		}
		return false
	}
	if !run(10*time.Second, func() bool {
		for _, c := range clients {
			if c.State() != engine.Connected {
				return false
			}
		}
		return true
	}) {
		t.Fatal("not every client connected")
	}
	sent, got := make([]int, len(clients)), make([]int, len(clients))
	buf := make([]byte, 1200)
	if !run(20*time.Second, func() bool {
		all := true
		for k, c := range clients {
			for {
				n, _, ok := c.ReceivePacket(buf)
				if !ok {
					break
				}
				if want := fmt.Sprintf("c%d:%d", k, got[k]); string(buf[:n]) != want {
					t.Fatalf("client %d got %q, want %q", k, buf[:n], want)
				}
				got[k]++
			}
			if sent[k] == got[k] && sent[k] < e2ePayloads {
				if err := c.SendPacket(fmt.Appendf(nil, "c%d:%d", k, sent[k])); err != nil {
					t.Fatal(err)
				}
				sent[k]++
			}
			all = all && got[k] == e2ePayloads
		}
		return all
	}) {
		t.Fatalf("echoes incomplete: sent %v, got %v", sent, got)
	}
	for _, c := range clients {
		c.Disconnect(time.Now())
	}
	batchio.Say("done")
}

func TestXDPEngineEndToEnd(t *testing.T) {
	for _, fam := range []string{"ipv4", "ipv6"} {
		t.Run(fam, func(t *testing.T) { testXDPEngineEndToEnd(t, fam == "ipv6") })
	}
}

func testXDPEngineEndToEnd(t *testing.T, ipv6 bool) {
	p := batchio.NewTestVeth(t)
	srvIP, cliIP := p.A4, p.B4
	if ipv6 {
		srvIP, cliIP = p.A6, p.B6
	}
	srv := batchio.StartTestChild(t, p.NsA, "engine-server", "XDP_BIND="+netip.AddrPortFrom(srvIP, 40000).String(), "XDP_IF="+p.IfA)
	port, err := strconv.Atoi(srv.Expect("ready"))
	if err != nil {
		t.Fatal(err)
	}
	cli := batchio.StartTestChild(t, p.NsB, "engine-clients", "XDP_SRC="+cliIP.String(),
		"XDP_DST="+netip.AddrPortFrom(srvIP, uint16(port)).String())
	cli.Expect("done")
	cli.Wait()
	st := map[string]int{}
	for _, f := range strings.Fields(srv.Expect("stats")) {
		k, v, _ := strings.Cut(f, "=")
		st[k], _ = strconv.Atoi(v)
	}
	srv.Wait()
	t.Logf("server: %v", st)
	if st["connects"] != e2eClients || st["disconnects"] != e2eClients || st["payloads"] != e2eClients*e2ePayloads {
		t.Fatalf("server saw %v", st)
	}
	// Everything went over AF_XDP: the kernel socket carried nothing
	// (the clients' frames taught the server their link-layer addresses).
	if st["kernrx"] != 0 || st["kerntx"] != 0 || st["rx"] < e2eClients*e2ePayloads {
		t.Fatalf("server conn counters %v: want every datagram over AF_XDP", st)
	}
}
