//go:build linux

package bench

import (
	"fmt"
	"net/netip"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/engine"
)

const testTickHz = 20

// gameApp is what the game tests need of GameServer and BareServer.
type gameApp interface {
	Run() error
	Stop()
	Counters() ServerCounters
	TakeTicks() (Percentiles, int64)
}

// startTestGame runs a game server (netcode in the given mode, or bare) on
// a loopback port; the cleanup stops it and waits for its goroutine.
func startTestGame(t *testing.T, key []byte, maxClients int, manual, bare bool) (gameApp, netip.AddrPort) {
	t.Helper()
	app, addr, _ := startTestGameOn(t, &testNet{}, key, maxClients, manual, bare)
	return app, addr
}

// startTestGameOn is startTestGame on network n; it also returns the
// server's conns (nil on loopback).
func startTestGameOn(t *testing.T, n *testNet, key []byte, maxClients int, manual, bare bool) (gameApp, netip.AddrPort, []batchio.Conn) {
	t.Helper()
	var app gameApp
	var addr netip.AddrPort
	var conns []batchio.Conn
	if bare {
		conn := n.listenConn(t)
		conns = []batchio.Conn{conn}
		b, err := NewBareServer(BareConfig{Game: true, TickHz: testTickHz, SnapshotBytes: 300, MaxClients: maxClients}, conn)
		if err != nil {
			t.Fatal(err)
		}
		app, addr = b, conn.LocalAddr()
	} else {
		q := GameQueueSize(maxClients, 300)
		cfg := engine.ServerConfig{ProtocolID: testProtocolID, PrivateKey: key, MaxClients: maxClients, Shards: 1,
			Manual: manual, EventQueueSize: q}
		if !manual {
			cfg.SendQueueSize = q
		}
		var srv *engine.Server
		srv, conns = n.listenServer(t, cfg)
		g, err := NewGameServer(srv, GameConfig{Manual: manual, TickHz: testTickHz, SnapshotBytes: 300})
		if err != nil {
			t.Fatal(err)
		}
		app, addr = g, srv.LocalAddrs()[0]
	}
	done := make(chan error, 1)
	go func() { done <- app.Run() }()
	t.Cleanup(func() {
		app.Stop()
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	return app, addr, conns
}

// TestGameEndToEnd runs game loads against the netcode game server in both
// modes and against the bare control: every active client gets every
// snapshot of the window, the window spans the ticks its length says,
// only sampled clients are timed, and the server heard the inputs. On
// loopback, and with the server on AF_XDP on the testbed (the default mode
// and the bare control with shared sockets, as netbench runs them there:
// a few seconds of CI less).
func TestGameEndToEnd(t *testing.T) {
	for _, name := range testNets {
		t.Run(name, func(t *testing.T) { testGameEndToEndOn(t, name) })
	}
}

func testGameEndToEndOn(t *testing.T, net string) {
	for _, tc := range []struct {
		name         string
		manual, bare bool
		sockets      LoadSockets
		clients      int
		sample       int
	}{
		{"default/shared", false, false, SocketsShared, 300, 4},
		{"manual/shared", true, false, SocketsShared, 300, 1},
		{"default/per-client", false, false, SocketsPerClient, 4, 1},
		{"bare/shared", false, true, SocketsShared, 300, 4},
		{"bare/per-client", false, true, SocketsPerClient, 4, 1},
	} {
		if net != "loopback" && (tc.manual || tc.sockets != SocketsShared) {
			continue
		}
		t.Run(tc.name, func(t *testing.T) {
			testGameEndToEnd(t, openTestNet(t, net), tc.manual, tc.bare, tc.sockets, tc.clients, tc.sample)
		})
	}
}

func testGameEndToEnd(t *testing.T, n *testNet, manual, bare bool, sockets LoadSockets, clients, sample int) {
	key := testKey(t)
	app, addr, conns := startTestGameOn(t, n, key, clients, manual, bare)
	load, err := n.newLoad(LoadConfig{Server: addr, PrivateKey: key, ProtocolID: testProtocolID, Clients: clients,
		Mode: LoadGame, PayloadBytes: 64, SnapshotBytes: 300, TickHz: testTickHz, Bare: bare, SampleEvery: sample,
		Sockets: sockets, Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer load.Close()
	load.Start()
	if n := load.WaitConnected(10*time.Second, nil); n != clients {
		t.Fatalf("%d of %d clients connected", n, clients)
	}
	const d = time.Second
	var tot LoadTotals
	var in0 uint64
	for attempt := 1; ; attempt++ {
		in0 = app.Counters().Inputs
		start := time.Now().Add(150 * time.Millisecond)
		load.BeginWindow(testTickHz, start, d)
		time.Sleep(time.Until(start.Add(d + 500*time.Millisecond))) // window + drain
		tot = load.Totals()
		clean := tot.Received == tot.Sent && tot.Inputs == uint64(clients*testTickHz)
		if clean || attempt == e2eAttempts {
			break
		}
		t.Logf("attempt %d: owed %d snapshots, received %d, sent %d inputs: measuring again", attempt, tot.Sent, tot.Received, tot.Inputs)
	}
	if tot.Ticks < testTickHz-2 || tot.Ticks > testTickHz+1 {
		t.Errorf("window spans %d ticks; want about %d", tot.Ticks, testTickHz)
	}
	if tot.Sent != tot.Ticks*uint64(clients) || tot.Received != tot.Sent || tot.ClientsWithLoss != 0 || tot.Bad != 0 || tot.Duplicates != 0 {
		t.Errorf("owed %d snapshots, received %d, %d clients lost some (worst %.3f), bad %d, dups %d; want none lost",
			tot.Sent, tot.Received, tot.ClientsWithLoss, tot.WorstClientLoss, tot.Bad, tot.Duplicates)
	}
	if tot.Inputs != uint64(clients*testTickHz) {
		t.Errorf("sent %d inputs; want %d", tot.Inputs, clients*testTickHz)
	}
	sampled := (clients + load.SampleEvery() - 1) / load.SampleEvery()
	if got, want := tot.Hist.TotalCount(), int64(tot.Ticks)*int64(sampled); got != want {
		t.Errorf("histogram holds %d latencies; want one per snapshot of the %d sampled clients (%d)", got, sampled, want)
	}
	if p := PercentilesOf(tot.Hist); p.P50 <= 0 || p.Max < p.P99 {
		t.Errorf("percentiles %+v", p)
	}
	c := app.Counters()
	if c.Connected != clients || c.Inputs-in0 < tot.Inputs || c.Ticks == 0 || c.Snapshots < tot.Received {
		t.Errorf("server: connected %d, inputs %d (load sent %d), ticks %d, snapshots %d", c.Connected, c.Inputs-in0, tot.Inputs, c.Ticks, c.Snapshots)
	}
	if _, k := app.TakeTicks(); k == 0 {
		t.Error("no tick durations recorded")
	}
	n.check(t, conns, tot.Inputs, tot.Received)
	if err := load.Close(); err != nil {
		t.Fatal(err)
	}
	if st := load.SharedStats(); st.Stray != 0 || st.SendDropped != 0 {
		t.Errorf("shared sockets: %+v", st)
	}
}

// TestSetActive: clients beyond the active count disconnect, and those
// activated connect, on the netcode and the bare server.
func TestSetActive(t *testing.T) {
	for _, bare := range []bool{false, true} {
		t.Run(fmt.Sprintf("bare=%v", bare), func(t *testing.T) {
			key := testKey(t)
			app, addr := startTestGame(t, key, 200, false, bare)
			load, err := NewLoad(LoadConfig{Server: addr, PrivateKey: key, ProtocolID: testProtocolID, Clients: 200,
				Mode: LoadGame, PayloadBytes: 64, SnapshotBytes: 300, TickHz: testTickHz, Bare: bare, Active: 50, Workers: 2})
			if err != nil {
				t.Fatal(err)
			}
			defer load.Close()
			load.Start()
			window := func(n int) {
				for attempt := 1; ; attempt++ {
					start := time.Now().Add(150 * time.Millisecond)
					load.BeginWindow(testTickHz, start, 500*time.Millisecond)
					time.Sleep(time.Until(start.Add(time.Second)))
					tot := load.Totals()
					if tot.Ticks > 0 && tot.Received == tot.Sent && tot.Duplicates == 0 && tot.Active == n {
						return
					}
					msg := fmt.Sprintf("%d active: owed %d, received %d, %d duplicates, %d clients lost some", n, tot.Sent, tot.Received, tot.Duplicates, tot.ClientsWithLoss)
					if attempt == e2eAttempts || tot.Active != n || tot.Duplicates != 0 {
						t.Fatal(msg)
					}
					t.Logf("attempt %d: %s: measuring again", attempt, msg)
				}
			}
			for _, n := range []int{50, 200, 20, 120} {
				if n != 50 {
					if err := load.SetActive(n); err != nil {
						t.Fatal(err)
					}
				}
				deadline := time.Now().Add(10 * time.Second)
				for (load.Connected() != n || app.Counters().Connected != n) && time.Now().Before(deadline) {
					time.Sleep(10 * time.Millisecond)
				}
				if load.Connected() != n || app.Counters().Connected != n {
					t.Fatalf("active %d: load has %d connected, server %d", n, load.Connected(), app.Counters().Connected)
				}
				// Windows at 200 and at 120: clients 20 to 119 come back
				// with new sessions, whose sequences start again, and
				// their snapshots all count.
				if n == 200 || n == 120 {
					window(n)
				}
			}
			if err := load.SetActive(0); err == nil {
				t.Fatal("SetActive(0) accepted")
			}
		})
	}
}

// TestUnsampledClientsStayConnected: clients that count their snapshots
// unopened still hand their engine client one a second, so they outlive
// their tokens' timeout (2 s here) by far.
func TestUnsampledClientsStayConnected(t *testing.T) {
	key := testKey(t)
	app, addr := startTestGame(t, key, 64, false, false)
	load, err := NewLoad(LoadConfig{Server: addr, PrivateKey: key, ProtocolID: testProtocolID, Clients: 64,
		Mode: LoadGame, PayloadBytes: 64, SnapshotBytes: 300, TickHz: testTickHz, SampleEvery: 8, TimeoutSeconds: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer load.Close()
	load.Start()
	if n := load.WaitConnected(10*time.Second, nil); n != 64 {
		t.Fatalf("%d of 64 connected", n)
	}
	start := time.Now().Add(150 * time.Millisecond)
	load.BeginWindow(testTickHz, start, 0) // open: every snapshot in its middle is counted unopened
	time.Sleep(5 * time.Second)
	tot := load.Totals()
	if load.Connected() != 64 || app.Counters().Connected != 64 || app.Counters().Connects != 64 {
		t.Fatalf("after 5 s: load has %d connected, server %d (%d connects); want 64 throughout", load.Connected(), app.Counters().Connected, app.Counters().Connects)
	}
	if tot.Received < 64*4*testTickHz {
		t.Fatalf("%d snapshots counted in 5 s; want at least %d", tot.Received, 64*4*testTickHz)
	}
}
