package dedicated_test

import (
	"context"
	"errors"
	"math"
	"net/netip"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/dedicated"
	"github.com/netcode-go/netcode/engine/health"
)

// TestConfigErrors: a bad config is an error that names the field and
// what is allowed, before anything listens.
func TestConfigErrors(t *testing.T) {
	ok := func() dedicated.Config {
		return dedicated.Config{Server: engine.ServerConfig{ProtocolID: 1, PrivateKey: make([]byte, 32)},
			Bind: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}}
	}
	for _, tc := range []struct {
		name string
		edit func(*dedicated.Config)
		want string
	}{
		{"manual", func(c *dedicated.Config) { c.Server.Manual = true }, "default mode"},
		{"no bind", func(c *dedicated.Config) { c.Bind = nil }, "Config.Bind is empty"},
		{"zero bind", func(c *dedicated.Config) { c.Bind = []netip.AddrPort{{}} }, "Config.Bind[0]"},
		{"http", func(c *dedicated.Config) { c.HTTPAddr = "8080" }, "Config.HTTPAddr"},
		{"tick negative", func(c *dedicated.Config) { c.TickRate = -1 }, "Config.TickRate"},
		{"tick NaN", func(c *dedicated.Config) { c.TickRate = math.NaN() }, "Config.TickRate"},
		{"tick high", func(c *dedicated.Config) { c.TickRate = 5000 }, "up to 1000 Hz"},
		{"grace", func(c *dedicated.Config) { c.DrainGrace = -time.Second }, "Config.DrainGrace"},
		{"grace long", func(c *dedicated.Config) { c.DrainGrace = 2 * time.Hour }, "Config.DrainGrace"},
		{"stall", func(c *dedicated.Config) { c.LiveStall = time.Nanosecond }, "Config.LiveStall"},
		{"game stall", func(c *dedicated.Config) { c.GameStall = time.Millisecond }, "Config.GameStall 1ms; allowed 10ms to 10m0s"},
		{"game stall long", func(c *dedicated.Config) { c.GameStall = time.Hour }, "Config.GameStall 1h0m0s"},
		{"agones shutdown", func(c *dedicated.Config) {
			c.Agones = &dedicated.AgonesConfig{ShutdownTimeout: time.Hour}
		}, "AgonesConfig.ShutdownTimeout"},
		{"agones address", func(c *dedicated.Config) {
			c.Agones = &dedicated.AgonesConfig{AddressTimeout: -1}
		}, "AgonesConfig.AddressTimeout"},
		{"agones sdk", func(c *dedicated.Config) {
			c.Agones = &dedicated.AgonesConfig{}
			c.Agones.SDK.Address = "no port"
		}, "Config.Address"},
		{"key", func(c *dedicated.Config) { c.Server.PrivateKey = nil }, "PrivateKey"},
		{"public needed", func(c *dedicated.Config) {
			c.Bind = []netip.AddrPort{netip.MustParseAddrPort("0.0.0.0:0")}
		}, "PublicAddresses is required"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := ok()
			tc.edit(&cfg)
			err := dedicated.Run(context.Background(), cfg, dedicated.Echo())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Run: %v; want an error about %q", err, tc.want)
			}
		})
	}
	if err := dedicated.Run(context.Background(), ok(), nil); err == nil {
		t.Fatal("Run with a nil Game succeeded")
	}
}

// TestHTTPPortTaken: a taken HTTP port fails Run before it serves, and
// nothing is left running.
func TestHTTPPortTaken(t *testing.T) {
	r := start(t, dedicated.Config{}, dedicated.Echo())
	cfg := dedicated.Config{Server: engine.ServerConfig{ProtocolID: 1, PrivateKey: make([]byte, 32)},
		Bind: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}, HTTPAddr: strings.TrimPrefix(r.url, "http://")}
	if err := dedicated.Run(context.Background(), cfg, dedicated.Echo()); err == nil || !strings.Contains(err.Error(), "HTTP listener") {
		t.Fatalf("Run on a taken HTTP port: %v", err)
	}
}

// TestEcho: payloads come back to their sender only; the endpoints answer.
func TestEcho(t *testing.T) {
	r := start(t, dedicated.Config{}, dedicated.Echo())
	p := newPlayers(t)
	a, b := p.dial(r.token(1)), p.dial(r.token(2))
	p.connected(0, 2)
	for range 3 {
		p.clients[a].SendPacket([]byte("ping"))
	}
	p.until(5*time.Second, "3 echoes", func() bool { return p.got[a] == 3 })
	time.Sleep(20 * time.Millisecond)
	p.pump()
	if p.got[b] != 0 {
		t.Fatalf("client b got %d payloads of a's echo", p.got[b])
	}
	for _, e := range []struct{ path, body string }{{"/healthz", health.BodyLive},
		{"/readyz", health.BodyReady + "connected_clients 2\nmax_clients " + strconv.Itoa(r.srv.MaxClients()) + "\n"}} {
		if code, body := r.get(e.path); code != 200 || body != e.body {
			t.Errorf("GET %s: %d %q", e.path, code, body)
		}
	}
}

// TestRelay: a payload reaches every other client, not its sender, and a
// client that left is no longer sent to.
func TestRelay(t *testing.T) {
	r := start(t, dedicated.Config{}, dedicated.Relay())
	p := newPlayers(t)
	for id := uint64(1); id <= 3; id++ {
		p.dial(r.token(id))
	}
	p.connected(0, 3)
	p.clients[0].SendPacket([]byte("hello all"))
	p.until(5*time.Second, "the relay", func() bool { return p.got[1] == 1 && p.got[2] == 1 })
	p.clients[2].Close()
	p.until(5*time.Second, "client 2 gone", func() bool { return r.srv.NumConnectedClients() == 2 })
	p.clients[1].SendPacket([]byte("hello again"))
	p.until(5*time.Second, "the relay to client 0", func() bool { return p.got[0] == 1 })
	if p.got[1] != 1 {
		t.Fatalf("the sender got its own payload: %d", p.got[1])
	}
	if st := r.srv.Stats(); st.StaleSends != 0 {
		t.Fatalf("%d sends to a client that had left", st.StaleSends)
	}
}

// TestDrain is the drain end to end over UDP: on cancel the server stops
// admitting and /readyz fails at once, connected players play on through
// the grace period and then receive the disconnect packets (within the
// grace period plus one tick, and a tolerance for a loaded machine), and
// Run returns nil with nothing left running.
func TestDrain(t *testing.T) {
	const grace, tick = 2 * time.Second, 50 * time.Millisecond
	r := start(t, dedicated.Config{DrainGrace: grace, TickRate: float64(time.Second / tick)}, dedicated.Echo())
	p := newPlayers(t)
	for id := uint64(1); id <= 3; id++ {
		p.dial(r.token(id))
	}
	p.connected(0, 3)

	began := time.Now()
	r.cancel()
	// Readiness false at once: Drain is the first thing Run does.
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		code, body := r.get("/readyz")
		if code == 503 && strings.HasPrefix(body, health.BodyDraining) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("/readyz still %d %q 2 s after the drain began", code, body)
		}
	}
	if code, _ := r.get("/healthz"); code != 200 {
		t.Errorf("/healthz %d while draining; a draining server is live", code)
	}
	// No new client is admitted: it is denied, as by a full server.
	late := p.dial(r.token(99))
	p.until(5*time.Second, "the late client's answer", func() bool { return p.state(late) != engine.SendingConnectionRequest })
	if s := p.state(late); s != engine.ConnectionDenied {
		t.Fatalf("a client connecting during the drain: %v; want %v", s, engine.ConnectionDenied)
	}
	// The players play on.
	p.clients[0].SendPacket([]byte("still here"))
	p.until(grace, "an echo during the drain", func() bool { return p.got[0] == 1 })
	// Then all are disconnected by the server at the end of the grace.
	disconnectedAt := make([]time.Duration, 3)
	p.until(grace+10*time.Second, "the disconnects", func() bool {
		all := true
		for i := range 3 {
			if disconnectedAt[i] == 0 && p.state(i) != engine.Connected {
				disconnectedAt[i] = time.Since(began)
			}
			all = all && disconnectedAt[i] != 0
		}
		return all
	})
	const tolerance = 500 * time.Millisecond // scheduling on 2 shared cores
	for i, d := range disconnectedAt {
		if s := p.state(i); s != engine.Disconnected {
			t.Errorf("client %d: %v; want %v (disconnect packets, not a timeout)", i, s, engine.Disconnected)
		}
		if d < grace || d > grace+tick+tolerance {
			t.Errorf("client %d disconnected %v after the drain began; want within [%v, %v + %v + %v]", i, d, grace, grace, tick, tolerance)
		}
	}
	t.Logf("disconnected after %v (grace %v, tick %v)", disconnectedAt, grace, tick)
	if err := r.wait(grace + 10*time.Second); err != nil {
		t.Fatalf("Run: %v", err)
	}
	t.Logf("Run returned %v after the drain began", time.Since(began))
	if st := r.srv.Stats(); st.DeniedSent == 0 || st.ServerDisconnects != 3 {
		t.Errorf("denied sent %d, server disconnects %d; want > 0 and 3", st.DeniedSent, st.ServerDisconnects)
	}
	noneLeft(t)
}

// TestDrainEndsWhenPlayersLeave: the drain ends as soon as the last player
// has left, long before the grace period.
func TestDrainEndsWhenPlayersLeave(t *testing.T) {
	r := start(t, dedicated.Config{DrainGrace: time.Hour}, dedicated.Echo())
	p := newPlayers(t)
	p.dial(r.token(1))
	p.dial(r.token(2))
	p.connected(0, 2)
	r.cancel()
	for deadline := time.Now().Add(2 * time.Second); ; time.Sleep(time.Millisecond) {
		if code, _ := r.get("/readyz"); code == 503 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("/readyz not 503 2 s after the drain began")
		}
	}
	p.clients[0].Close()
	p.clients[1].Close()
	if err := r.wait(10 * time.Second); err != nil {
		t.Fatalf("Run: %v", err)
	}
	if st := r.srv.Stats(); st.ClientDisconnects != 2 || st.ServerDisconnects != 0 {
		t.Fatalf("client disconnects %d, server %d; want 2 and 0", st.ClientDisconnects, st.ServerDisconnects)
	}
	noneLeft(t)
}

// TestTicks: Tick runs at the configured rate (not faster), on the loop,
// and netcode_tick_duration_seconds counts the ticks.
func TestTicks(t *testing.T) {
	g := &countingGame{}
	r := start(t, dedicated.Config{TickRate: 100}, g)
	time.Sleep(300 * time.Millisecond)
	r.cancel()
	if err := r.wait(10 * time.Second); err != nil {
		t.Fatal(err)
	}
	n := g.ticks
	// 100 Hz for at least 300 ms: at least a few ticks; never more than the
	// rate allows over the run (it is bounded by the time it ran).
	if n < 3 || n > 100*int(time.Since(g.first).Seconds()+1) {
		t.Fatalf("%d ticks in %v", n, time.Since(g.first))
	}
}

// countingGame counts its ticks; its fields are touched by the loop only
// until Run returns.
type countingGame struct {
	ticks int
	first time.Time
}

func (g *countingGame) Connect(*engine.Server, *engine.Event)    {}
func (g *countingGame) Disconnect(*engine.Server, *engine.Event) {}
func (g *countingGame) Payload(*engine.Server, *engine.Event)    {}
func (g *countingGame) Tick(_ *engine.Server, now time.Time) {
	if g.ticks == 0 {
		g.first = now
	}
	g.ticks++
}

// TestRunReturnsOnEarlyCancel: a Run whose ctx is already done drains an
// empty server at once.
func TestRunReturnsOnEarlyCancel(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	cfg := dedicated.Config{Server: engine.ServerConfig{ProtocolID: 1, PrivateKey: make([]byte, 32)},
		Bind: []netip.AddrPort{netip.MustParseAddrPort("127.0.0.1:0")}, HTTPAddr: "127.0.0.1:0"}
	done := make(chan error, 1)
	go func() { done <- dedicated.Run(ctx, cfg, dedicated.Echo()) }()
	select {
	case err := <-done:
		if err != nil && !errors.Is(err, context.Canceled) {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return")
	}
	noneLeft(t)
}
