package engineconn

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/message"
)

// world is a manual-mode server and clients, each with its adapter, over
// batchiotest's simulator on a fake clock.
type world struct {
	now     time.Time
	srv     *engine.Server
	msrv    *Server
	clients []*engine.Client
	mcl     []*Client
	slotOf  []int // client number -> server slot, once connected
}

func newWorld(tb testing.TB, numClients int, sim batchiotest.SimConfig, mcfg message.Config) *world {
	w := &world{now: time.Unix(1_800_000_000, 0)}
	clock := func() time.Time { return w.now }
	network, err := batchiotest.NewMemNetwork(batchiotest.MemConfig{InboxSize: 1 << 14})
	if err != nil {
		tb.Fatal(err)
	}
	simConn := func(seed uint64, addr string) *batchiotest.SimConn {
		c, err := network.Listen(netip.MustParseAddrPort(addr))
		if err != nil {
			tb.Fatal(err)
		}
		cfg := sim
		cfg.Seed, cfg.MaxQueued = seed, 1<<16
		s, err := batchiotest.NewSimConn(c, cfg, clock)
		if err != nil {
			tb.Fatal(err)
		}
		return s
	}
	rcfg := engine.DefaultReliableConfig()
	sconn := simConn(1, "10.0.0.1:40000")
	// The server starts before the tokens are minted: the restart rule
	// refuses tokens of its start second and the clock skew after it.
	grace := engine.ConnectTokenClockSkew + time.Second
	w.now = w.now.Add(-grace)
	w.srv, err = engine.NewServer(engine.ServerConfig{ProtocolID: 9, PrivateKey: testKey, MaxClients: numClients, Manual: true,
		Clock: clock, Reliable: &rcfg, EventQueueSize: 1 << 12}, sconn)
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() { w.srv.Close() })
	w.now = w.now.Add(grace)
	if w.msrv, err = NewServer(w.srv, mcfg, w.now); err != nil {
		tb.Fatal(err)
	}
	w.clients = make([]*engine.Client, numClients)
	w.mcl = make([]*Client, numClients)
	w.slotOf = make([]int, numClients)
	for k := range w.clients {
		w.slotOf[k] = -1
		c, err := engine.NewClient(engine.ClientConfig{Reliable: &rcfg, ReceiveQueueSize: 1 << 10}, simConn(uint64(100+k), fmt.Sprintf("10.1.0.%d:5000", k+1)))
		if err != nil {
			tb.Fatal(err)
		}
		token, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: 9, PrivateKey: testKey, ClientID: uint64(k + 1),
			PublicAddresses: []netip.AddrPort{sconn.LocalAddr()}, ExpireSeconds: 30, TimeoutSeconds: 30, Now: w.now})
		if err != nil {
			tb.Fatal(err)
		}
		if err := c.Connect(token, w.now); err != nil {
			tb.Fatal(err)
		}
		if w.mcl[k], err = NewClient(c, mcfg); err != nil {
			tb.Fatal(err)
		}
		w.clients[k] = c
	}
	return w
}

// handle is the server's Poll callback: the adapter, and the slot map.
func (w *world) handle(ev *engine.Event) {
	w.msrv.Handle(ev)
	if ev.Kind == engine.EventConnect {
		w.slotOf[ev.ClientID-1] = ev.ClientIndex
	}
}

// connect steps the world a millisecond at a time until every client is
// connected.
func (w *world) connect(tb testing.TB) {
	for i := 0; i < 2000 && w.srv.NumConnectedClients() < len(w.clients); i++ {
		w.now = w.now.Add(time.Millisecond)
		for k, c := range w.clients {
			c.Update(w.now)
			w.mcl[k].Update(w.now)
		}
		if err := w.srv.Update(w.now); err != nil {
			tb.Fatal(err)
		}
		w.srv.Poll(w.handle)
	}
	if n := w.srv.NumConnectedClients(); n != len(w.clients) {
		tb.Fatalf("%d clients connected after 2 s; want %d", n, len(w.clients))
	}
}
