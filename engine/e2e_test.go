package engine

import (
	"bytes"
	"fmt"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/codec"
)

// e2eWorld drives a server and clients from one goroutine on real time.
type e2eWorld struct {
	t       *testing.T
	server  *Server
	clients []*Client
	closers []batchio.Conn
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

// runUntil updates everything every millisecond until done or the limit.
func (w *e2eWorld) runUntil(limit time.Duration, done func() bool) bool {
	deadline := time.Now().Add(limit)
	for time.Now().Before(deadline) {
		now := time.Now()
		for _, c := range w.clients {
			c.Update(now)
		}
		w.server.Update(now)
		if done() {
			return true
		}
		time.Sleep(time.Millisecond)
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

// TestEndToEndUDP: 64 clients connect over real UDP on 127.0.0.1 and on
// [::1], exchange payloads both ways with checked contents and order, and
// disconnect cleanly.
func TestEndToEndUDP(t *testing.T) {
	for _, loopback := range []string{"127.0.0.1", "::1"} {
		t.Run(loopback, func(t *testing.T) {
			goroutines := runtime.NumGoroutine()
			const numClients, numPayloads = 64, 20
			ip := netip.MustParseAddr(loopback)
			w := &e2eWorld{t: t}
			defer w.close()
			sconn := listenOrSkip(t, netip.AddrPortFrom(ip, 0).String())
			w.closers = append(w.closers, sconn)
			disconnected := map[int]DisconnectReason{}
			srv, err := NewServer(ServerConfig{
				ProtocolID: 0x4e43, PrivateKey: testPrivateKey, MaxClients: numClients,
				OnDisconnect: func(i int, r DisconnectReason) { disconnected[i] = r },
			}, sconn)
			if err != nil {
				t.Fatal(err)
			}
			w.server = srv
			for k := range numClients {
				conn := listenOrSkip(t, netip.AddrPortFrom(ip, 0).String())
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
				i := c.ClientIndex()
				id := srv.ClientID(i)
				if ud := srv.ClientUserData(i); id < 1000 || ud[0] != byte(id-1000) {
					t.Fatalf("slot %d: client id %d, user data %d", i, id, ud[0])
				}
			}

			// Payloads both ways, one per client per direction per tick.
			buf := make([]byte, codec.MaxPayloadBytes)
			fromClient := make([]int, numClients) // next expected per client index
			fromServer := make([]int, numClients) // next expected per client
			sent := 0
			done := w.runUntil(10*time.Second, func() bool {
				if sent < numPayloads {
					for _, c := range w.clients {
						id := srv.ClientID(c.ClientIndex())
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
					id := srv.ClientID(i)
					for {
						n, _, ok := srv.ReceivePacket(i, buf)
						if !ok {
							break
						}
						if want := fmt.Sprintf("c%d:%d", id, fromClient[i]); string(buf[:n]) != want {
							t.Fatalf("server got %q from client %d, want %q", buf[:n], id, want)
						}
						fromClient[i]++
					}
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
				t.Errorf("%d disconnect callbacks, want %d", len(disconnected), numClients)
			}
			w.close()
			for i := 0; i < 100 && runtime.NumGoroutine() > goroutines; i++ {
				time.Sleep(10 * time.Millisecond)
			}
			if g := runtime.NumGoroutine(); g > goroutines {
				t.Errorf("%d goroutines left, %d before", g, goroutines)
			}
		})
	}
}
