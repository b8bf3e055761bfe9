package dedicated_test

import (
	"net/http"
	"net/netip"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/agones"
	"github.com/netcode-go/netcode/engine/agones/agonestest"
	"github.com/netcode-go/netcode/engine/dedicated"
)

// agonesConfig talks to sc with quick periods and retries.
func agonesConfig(sc *agonestest.Sidecar, tracking agones.Tracking) *dedicated.AgonesConfig {
	return &dedicated.AgonesConfig{
		SDK: agones.Config{Address: sc.Addr(), Client: sc.Client(), RequestTimeout: 200 * time.Millisecond,
			Retry: agones.Backoff{Initial: 5 * time.Millisecond, Max: 20 * time.Millisecond}},
		Lifecycle:       agones.LifecycleConfig{HealthInterval: 20 * time.Millisecond, SyncInterval: 20 * time.Millisecond, Tracking: tracking},
		ShutdownTimeout: time.Second,
	}
}

// eventually fails t unless cond holds within d.
func eventually(t *testing.T, d time.Duration, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(d); !cond(); time.Sleep(2 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", d, what)
		}
	}
}

// TestAgonesLifecycle is the full sequence against the fake sidecar, which
// checks every request against the documented REST API: the sidecar
// starts late and Ready is retried until it answers, Health follows
// periodically, the player count follows connects and disconnects (in
// each tracking mode: a Counter, a List of ids, the alpha player
// tracking), and Shutdown comes after the drain, as the last call.
func TestAgonesLifecycle(t *testing.T) {
	for _, tc := range []struct {
		tracking agones.Tracking
		players  func(sc *agonestest.Sidecar) (ids []string, capacity int64)
	}{
		{agones.TrackCounter, func(sc *agonestest.Sidecar) ([]string, int64) {
			c, _ := sc.Counter("players")
			return make([]string, c.Count), c.Capacity
		}},
		{agones.TrackList, func(sc *agonestest.Sidecar) ([]string, int64) {
			l, _ := sc.List("players")
			return l.Values, l.Capacity
		}},
		{agones.TrackPlayers, func(sc *agonestest.Sidecar) ([]string, int64) { return sc.Players(), sc.PlayerCapacity() }},
	} {
		t.Run(tc.tracking.String(), func(t *testing.T) {
			sc := agonestest.Start(t, agonestest.Config{Down: true, UpAfterDials: 4,
				Counters: map[string]agonestest.Counter{"players": {}},
				Lists:    map[string]agonestest.List{"players": {}}})
			testAgonesLifecycle(t, sc, tc.tracking, func(ids ...string) func() bool {
				return func() bool {
					got, capacity := tc.players(sc)
					if capacity != 16 || len(got) != len(ids) {
						return false
					}
					if tc.tracking == agones.TrackCounter {
						return true // a count, no ids
					}
					return slices.Equal(slices.Sorted(slices.Values(got)), ids)
				}
			})
		})
	}
}

func testAgonesLifecycle(t *testing.T, sc *agonestest.Sidecar, tracking agones.Tracking, playersAre func(ids ...string) func() bool) {
	r := start(t, withPublic(t, dedicated.Config{Server: engine.ServerConfig{MaxClients: 16}, DrainGrace: 300 * time.Millisecond,
		Agones: agonesConfig(sc, tracking)}), dedicated.Echo())
	eventually(t, 10*time.Second, "Ready", func() bool { return sc.State() == agones.StateReady })
	if n := sc.Dials(); n < 4 {
		t.Fatalf("Ready after %d dials; the sidecar was down for the first 3", n)
	}
	eventually(t, 10*time.Second, "3 Health pings", func() bool { return sc.Count("POST", "/health") >= 3 })

	p := newPlayers(t)
	p.dial(r.token(1))
	p.dial(r.token(2))
	p.connected(0, 2)
	eventually(t, 10*time.Second, "players 1 and 2 of 16", playersAre("1", "2"))
	p.clients[0].Close()
	p.until(10*time.Second, "player 2 of 16", playersAre("2"))

	r.cancel()
	p.until(10*time.Second, "the remaining player disconnected", func() bool { return p.state(1) == engine.Disconnected })
	if err := r.wait(10 * time.Second); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if s := sc.State(); s != agones.StateShutdown {
		t.Fatalf("GameServer %s after the drain; want Shutdown", s)
	}
	calls := sc.Calls()
	last := calls[len(calls)-1]
	if last.Method != "POST" || last.Path != "/shutdown" || last.Status != http.StatusOK {
		t.Fatalf("last call %s %s (%d); want POST /shutdown answered 200", last.Method, last.Path, last.Status)
	}
	readyAt := -1
	for i, c := range calls {
		if c.Path == "/ready" && c.Status == 200 && readyAt < 0 {
			readyAt = i
		}
		if c.Path == "/health" && readyAt < 0 {
			t.Fatalf("Health (call %d) before Ready", i)
		}
	}
	if n := sc.Count("POST", "/shutdown"); n != 1 {
		t.Fatalf("%d Shutdown calls", n)
	}
	sc.CheckClean(t)
	sc.Close() // its idle connections
	noneLeft(t)
}

// freeUDPPort returns a loopback UDP port that was free a moment ago.
func freeUDPPort(t *testing.T) uint16 {
	t.Helper()
	c, err := batchio.Listen(netip.MustParseAddrPort("127.0.0.1:0"), batchio.Config{})
	if err != nil {
		t.Skipf("cannot listen on 127.0.0.1: %v", err)
	}
	defer c.Close()
	return c.LocalAddr().Port()
}

// withPublic binds cfg to a free loopback port and names it as the public
// address, so that nothing waits for the GameServer status.
func withPublic(t *testing.T, cfg dedicated.Config) dedicated.Config {
	a := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), freeUDPPort(t))
	cfg.Bind, cfg.Server.PublicAddresses = []netip.AddrPort{a}, []netip.AddrPort{a}
	return cfg
}

// TestAgonesPublicAddress: without a configured public address, the
// server waits for the GameServer status (the sidecar starts late) and
// names its address and port in the tokens it accepts.
func TestAgonesPublicAddress(t *testing.T) {
	port := freeUDPPort(t)
	sc := agonestest.Start(t, agonestest.Config{Down: true, UpAfterDials: 3, Address: "127.0.0.1",
		Ports: []agonestest.Port{{Name: "game", Port: int32(port)}, {Name: "other", Port: 1}}})
	a := agonesConfig(sc, agones.TrackNone)
	a.PortName = "game"
	r := start(t, dedicated.Config{Bind: []netip.AddrPort{netip.AddrPortFrom(netip.MustParseAddr("0.0.0.0"), port)},
		Agones: a}, dedicated.Echo())
	want := netip.AddrPortFrom(netip.MustParseAddr("127.0.0.1"), port)
	if got := r.srv.PublicAddresses(); len(got) != 1 || got[0] != want {
		t.Fatalf("public addresses %v; want [%v] from the GameServer status", got, want)
	}
	p := newPlayers(t)
	p.dial(r.token(7))
	p.connected(0, 1)
	sc.CheckClean(t)
}

// TestAgonesNoAddress: a sidecar that never answers the GameServer status
// fails Run after AddressTimeout, saying why; nothing is left running.
func TestAgonesNoAddress(t *testing.T) {
	sc := agonestest.Start(t, agonestest.Config{})
	sc.Hang()
	a := agonesConfig(sc, agones.TrackNone)
	a.AddressTimeout = 300 * time.Millisecond
	cfg := dedicated.Config{Server: engine.ServerConfig{ProtocolID: 1, PrivateKey: make([]byte, 32)},
		Bind: []netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:0")}, HTTPAddr: "127.0.0.1:0", Agones: a}
	done := make(chan error, 1)
	go func() { done <- dedicated.Run(t.Context(), cfg, dedicated.Echo()) }()
	select {
	case err := <-done:
		if err == nil || !strings.Contains(err.Error(), "no public address given and none from Agones") {
			t.Fatalf("Run: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run blocked on a hanging sidecar")
	}
	sc.Close()
	noneLeft(t)
}

// TestAgonesSidecarFailures: a sidecar that fails every call, or hangs on
// every call, never blocks or crashes the server: players connect and
// play, /readyz is 200, and the drain ends within its bound.
func TestAgonesSidecarFailures(t *testing.T) {
	for _, mode := range []string{"fail", "hang", "hang after ready"} {
		t.Run(mode, func(t *testing.T) {
			sc := agonestest.Start(t, agonestest.Config{Counters: map[string]agonestest.Counter{"players": {}}})
			switch mode {
			case "fail":
				sc.Fail(http.StatusInternalServerError)
			case "hang":
				sc.Hang()
			}
			const grace = 200 * time.Millisecond
			a := agonesConfig(sc, agones.TrackCounter)
			r := start(t, withPublic(t, dedicated.Config{DrainGrace: grace, Agones: a}), dedicated.Echo())
			if mode == "hang after ready" {
				eventually(t, 10*time.Second, "Ready", func() bool { return sc.State() == agones.StateReady })
				sc.Hang()
			}
			p := newPlayers(t)
			p.dial(r.token(1))
			p.connected(0, 1)
			p.clients[0].SendPacket([]byte("x"))
			p.until(5*time.Second, "an echo", func() bool { return p.got[0] == 1 })
			if code, _ := r.get("/readyz"); code != 200 {
				t.Fatalf("/readyz %d with a %s sidecar", code, mode)
			}
			began := time.Now()
			r.cancel()
			bound := grace + a.ShutdownTimeout + dedicated.HTTPShutdownTimeout + 2*time.Second
			if err := r.wait(bound); err != nil {
				t.Fatalf("Run: %v", err)
			}
			t.Logf("%s sidecar: Run returned %v after cancel (bound %v); GameServer %s", mode, time.Since(began), bound, sc.State())
			if mode == "fail" && sc.Count("POST", "/ready") < 2 {
				t.Fatalf("Ready tried %d times against a failing sidecar; want retries", sc.Count("POST", "/ready"))
			}
			sc.Close()
			noneLeft(t)
		})
	}
}
