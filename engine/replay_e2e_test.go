package engine

import (
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

// The replay scenarios of the token rules end to end, on the memory
// network and over real UDP sockets on loopback, on a fake clock: an
// on-path recorder sits between a client and
// the server (the client dials the recorder, whose back conn is the
// client's address as the server sees it) and replays what it captured
// from that address, holding no key.

// replayProxy forwards between one client and the server and records the
// client's datagrams.
type replayProxy struct {
	t           *testing.T
	front, back batchio.Conn // client side, server side
	server      netip.AddrPort
	client      netip.AddrPort // learnt from the first datagram
	msgs        []batchio.Message
	recorded    [][]byte
	toClient    int  // datagrams forwarded from the server
	holdReplies bool // record the client's connection responses, forward none
}

func newReplayProxy(t *testing.T, listen func(string) batchio.Conn, server netip.AddrPort) *replayProxy {
	p := &replayProxy{t: t, server: server, msgs: batchio.NewMessages(64, codec.MaxPacketBytes)}
	p.front, p.back = listen("10.2.0.1:6000"), listen("10.2.0.2:6000")
	return p
}

// pump moves what is waiting in both directions.
func (p *replayProxy) pump() {
	n, _ := p.front.ReadBatch(p.msgs)
	fwd := p.msgs[:0]
	for i := range n {
		m := p.msgs[i]
		p.client = m.Addr
		p.recorded = append(p.recorded, append([]byte(nil), m.Buf[:m.N]...))
		if p.holdReplies && m.N > 0 && m.Buf[0] != 0 && codec.PacketType(m.Buf[0]&0x0f) == codec.ConnectionResponse {
			continue
		}
		m.Addr = p.server
		fwd = append(fwd, m)
	}
	p.back.WriteBatch(fwd)
	n, _ = p.back.ReadBatch(p.msgs)
	for i := range n {
		p.msgs[i].Addr = p.client
	}
	p.front.WriteBatch(p.msgs[:n])
	p.toClient += n
}

// replay sends recorded datagrams of type typ (requests have prefix 0) to
// the server from the client's address.
func (p *replayProxy) replay(typ codec.PacketType) int {
	p.t.Helper()
	var out []batchio.Message
	for _, d := range p.recorded {
		isRequest := d[0] == 0
		if (typ == codec.ConnectionRequest) != isRequest || (!isRequest && codec.PacketType(d[0]&0x0f) != typ) {
			continue
		}
		out = append(out, batchio.Message{Buf: d, N: len(d), Addr: p.server})
	}
	if len(out) == 0 {
		p.t.Fatalf("nothing of type %v recorded", typ)
	}
	if n, err := p.back.WriteBatch(out); n != len(out) || err != nil {
		p.t.Fatalf("replay: sent %d of %d: %v", n, len(out), err)
	}
	return len(out)
}

// replayWorld is a manual-mode server and a client behind a recorder,
// driven in turn on a fake clock.
type replayWorld struct {
	t      *testing.T
	now    time.Time
	nw     *batchiotest.MemNetwork // nil: real UDP sockets on 127.0.0.1
	server *Server
	sconn  batchio.Conn
	proxy  *replayProxy
	client *Client
	cconn  batchio.Conn
	// payloads received by the server application.
	delivered []string
}

// replayNets runs test on the memory network and over real UDP sockets.
func replayNets(t *testing.T, test func(t *testing.T, udp bool)) {
	t.Run("mem", func(t *testing.T) { test(t, false) })
	t.Run("udp", func(t *testing.T) { test(t, true) })
}

func newReplayWorld(t *testing.T, cfg ServerConfig, udp bool) *replayWorld {
	w := &replayWorld{t: t, now: time.Unix(1_800_000_000, 0)}
	var err error
	if !udp {
		if w.nw, err = batchiotest.NewMemNetwork(batchiotest.MemConfig{}); err != nil {
			t.Fatal(err)
		}
	}
	w.sconn = w.listen("10.0.0.1:40000")
	cfg.ProtocolID, cfg.PrivateKey = 0x7e91a7, testPrivateKey
	cfg.Manual, cfg.Clock = true, func() time.Time { return w.now }
	w.now = w.now.Add(-srvStartGrace) // the server starts before the tokens
	if w.server, err = NewServer(cfg, w.sconn); err != nil {
		t.Fatal(err)
	}
	w.now = w.now.Add(srvStartGrace)
	t.Cleanup(func() { w.server.Close() })
	w.proxy = newReplayProxy(t, w.listen, w.sconn.LocalAddr())
	w.newClient()
	return w
}

// listen opens a conn at addr on the memory network, or on an ephemeral
// port of 127.0.0.1 over UDP; the test closes it.
func (w *replayWorld) listen(addr string) batchio.Conn {
	w.t.Helper()
	var c batchio.Conn
	var err error
	if w.nw != nil {
		c, err = w.nw.Listen(netip.MustParseAddrPort(addr))
	} else {
		c, err = batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{RecvBuffer: 1 << 20, SendBuffer: 1 << 20})
	}
	if err != nil {
		w.t.Fatal(err)
	}
	w.t.Cleanup(func() { c.Close() })
	return c
}

// newClient replaces the client with a new one on a new port.
func (w *replayWorld) newClient() {
	if w.client != nil {
		w.client.Close()
		w.cconn.Close()
	}
	w.cconn = w.listen("10.1.0.1:0")
	var err error
	if w.client, err = NewClient(ClientConfig{}, w.cconn); err != nil {
		w.t.Fatal(err)
	}
}

// token mints a token that the client dials at the recorder and the server
// checks against its own address.
func (w *replayWorld) token(edit func(*TokenParams)) []byte {
	p := TokenParams{ProtocolID: 0x7e91a7, PrivateKey: testPrivateKey, ClientID: 7,
		PublicAddresses:   []netip.AddrPort{w.proxy.front.LocalAddr()},
		InternalAddresses: []netip.AddrPort{w.sconn.LocalAddr()},
		ExpireSeconds:     30, TimeoutSeconds: 5, Now: w.now}
	if edit != nil {
		edit(&p)
	}
	tok, err := GenerateConnectToken(p)
	if err != nil {
		w.t.Fatal(err)
	}
	return tok
}

// run drives everything in steps of 5 ms of the fake clock for d, or
// until done.
func (w *replayWorld) run(d time.Duration, done func() bool) bool {
	for end := w.now.Add(d); w.now.Before(end); {
		w.now = w.now.Add(5 * time.Millisecond)
		w.client.Update(w.now)
		w.proxy.pump()
		w.server.Update(w.now)
		w.server.Poll(func(ev *Event) {
			if ev.Kind == EventPayload {
				w.delivered = append(w.delivered, string(ev.Payload))
			}
		})
		if done != nil && done() {
			return true
		}
	}
	return false
}

func (w *replayWorld) connect(token []byte) {
	w.t.Helper()
	if err := w.client.Connect(token, w.now); err != nil {
		w.t.Fatal(err)
	}
	if !w.run(5*time.Second, func() bool { return w.client.State() == Connected }) {
		w.t.Fatalf("client state %v, want connected", w.client.State())
	}
}

// settle runs until the server has read every datagram sent to it so far.
func (w *replayWorld) settle(sent int) {
	w.t.Helper()
	want := w.server.Stats().PacketsIn + uint64(sent)
	if !w.run(2*time.Second, func() bool { return w.server.Stats().PacketsIn >= want }) {
		w.t.Fatalf("server read %d datagrams, want %d", w.server.Stats().PacketsIn, want)
	}
}

// session1 connects, sends payloads and disconnects, all recorded.
func (w *replayWorld) session1(token []byte) {
	w.t.Helper()
	w.connect(token)
	for range 3 {
		if err := w.client.SendPacket([]byte("session 1")); err != nil {
			w.t.Fatal(err)
		}
		w.run(20*time.Millisecond, nil)
	}
	if !w.run(2*time.Second, func() bool { return len(w.delivered) == 3 }) {
		w.t.Fatalf("server application got %q, want 3 payloads", w.delivered)
	}
	w.client.Disconnect(w.now)
	if !w.run(2*time.Second, func() bool { return w.server.NumConnectedClients() == 0 }) {
		w.t.Fatal("client still connected after disconnecting")
	}
	w.delivered = nil
}

// TestReplayE2EPayloadAfterReconnect: the client connects again with its
// token (refused); payloads recorded in session 1 and replayed meanwhile
// never reach the application.
func TestReplayE2EPayloadAfterReconnect(t *testing.T) {
	replayNets(t, func(t *testing.T, udp bool) {
		w := newReplayWorld(t, ServerConfig{}, udp)
		token := w.token(nil)
		w.session1(token)
		if err := w.client.Connect(token, w.now); err != nil {
			t.Fatal(err)
		}
		for range 5 {
			w.settle(w.proxy.replay(codec.ConnectionPayload))
			w.run(100*time.Millisecond, nil)
		}
		if w.client.State() == Connected || w.server.NumConnectedClients() != 0 {
			t.Fatalf("the token connected a second session (client %v)", w.client.State())
		}
		if len(w.delivered) != 0 {
			t.Fatalf("replayed payloads reached the application: %q", w.delivered)
		}
		st := w.server.Stats()
		if st.Drops[ServerDropTokenConsumed] == 0 || st.Connects != 1 {
			t.Fatalf("consumed-token drops %d, connects %d", st.Drops[ServerDropTokenConsumed], st.Connects)
		}
	})
}

// TestReplayE2EHandshake: the client's request and response, replayed from
// its address after it left, create no slot and get no reply (an ignored
// request is answered with nothing).
func TestReplayE2EHandshake(t *testing.T) {
	replayNets(t, func(t *testing.T, udp bool) {
		w := newReplayWorld(t, ServerConfig{}, udp)
		w.session1(w.token(nil))
		w.client.Close() // the real client is gone
		before, forwarded := w.server.Stats(), w.proxy.toClient
		sent := w.proxy.replay(codec.ConnectionRequest)
		sent += w.proxy.replay(codec.ConnectionResponse)
		w.settle(sent)
		w.run(200*time.Millisecond, nil)
		after := w.server.Stats()
		if w.server.NumConnectedClients() != 0 || after.Connects != before.Connects {
			t.Fatal("a replayed handshake took a slot")
		}
		if after.PacketsOut != before.PacketsOut || w.proxy.toClient != forwarded {
			t.Fatalf("server sent %d datagrams to the replayed address", after.PacketsOut-before.PacketsOut)
		}
		if after.Drops[ServerDropTokenConsumed] == 0 {
			t.Fatal("replayed requests not refused as consumed")
		}
	})
}

// TestReplayE2EDisconnect: a disconnect recorded in session 1 never ends a
// later session from the same address (on a fresh token).
func TestReplayE2EDisconnect(t *testing.T) {
	replayNets(t, func(t *testing.T, udp bool) {
		w := newReplayWorld(t, ServerConfig{}, udp)
		w.session1(w.token(nil))
		w.newClient()
		w.proxy.client = netip.AddrPort{}
		w.connect(w.token(nil))
		w.settle(w.proxy.replay(codec.ConnectionDisconnect))
		w.run(100*time.Millisecond, nil)
		if w.client.State() != Connected || w.server.NumConnectedClients() != 1 {
			t.Fatalf("a replayed disconnect ended the new session (client %v)", w.client.State())
		}
		if st := w.server.Stats(); st.ClientDisconnects != 1 {
			t.Fatalf("%d client disconnects, want session 1's only", st.ClientDisconnects)
		}
	})
}

// TestReplayE2ENoTimeoutMapping: handshake state made with a timeout of -1
// is gone once its token expires, and its recorded response then connects
// nothing.
func TestReplayE2ENoTimeoutMapping(t *testing.T) {
	replayNets(t, func(t *testing.T, udp bool) {
		w := newReplayWorld(t, ServerConfig{MaxConnectTokenLifetime: time.Second, AllowNoTimeoutTokens: true}, udp)
		w.proxy.holdReplies = true
		if err := w.client.Connect(w.token(func(p *TokenParams) { p.TimeoutSeconds = -1; p.ExpireSeconds = 2 }), w.now); err != nil {
			t.Fatal(err)
		}
		// Run until the client has answered a challenge (held back), then
		// drop it.
		if !w.run(3*time.Second, func() bool {
			return w.server.shard0().maps.part.n == 1 && w.client.State() == SendingConnectionResponse
		}) {
			t.Fatalf("no handshake in progress: client %v, %d mappings", w.client.State(), w.server.shard0().maps.part.n)
		}
		w.client.Close()
		w.run(100*time.Millisecond, nil)
		if !w.run(4*time.Second, func() bool { return w.server.shard0().maps.part.n == 0 }) {
			t.Fatal("the handshake's encryption mapping outlived its token")
		}
		w.settle(w.proxy.replay(codec.ConnectionResponse))
		if w.server.NumConnectedClients() != 0 {
			t.Fatal("a response after the token expired took a slot")
		}
	})
}
