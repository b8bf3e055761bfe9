package webtransport_test

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/binary"
	"net/netip"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/webtransport"
	"github.com/netcode-go/netcode/codec"
	"github.com/netcode-go/netcode/engine"
)

const protocolID = 0x6e6574636f646532

// echoServer is an engine server on one UDP socket and one WebTransport
// conn that sends every payload back; it records events.
type echoServer struct {
	srv  *engine.Server
	wt   *webtransport.Conn
	udp  batchio.Conn
	key  []byte
	stop chan struct{}
	done chan struct{}

	mu          sync.Mutex
	connects    []netip.AddrPort
	disconnects []engine.DisconnectReason
}

func newEchoServer(t *testing.T, wtCfg webtransport.Config) *echoServer {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	udp, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if !wtCfg.Addr.IsValid() {
		wtCfg.Addr = netip.MustParseAddrPort("127.0.0.1:0")
	}
	wt, err := webtransport.Listen(wtCfg)
	if err != nil {
		t.Fatal(err)
	}
	srv, err := engine.NewServer(engine.ServerConfig{ProtocolID: protocolID, PrivateKey: key, MaxClients: 16}, udp, wt)
	if err != nil {
		t.Fatal(err)
	}
	e := &echoServer{srv: srv, wt: wt, udp: udp, key: key, stop: make(chan struct{}), done: make(chan struct{})}
	go e.run()
	t.Cleanup(func() {
		close(e.stop)
		<-e.done
		srv.Close()
		wt.Close()
		udp.Close()
	})
	return e
}

func (e *echoServer) run() {
	defer close(e.done)
	for {
		select {
		case <-e.stop:
			return
		default:
		}
		e.srv.Wait(time.Now().Add(10 * time.Millisecond))
		e.srv.Poll(func(ev *engine.Event) {
			switch ev.Kind {
			case engine.EventConnect:
				e.mu.Lock()
				e.connects = append(e.connects, ev.Address)
				e.mu.Unlock()
			case engine.EventDisconnect:
				e.mu.Lock()
				e.disconnects = append(e.disconnects, ev.Reason)
				e.mu.Unlock()
			case engine.EventPayload:
				_ = e.srv.SendPacket(ev.ClientIndex, ev.Payload)
			}
		})
	}
}

func (e *echoServer) token(t *testing.T, clientID uint64, age time.Duration, addrs ...netip.AddrPort) []byte {
	t.Helper()
	tok, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: protocolID, PrivateKey: e.key, ClientID: clientID,
		PublicAddresses: addrs, ExpireSeconds: 30, TimeoutSeconds: 5, Now: time.Now().Add(-age)})
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

func (e *echoServer) dial(t *testing.T) *webtransport.ClientConn {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	cc, err := webtransport.Dial(ctx, e.wt.URL("127.0.0.1"), e.wt.CertificateHash())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

// connect runs client until it is connected or in an error state, for at
// most 5 s.
func connect(t *testing.T, c *engine.Client, token []byte) engine.ClientState {
	t.Helper()
	if err := c.Connect(token, time.Now()); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		c.Update(time.Now())
		if s := c.State(); s == engine.Connected || s < 0 {
			return s
		}
		_ = c.Wait(time.Now().Add(20 * time.Millisecond))
	}
	return c.State()
}

// exchange sends n payloads of varying sizes, one at a time, and checks
// each echo byte for byte.
func exchange(t *testing.T, c *engine.Client, n int) {
	t.Helper()
	buf := make([]byte, codec.MaxPayloadBytes)
	for i := range n {
		p := make([]byte, 8+i*37%900) // QUIC datagrams hold less than UDP
		binary.LittleEndian.PutUint64(p, uint64(i))
		rand.Read(p[8:])
		if err := c.SendPacket(p); err != nil {
			t.Fatal(err)
		}
		c.Flush()
		got := false
		for deadline := time.Now().Add(5 * time.Second); !got && time.Now().Before(deadline); {
			c.Update(time.Now())
			if k, _, ok := c.ReceivePacket(buf); ok {
				if !bytes.Equal(buf[:k], p) {
					t.Fatalf("payload %d: echo of %d bytes differs from the %d sent", i, k, len(p))
				}
				got = true
				break
			}
			if c.State() != engine.Connected {
				t.Fatalf("payload %d: client %v", i, c.State())
			}
			_ = c.Wait(time.Now().Add(20 * time.Millisecond))
		}
		if !got {
			t.Fatalf("payload %d: no echo", i)
		}
	}
}

// TestEngineOverWebTransport: a browser-like client connects to a server
// that also serves UDP, with a token naming the WebTransport address,
// exchanges payloads byte-exact and disconnects; a UDP client plays at
// the same time.
func TestEngineOverWebTransport(t *testing.T) {
	e := newEchoServer(t, webtransport.Config{})
	cc := e.dial(t)
	web, err := engine.NewClient(engine.ClientConfig{}, cc)
	if err != nil {
		t.Fatal(err)
	}
	if s := connect(t, web, e.token(t, 1, 0, e.wt.LocalAddr())); s != engine.Connected {
		t.Fatalf("web client %v; want connected", s)
	}
	udp, err := engine.DialClient(engine.ClientConfig{})
	if err != nil {
		t.Fatal(err)
	}
	defer udp.Close()
	if s := connect(t, udp, e.token(t, 2, 0, e.udp.LocalAddr())); s != engine.Connected {
		t.Fatalf("udp client %v; want connected", s)
	}
	exchange(t, web, 300)
	exchange(t, udp, 50)

	// The two clients' connects may reach the application in either
	// order: their conns have shards of their own.
	e.mu.Lock()
	connects := slices.Clone(e.connects)
	e.mu.Unlock()
	if len(connects) != 2 || webtransport.IsSessionAddr(connects[0]) == webtransport.IsSessionAddr(connects[1]) {
		t.Fatalf("clients connected from %v; want one session address (the web client) and one UDP address", connects)
	}
	web.Close() // disconnect packets
	if !waitFor(func() bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		return len(e.disconnects) == 1
	}) {
		t.Fatal("the server saw no disconnect")
	}
	e.mu.Lock()
	reason := e.disconnects[0]
	e.mu.Unlock()
	if reason != engine.DisconnectClientDisconnected {
		t.Fatalf("disconnect reason %v; want the client's disconnect", reason)
	}
	cc.Close()
	if !waitFor(func() bool { return e.wt.TransportStats().Sessions == 0 }) {
		t.Fatalf("session not forgotten: %+v", e.wt.TransportStats())
	}
}

// TestTokenRulesOverWebTransport: TLS earns no trust. A token that has
// carried a session is refused on a new session, and so is an expired
// one; the server never answers them, and their sessions are closed as
// unanswered.
func TestTokenRulesOverWebTransport(t *testing.T) {
	e := newEchoServer(t, webtransport.Config{HandshakeTimeout: 300 * time.Millisecond})
	tok := e.token(t, 7, 0, e.wt.LocalAddr())
	first, err := engine.NewClient(engine.ClientConfig{}, e.dial(t))
	if err != nil {
		t.Fatal(err)
	}
	if s := connect(t, first, tok); s != engine.Connected {
		t.Fatalf("first use: %v; want connected", s)
	}
	first.Close()

	cases := []struct {
		name  string
		token []byte
	}{
		{"reused", tok},
		{"expired", e.token(t, 8, time.Minute, e.wt.LocalAddr())},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			before := e.wt.TransportStats().ClosedHandshake
			cc := e.dial(t)
			c, err := engine.NewClient(engine.ClientConfig{}, cc)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if err := c.Connect(tc.token, time.Now()); err != nil {
				return // refused by the client itself (expired)
			}
			for deadline := time.Now().Add(2 * time.Second); time.Now().Before(deadline) && c.State() > 0; {
				c.Update(time.Now())
				_ = c.Wait(time.Now().Add(20 * time.Millisecond))
			}
			if c.State() == engine.Connected {
				t.Fatalf("%s token connected", tc.name)
			}
			if !waitFor(func() bool { return e.wt.TransportStats().ClosedHandshake > before }) {
				t.Fatalf("unanswered session not closed: %+v", e.wt.TransportStats())
			}
		})
	}
}

func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(5 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}
