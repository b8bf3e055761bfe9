package bench

import (
	"encoding/binary"
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio/batchiotest"
	"github.com/netcode-go/netcode/engine"
)

const testProtocolID = 0x1122334455667788

// memGame is a manual-mode GameServer with clients connected over the
// memory network; the test drives both.
type memGame struct {
	g       *GameServer
	srv     *engine.Server
	clients []*engine.Client
}

func newMemGame(t *testing.T, n int) *memGame {
	t.Helper()
	nw, err := batchiotest.NewMemNetwork(batchiotest.MemConfig{InboxSize: 4096})
	if err != nil {
		t.Fatal(err)
	}
	sconn, err := nw.Listen(netip.MustParseAddrPort("10.0.0.1:40000"))
	if err != nil {
		t.Fatal(err)
	}
	key := make([]byte, 32)
	key[3] = 3
	srv, err := engine.NewServer(engine.ServerConfig{ProtocolID: testProtocolID, PrivateKey: key, MaxClients: n, Manual: true}, sconn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	g, err := NewGameServer(srv, GameConfig{Manual: true, TickHz: 60, SnapshotBytes: 300})
	if err != nil {
		t.Fatal(err)
	}
	m := &memGame{g: g, srv: srv}
	now := time.Now()
	for i := range n {
		conn, err := nw.Listen(netip.AddrPortFrom(netip.MustParseAddr("10.0.1.1"), uint16(1000+i)))
		if err != nil {
			t.Fatal(err)
		}
		cl, err := engine.NewClient(engine.ClientConfig{}, conn)
		if err != nil {
			t.Fatal(err)
		}
		token, err := engine.GenerateConnectToken(engine.TokenParams{ProtocolID: testProtocolID, PrivateKey: key,
			ClientID: uint64(i + 1), PublicAddresses: []netip.AddrPort{sconn.LocalAddr()}, ExpireSeconds: 30, TimeoutSeconds: 10, Now: now})
		if err != nil {
			t.Fatal(err)
		}
		if err := cl.Connect(token, now); err != nil {
			t.Fatal(err)
		}
		m.clients = append(m.clients, cl)
	}
	for range 50 {
		now = now.Add(engine.PacketSendInterval)
		m.step(now)
		if m.connected() == n && len(g.active) == n {
			return m
		}
	}
	t.Fatalf("%d of %d clients connected, %d known to the game", m.connected(), n, len(g.active))
	return nil
}

func (m *memGame) connected() int {
	n := 0
	for _, c := range m.clients {
		if c.State() == engine.Connected {
			n++
		}
	}
	return n
}

// step runs every client and one server pass at now.
func (m *memGame) step(now time.Time) {
	for _, c := range m.clients {
		c.Update(now)
	}
	_ = m.srv.Update(now)
	m.srv.Poll(m.g.handle)
}

// TestGameServerTick: every connected client gets one snapshot per tick,
// stamped with the tick's number and carrying its latest input.
func TestGameServerTick(t *testing.T) {
	m := newMemGame(t, 5)
	in := make([]byte, 64)
	now := time.Now()
	for i, c := range m.clients {
		PutStamp(in, 0, uint64(100+i))
		if err := c.SendPacket(in); err != nil {
			t.Fatal(err)
		}
		c.Flush()
	}
	m.step(now)
	for k := uint64(7); k < 10; k++ {
		m.g.tick(now, k)
		buf := make([]byte, 1200)
		for i, c := range m.clients {
			c.Update(now)
			n, _, ok := c.ReceivePacket(buf)
			if !ok || n != 300 {
				t.Fatalf("tick %d client %d: got %d bytes, %v", k, i, n, ok)
			}
			if _, tick, _ := ReadSnapshotStamp(buf[:n]); tick != k {
				t.Fatalf("client %d: tick %d; want %d", i, tick, k)
			}
			if got := binary.LittleEndian.Uint64(buf[snapshotInputOffset:]); got != uint64(100+i) {
				t.Fatalf("client %d: snapshot carries input %d; want %d", i, got, 100+i)
			}
			if _, _, ok := c.ReceivePacket(buf); ok {
				t.Fatalf("client %d got two snapshots in tick %d", i, k)
			}
		}
	}
	c := m.g.Counters()
	if c.Snapshots != 15 || c.Ticks != 3 || c.Inputs != 5 || c.SendErrors != 0 {
		t.Fatalf("counters %+v", c)
	}
	if p, n := m.g.TakeTicks(); n != 3 || p.Max <= 0 {
		t.Fatalf("tick histogram: %d values, %+v", n, p)
	}
	if _, n := m.g.TakeTicks(); n != 0 {
		t.Fatalf("TakeTicks did not start over: %d values", n)
	}
	// A client that leaves gets no more snapshots.
	m.clients[0].Disconnect(now)
	m.step(now)
	if len(m.g.active) != 4 {
		t.Fatalf("%d active after a disconnect; want 4", len(m.g.active))
	}
}

// TestGameDrainUntil: a drain stops once its time is up, leaving the
// rest of a backlog to the next read, and otherwise reads it all.
func TestGameDrainUntil(t *testing.T) {
	const perClient = 400
	m := newMemGame(t, 4)
	in := make([]byte, 64)
	for _, c := range m.clients {
		for k := range perClient {
			PutStamp(in, 0, uint64(k))
			if err := c.SendPacket(in); err != nil {
				t.Fatal(err)
			}
		}
		c.Flush()
	}
	now := time.Now()
	before := m.g.local.inputs // published at the next tick
	m.g.drain(now, now)
	first := m.g.local.inputs - before
	if first == 0 || first >= 4*perClient {
		t.Fatalf("a drain out of time read %d of %d inputs; want one pass's worth", first, 4*perClient)
	}
	m.g.drain(now, now.Add(time.Hour))
	if got := m.g.local.inputs - before; got != 4*perClient {
		t.Fatalf("drains read %d of %d inputs", got, 4*perClient)
	}
}

// TestGameServerSteadyStateAllocs: a tick of the game server (inputs in,
// a snapshot to every client out, through a manual-mode engine server)
// allocates nothing.
func TestGameServerSteadyStateAllocs(t *testing.T) {
	m := newMemGame(t, 16)
	in := make([]byte, 64)
	now := time.Now()
	k := uint64(0)
	allocs := testing.AllocsPerRun(100, func() {
		for _, c := range m.clients {
			c.Update(now)
			_ = c.SendPacket(in)
			c.Flush()
			for {
				if _, _, ok := c.ReceivePacket(in[:0]); !ok {
					break
				}
			}
		}
		_ = m.srv.Update(now)
		m.srv.Poll(m.g.handle)
		m.g.tick(now, k)
		k++
	})
	if allocs != 0 {
		t.Fatalf("a tick allocates %.1f times", allocs)
	}
	if c := m.g.Counters(); c.Snapshots < 16*100 || c.Inputs < 16*100 {
		t.Fatalf("counters %+v", c)
	}
}

func TestGameConfigErrors(t *testing.T) {
	for _, cfg := range []GameConfig{{TickHz: 0, SnapshotBytes: 300}, {TickHz: MaxTickHz + 1, SnapshotBytes: 300},
		{TickHz: 60, SnapshotBytes: StampBytes - 1}, {TickHz: 60, SnapshotBytes: 1201}} {
		if err := cfg.check(); err == nil {
			t.Errorf("%+v accepted", cfg)
		}
	}
}
