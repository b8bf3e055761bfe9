package dedicated_test

import (
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/agones"
	"github.com/netcode-go/netcode/engine/agones/agonestest"
	"github.com/netcode-go/netcode/engine/dedicated"
	"github.com/netcode-go/netcode/engine/health"
)

// hangGame is the echo game whose Tick blocks, while armed, until the
// test releases it.
type hangGame struct {
	dedicated.Game
	armed   atomic.Bool
	in      chan struct{} // a Tick entered its hang
	release chan struct{}
}

func newHangGame() *hangGame {
	return &hangGame{Game: dedicated.Echo(), in: make(chan struct{}, 1), release: make(chan struct{})}
}

func (g *hangGame) Tick(srv *engine.Server, now time.Time) {
	if g.armed.Load() {
		g.in <- struct{}{}
		<-g.release
	}
}

// hang makes the next Tick block and returns, when it does, a time no
// later than the watchdog saw the Tick begin.
func (g *hangGame) hang(t *testing.T) time.Time {
	t.Helper()
	before := time.Now()
	g.armed.Store(true)
	select {
	case <-g.in:
		return before
	case <-time.After(10 * time.Second):
		t.Fatal("no Tick within 10 s")
		return time.Time{}
	}
}

// unhang lets the blocked Tick return, and the next ones run.
func (g *hangGame) unhang() {
	g.armed.Store(false)
	g.release <- struct{}{}
}

// TestHungGame: a Tick that blocks makes the server not live once it has
// lasted GameStall, and not before: /healthz 503 "game hung", netcode_live
// 0 and no Agones Health pings; live again when it returns. Hung at the
// drain, Run returns ErrGameHung within DrainGrace + GameStall (+ the
// HTTP close) instead of waiting for it.
func TestHungGame(t *testing.T) {
	const stall = 300 * time.Millisecond
	sc := agonestest.Start(t, agonestest.Config{})
	g := newHangGame()
	cfg := withPublic(t, dedicated.Config{TickRate: 100, GameStall: stall, DrainGrace: 200 * time.Millisecond,
		Agones: agonesConfig(sc, agones.TrackCounter)})
	r := start(t, cfg, g)
	eventually(t, 10*time.Second, "Health pings", func() bool { return sc.Count("POST", "/health") >= 3 })
	live := func() (int, string, float64) {
		code, body := r.get(dedicated.PathHealthz)
		return code, body, r.scrapeValues()["netcode_live{}"]
	}
	if code, body, gauge := live(); code != 200 || gauge != 1 {
		t.Fatalf("before the hang: /healthz %d %q, netcode_live %v; want 200, 1", code, body, gauge)
	}

	for round := range 2 {
		began := g.hang(t)
		for {
			code, body, gauge := live()
			if code == 503 {
				if took := time.Since(began); took < stall {
					t.Fatalf("round %d: not live %v into the hang; the bound is %v", round, took, stall)
				}
				if body != health.BodyHung || gauge != 0 {
					t.Fatalf("round %d: hung: /healthz %q, netcode_live %v; want %q, 0", round, body, gauge, health.BodyHung)
				}
				break
			}
			if time.Since(began) > stall+5*time.Second {
				t.Fatalf("round %d: still live %v into the hang", round, time.Since(began))
			}
			time.Sleep(5 * time.Millisecond)
		}
		// The lifecycle pings every 20 ms; at most one ping was on its way.
		pings := sc.Count("POST", "/health")
		time.Sleep(15 * 20 * time.Millisecond)
		if n := sc.Count("POST", "/health") - pings; n > 1 {
			t.Fatalf("round %d: %d Health pings while hung; want none", round, n)
		}
		if round == 1 {
			break // hung at the drain
		}
		g.unhang()
		eventually(t, 10*time.Second, "live again", func() bool { code, _, _ := live(); return code == 200 })
		eventually(t, 10*time.Second, "Health pings again", func() bool { return sc.Count("POST", "/health") > pings })
	}

	began := time.Now()
	r.cancel()
	bound := cfg.DrainGrace + stall + cfg.Agones.ShutdownTimeout + dedicated.HTTPShutdownTimeout
	err := r.wait(bound + 2*time.Second)
	if !errors.Is(err, dedicated.ErrGameHung) {
		t.Fatalf("Run with the game hung: %v; want ErrGameHung", err)
	}
	t.Logf("Run returned %v after the cancel: %v", time.Since(began).Round(time.Millisecond), err)
	g.unhang() // the goroutine Run left behind ends with the test
	sc.Close()
	noneLeft(t)
}
