package metrics_test

import (
	"crypto/rand"
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/engine"
)

const protocol = 0x6d6574726963

// rig is a manual-mode server on loopback and its clients, driven by the
// test goroutine: nothing changes between two steps, so a scrape and the
// server's own stats can be compared exactly.
type rig struct {
	t       testing.TB
	key     []byte
	srv     *engine.Server
	clients []*engine.Client
	buf     []byte
}

func newRig(t testing.TB, shards, maxClients int) *rig {
	t.Helper()
	key := make([]byte, 32)
	rand.Read(key)
	srv, err := engine.Listen(engine.ServerConfig{ProtocolID: protocol, PrivateKey: key, MaxClients: maxClients,
		Manual: true, Shards: shards}, batchio.Config{}, netip.MustParseAddrPort("127.0.0.1:0"))
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.1: %v", err)
	}
	t.Cleanup(func() { srv.Close() })
	return &rig{t: t, key: key, srv: srv, buf: make([]byte, 1200)}
}

// token mints a token for id, for protocol p and key k (nil: the rig's).
func (r *rig) token(id, p uint64, k []byte) []byte {
	if k == nil {
		k = r.key
	}
	tok, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: p, PrivateKey: k, ClientID: id,
		PublicAddresses: r.srv.PublicAddresses(), ExpireSeconds: 30, TimeoutSeconds: 10})
	if err != nil {
		r.t.Fatal(err)
	}
	return tok
}

// dial starts a client connecting with tok.
func (r *rig) dial(tok []byte) *engine.Client {
	c, err := engine.DialClient(engine.ClientConfig{})
	if err != nil {
		r.t.Fatal(err)
	}
	r.t.Cleanup(func() { c.Close() })
	if err := c.Connect(tok, time.Now()); err != nil {
		r.t.Fatal(err)
	}
	r.clients = append(r.clients, c)
	return c
}

// step runs every client and the server once; the server echoes payloads.
// It returns the payloads the clients received.
func (r *rig) step() int {
	now := time.Now()
	for _, c := range r.clients {
		c.Update(now)
	}
	time.Sleep(time.Millisecond) // loopback delivery
	if err := r.srv.Update(time.Now()); err != nil {
		r.t.Fatal(err)
	}
	r.srv.Poll(func(ev *engine.Event) {
		if ev.Kind == engine.EventPayload {
			_ = r.srv.SendPacket(ev.ClientIndex, ev.Payload)
		}
	})
	r.srv.Flush()
	time.Sleep(time.Millisecond)
	got := 0
	for _, c := range r.clients {
		c.Update(time.Now())
		for {
			if _, _, ok := c.ReceivePacket(r.buf); !ok {
				break
			}
			got++
		}
	}
	return got
}

// until steps until cond holds, or fails after 5 s.
func (r *rig) until(what string, cond func() bool) {
	r.t.Helper()
	for deadline := time.Now().Add(5 * time.Second); !cond(); r.step() {
		if time.Now().After(deadline) {
			r.t.Fatalf("timed out waiting for %s", what)
		}
	}
}
