package main

import (
	"bytes"
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine"
)

// TestFleet is the fleet run, small: three real dedicated servers and the
// token service as processes on loopback, 24 clients. Every client of the
// killed server must time out and come back elsewhere, every client of the
// drained one must be disconnected cleanly and come back elsewhere, and no
// token issued after the directory had time to notice may name either: the
// token timeout and the drain grace (3 s) are longer than that (2.5 s), so
// a directory that kept offering a stopped server fails here.
func TestFleet(t *testing.T) {
	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/",
		"github.com/netcode-go/netcode/cmd/netcode-server", "github.com/netcode-go/netcode/cmd/netcode-token")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	cfg := Config{
		ServerBin: bin + "/netcode-server", TokenBin: bin + "/netcode-token",
		Servers: 3, Clients: 24, RateHz: 10,
		KillAt: 2 * time.Second, DrainAt: 7 * time.Second, DrainGrace: 3 * time.Second,
		TimeoutSeconds: 3, Settle: 10 * time.Second, LogDir: t.TempDir(),
	}
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	var progress bytes.Buffer
	rep, err := Run(ctx, cfg, &progress)
	t.Log("\n" + progress.String())
	if rep != nil {
		var sum bytes.Buffer
		rep.Print(&sum)
		t.Log(sum.String())
	}
	if err != nil {
		t.Fatal(err)
	}
	if p := rep.Problems(); len(p) > 0 {
		t.Fatalf("problems: %q", p)
	}

	k := rep.failover(rep.killed, rep.killAt)
	if k.players == 0 || k.endStates[engine.ConnectionTimedOut] != k.players || len(k.delays) != k.players {
		t.Errorf("killed server: %d players, ended %v, %d came back; want all timed out and back", k.players, k.endStates, len(k.delays))
	}
	d := rep.failover(rep.drained, rep.drainAt)
	if d.players == 0 || d.endStates[engine.Disconnected] != d.players || len(d.delays) != d.players {
		t.Errorf("drained server: %d players, ended %v, %d came back; want all disconnected and back", d.players, d.endStates, len(d.delays))
	}
	// The drained server's players leave when its grace ends, not before.
	if len(d.delays) > 0 && d.delays[0] < cfg.DrainGrace {
		t.Errorf("a drained player came back %v after the drain began, inside the %v grace", d.delays[0], cfg.DrainGrace)
	}
	tot := rep.totals()
	if tot.connects < cfg.Clients+k.players+d.players || tot.tokens < tot.connects {
		t.Errorf("%d connects with %d tokens; want at least %d connects and a token for each", tot.connects, tot.tokens, cfg.Clients+k.players+d.players)
	}
	if tot.echoes == 0 {
		t.Error("no payload came back")
	}
}
