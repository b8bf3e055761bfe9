package engine

import (
	"bytes"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/codec"
)

// e2eWorld drives a server and clients over UDP from one goroutine in
// real time.
type e2eWorld struct {
	t       *testing.T
	server  *Server
	clients []*Client
	closers []batchio.Conn
	handle  func(*Event) // the server application
}

func (w *e2eWorld) close() {
	for _, c := range w.clients {
		c.Close()
	}
	if w.server != nil {
		w.server.Close()
	}
	for _, c := range w.closers {
		c.Close()
	}
}

// runUntil runs the clients (and a manual-mode server) at the real time,
// polls the server's events and waits for the next (a millisecond at
// most), until done or the limit.
func (w *e2eWorld) runUntil(limit time.Duration, done func() bool) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		now := time.Now()
		for _, c := range w.clients {
			c.Update(now)
		}
		if w.server.cfg.Manual {
			w.server.Update(now)
		}
		w.server.Poll(w.handle)
		w.server.Flush()
		if done() {
			return true
		}
		w.server.Wait(now.Add(time.Millisecond))
	}
	return false
}

func listenOrSkip(t *testing.T, addr string) batchio.Conn {
	t.Helper()
	c, err := batchio.Listen(netip.MustParseAddrPort(addr), batchio.Config{RecvBuffer: 1 << 20, SendBuffer: 1 << 20})
	if err != nil {
		t.Skipf("cannot listen on %s: %v", addr, err)
	}
	return c
}

// TestEndToEndUDP: 64 clients connect over real UDP to a server in each
// mode, IPv4 and IPv6, exchange payloads both ways with checked contents
// and order, and disconnect cleanly; the events carry each client's id and
// user data. On loopback (127.0.0.1 and ::1), and with the server's conn on
// the AF_XDP path of a veth testbed.
func TestEndToEndUDP(t *testing.T) {
	for _, tr := range e2eTransports() {
		t.Run(tr.name, func(t *testing.T) {
			nw := tr.open(t)
			for _, manual := range []bool{true, false} {
				for _, v6 := range []bool{false, true} {
					if tr.name != loopbackTransport.name && manual == v6 {
						// Each mode and each family once: a few
						// seconds of CI less.
						continue
					}
					mode := "default"
					if manual {
						mode = "manual"
					}
					t.Run(mode+"/"+nw.serverIP(v6).String(), func(t *testing.T) { testEndToEndUDP(t, nw, manual, v6) })
				}
			}
		})
	}
}

func testEndToEndUDP(t *testing.T, nw e2eNet, manual, v6 bool) {
	goroutines := runtime.NumGoroutine()
	const numClients, numPayloads = 64, 20
	w := &e2eWorld{t: t}
	defer w.close()
	bufs := batchio.Config{RecvBuffer: 1 << 20, SendBuffer: 1 << 20}
	sconn := nw.listenServer(t, netip.AddrPortFrom(nw.serverIP(v6), 0), 1, bufs)[0]
	ip := nw.clientIP(v6)
	w.closers = append(w.closers, sconn)
	srv, err := NewServer(ServerConfig{ProtocolID: 0x4e43, PrivateKey: testPrivateKey, MaxClients: numClients, Manual: manual}, sconn)
	if err != nil {
		t.Fatal(err)
	}
	w.server = srv
	for k := range numClients {
		conn := nw.listenClient(t, netip.AddrPortFrom(ip, 0), bufs)
		w.closers = append(w.closers, conn)
		c, err := NewClient(ClientConfig{}, conn)
		if err != nil {
			t.Fatal(err)
		}
		token, err := GenerateConnectToken(TokenParams{
			ProtocolID: 0x4e43, PrivateKey: testPrivateKey, ClientID: uint64(1000 + k),
			PublicAddresses: []netip.AddrPort{sconn.LocalAddr()}, ExpireSeconds: 30, TimeoutSeconds: 5,
			UserData: []byte{byte(k)},
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := c.Connect(token, time.Now()); err != nil {
			t.Fatal(err)
		}
		w.clients = append(w.clients, c)
	}

	idOf := map[int]uint64{}              // slot -> client id, from the connect events
	fromClient := make([]int, numClients) // next expected per client index
	disconnected := map[int]DisconnectReason{}
	w.handle = func(ev *Event) {
		switch ev.Kind {
		case EventConnect:
			if id := ev.ClientID; id < 1000 || ev.UserData[0] != byte(id-1000) || ev.Address.Addr() != ip {
				t.Fatalf("slot %d: client id %d, user data %d, address %v", ev.ClientIndex, id, ev.UserData[0], ev.Address)
			}
			idOf[ev.ClientIndex] = ev.ClientID
		case EventPayload:
			i := ev.ClientIndex
			if want := fmt.Sprintf("c%d:%d", idOf[i], fromClient[i]); string(ev.Payload) != want || ev.ClientID != idOf[i] {
				t.Fatalf("server got %q from client %d, want %q", ev.Payload, ev.ClientID, want)
			}
			fromClient[i]++
		case EventDisconnect:
			if ev.ClientID != idOf[ev.ClientIndex] || ev.UserData[0] != byte(ev.ClientID-1000) {
				t.Fatalf("slot %d: disconnect of client %d (user data %d), connected %d", ev.ClientIndex, ev.ClientID, ev.UserData[0], idOf[ev.ClientIndex])
			}
			disconnected[ev.ClientIndex] = ev.Reason
		}
	}
	allConnected := func() bool {
		for _, c := range w.clients {
			if c.State() != Connected {
				return false
			}
		}
		return srv.NumConnectedClients() == numClients
	}
	if !w.runUntil(10*time.Second, allConnected) {
		t.Fatalf("%d of %d connected", srv.NumConnectedClients(), numClients)
	}
	for _, c := range w.clients {
		if _, ok := idOf[c.ClientIndex()]; !ok {
			t.Fatalf("client in slot %d has no connect event", c.ClientIndex())
		}
	}

	// Payloads both ways, one per client per direction per tick.
	buf := make([]byte, codec.MaxPayloadBytes)
	fromServer := make([]int, numClients) // next expected per client
	sent := 0
	// A round, one payload each way per client, once the last round has
	// arrived: a few hundred datagrams in flight at most.
	roundDone := func() bool {
		for k, c := range w.clients {
			if fromClient[c.ClientIndex()] != sent || fromServer[k] != sent {
				return false
			}
		}
		return true
	}
	done := w.runUntil(10*time.Second, func() bool {
		if sent < numPayloads && roundDone() {
			for _, c := range w.clients {
				id := idOf[c.ClientIndex()]
				if err := c.SendPacket(fmt.Appendf(nil, "c%d:%d", id, sent)); err != nil {
					t.Fatal(err)
				}
				if err := srv.SendPacket(c.ClientIndex(), fmt.Appendf(nil, "s%d:%d", id, sent)); err != nil {
					t.Fatal(err)
				}
			}
			sent++
		}
		complete := true
		for k, c := range w.clients {
			i := c.ClientIndex()
			id := idOf[i]
			for {
				n, _, ok := c.ReceivePacket(buf)
				if !ok {
					break
				}
				if want := fmt.Sprintf("s%d:%d", id, fromServer[k]); !bytes.Equal(buf[:n], []byte(want)) {
					t.Fatalf("client %d got %q, want %q", id, buf[:n], want)
				}
				fromServer[k]++
			}
			complete = complete && fromClient[i] == numPayloads && fromServer[k] == numPayloads
		}
		return complete
	})
	if !done {
		t.Fatalf("payloads incomplete: server got %v, clients got %v", fromClient, fromServer)
	}
	nw.checkServer(t, []batchio.Conn{sconn}, numClients*numPayloads, numClients*numPayloads)

	for _, c := range w.clients {
		c.Disconnect(time.Now())
	}
	if !w.runUntil(5*time.Second, func() bool { return srv.NumConnectedClients() == 0 }) {
		t.Fatalf("%d clients still connected after disconnecting", srv.NumConnectedClients())
	}
	for i, r := range disconnected {
		if r != DisconnectClientDisconnected {
			t.Errorf("slot %d disconnected with %v, want client disconnected", i, r)
		}
	}
	if len(disconnected) != numClients {
		t.Errorf("%d disconnect events, want %d", len(disconnected), numClients)
	}
	w.close()
	waitGoroutines(t, goroutines)
}

// TestClientCloseDisconnects: Close on a connected client sends the
// redundant disconnect packets, so the server reports the client gone
// (DisconnectClientDisconnected) at its next Update instead of at the
// timeout; Close on a client in an error state changes nothing: no state
// change, no packet. On the in-memory network, and with the server's conn
// on the AF_XDP path of a veth testbed (the clock is fake on both).
func TestClientCloseDisconnects(t *testing.T) {
	t.Run("mem", func(t *testing.T) {
		nw, err := batchiotest.NewMemNetwork(batchiotest.MemConfig{})
		if err != nil {
			t.Fatal(err)
		}
		listen := func(addr string) batchio.Conn {
			c, err := nw.Listen(netip.MustParseAddrPort(addr))
			if err != nil {
				t.Fatal(err)
			}
			return c
		}
		sconn := listen("10.0.0.1:40000")
		testClientCloseDisconnects(t, sconn, func(k int) batchio.Conn { return listen(fmt.Sprintf("10.1.0.%d:5000", k)) }, func() {})
	})
	t.Run("xdp", func(t *testing.T) {
		nw := xdpTransport(1).open(t)
		sconn := nw.listenServer(t, netip.AddrPortFrom(nw.serverIP(false), 0), 1, batchio.Config{})[0]
		testClientCloseDisconnects(t, sconn, func(int) batchio.Conn {
			return nw.listenClient(t, netip.AddrPortFrom(nw.clientIP(false), 0), batchio.Config{})
		}, func() { time.Sleep(time.Millisecond) }) // datagrams in flight arrive
		nw.checkServer(t, []batchio.Conn{sconn}, 2+NumDisconnectPackets, 2)
	})
}

// sentBy is the number of datagrams conn has sent.
func sentBy(t *testing.T, conn batchio.Conn) uint64 {
	if m, ok := conn.(*batchiotest.MemConn); ok {
		return m.Stats().Sent
	}
	s, ok := batchio.As[batchio.StatsReader](conn)
	if !ok {
		t.Fatalf("conn %v keeps no counters", conn.LocalAddr())
	}
	return s.Stats().SendPackets
}

// testClientCloseDisconnects runs a manual-mode server on sconn and
// clients on clientConn(1) and clientConn(2); settle lets what was sent arrive.
func testClientCloseDisconnects(t *testing.T, sconn batchio.Conn, clientConn func(k int) batchio.Conn, settle func()) {
	now := time.Unix(1_800_000_000, 0).Add(-srvStartGrace) // the server starts before the tokens
	srv, err := NewServer(ServerConfig{ProtocolID: 9, PrivateKey: testPrivateKey, MaxClients: 1, Manual: true,
		Clock: func() time.Time { return now }}, sconn)
	if err != nil {
		t.Fatal(err)
	}
	now = now.Add(srvStartGrace)
	defer srv.Close()
	var left []Event
	type client struct {
		c       *Client
		conn    batchio.Conn
		changes []ClientState
	}
	newClient := func(k int, id uint64) *client {
		cl := &client{conn: clientConn(k)}
		cl.c, err = NewClient(ClientConfig{OnStateChange: func(_, s ClientState) { cl.changes = append(cl.changes, s) }}, cl.conn)
		if err != nil {
			t.Fatal(err)
		}
		token, err := GenerateConnectToken(TokenParams{ProtocolID: 9, PrivateKey: testPrivateKey, ClientID: id,
			PublicAddresses: []netip.AddrPort{sconn.LocalAddr()}, ExpireSeconds: 30, TimeoutSeconds: 5, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.c.Connect(token, now); err != nil {
			t.Fatal(err)
		}
		for range 100 {
			if st := cl.c.State(); st == Connected || st.IsError() {
				break
			}
			now = now.Add(10 * time.Millisecond)
			cl.c.Update(now)
			settle()
			srv.Update(now)
			srv.Poll(func(ev *Event) {
				if ev.Kind == EventDisconnect {
					left = append(left, *ev)
				}
			})
			settle()
		}
		return cl
	}
	a := newClient(1, 1)
	if a.c.State() != Connected {
		t.Fatalf("first client: %v", a.c.State())
	}
	b := newClient(2, 2) // the server is full
	if b.c.State() != ConnectionDenied {
		t.Fatalf("second client: %v, want connection denied", b.c.State())
	}

	changes, sent := len(b.changes), sentBy(t, b.conn)
	if err := b.c.Close(); err != nil {
		t.Fatal(err)
	}
	if b.c.State() != ConnectionDenied || len(b.changes) != changes || sentBy(t, b.conn) != sent {
		t.Fatalf("Close in an error state: state %v, state changes %v, %d datagrams sent",
			b.c.State(), b.changes[changes:], sentBy(t, b.conn)-sent)
	}

	sent = sentBy(t, a.conn)
	if err := a.c.Close(); err != nil {
		t.Fatal(err)
	}
	if a.c.State() != Disconnected || sentBy(t, a.conn)-sent != NumDisconnectPackets {
		t.Fatalf("Close when connected: state %v, %d datagrams sent, want %d disconnect packets",
			a.c.State(), sentBy(t, a.conn)-sent, NumDisconnectPackets)
	}
	// The clock stands still: no timeout. (In memory the first Update
	// reads the packets; on a real network they may take a moment.)
	for range 100 {
		settle()
		srv.Update(now)
		srv.Poll(func(ev *Event) {
			if ev.Kind == EventDisconnect {
				left = append(left, *ev)
			}
		})
		if len(left) != 0 {
			break
		}
	}
	if len(left) != 1 || left[0].ClientID != 1 || left[0].Reason != DisconnectClientDisconnected {
		t.Fatalf("disconnect events %+v; want client 1, %v", left, DisconnectClientDisconnected)
	}
	if srv.NumConnectedClients() != 0 {
		t.Fatal("the slot is still taken")
	}
}
