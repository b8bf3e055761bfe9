package main

import (
	"strings"
	"testing"

	"github.com/netcode-go/netcode/bench"
)

func TestStatOf(t *testing.T) {
	runs := []*bench.Result{{DeliveredPPS: 30}, {DeliveredPPS: 10}, {DeliveredPPS: 20}, {DeliveredPPS: -1}}
	s := statOf(runs, func(r *bench.Result) float64 { return r.DeliveredPPS })
	if s != (stat{20, 10, 30}) {
		t.Fatalf("median and spread %+v; want 20 (10–30), the unknown left out", s)
	}
	if s := statOf(runs[:2], func(r *bench.Result) float64 { return r.DeliveredPPS }); s.med != 20 {
		t.Fatalf("median of two %v; want their mean 20", s.med)
	}
	if s := statOf(nil, capacity); s.med != -1 || s.format(1, 0) != "–" {
		t.Fatalf("no runs: %+v %q", s, s.format(1, 0))
	}
}

// TestWritePairs: each shape's netcode runs sit beside its bare runs,
// with the ratio of the medians; a sweep is compared by its most
// players.
func TestWritePairs(t *testing.T) {
	p := func(n int) *int { return &n }
	sweep := func(bare bool, players int) *bench.Result {
		return &bench.Result{Mode: "game-sweep", Bare: bare, TickHz: 60, SnapshotBytes: 300, PayloadBytes: 64,
			MaxPlayers: p(players), Steps: []bench.Step{{Players: 256, RateHz: 60}}, Saturated: "server", LoadAvg: "1.5 1 1"}
	}
	echo := func(bare bool, p99 float64) *bench.Result {
		return &bench.Result{Mode: "echo", Bare: bare, Clients: 256, RateHz: 20, PayloadBytes: 100, DeliveredPPS: 5120,
			RTT: bench.Percentiles{P99: p99}}
	}
	var b strings.Builder
	if err := write(&b, []*bench.Result{sweep(false, 2000), sweep(true, 4000), sweep(false, 2200), sweep(true, 4400), sweep(false, 1800),
		echo(false, 300), echo(true, 100)}); err != nil {
		t.Fatal(err)
	}
	out := b.String()
	lines := strings.Split(strings.TrimSpace(out), "\n")
	if len(lines) != 4 {
		t.Fatalf("%d lines; want a header, a rule and two shapes:\n%s", len(lines), out)
	}
	game, echoLine := lines[2], lines[3]
	for _, want := range []string{"game sweep, 60 Hz, 300 B snapshots", "| 3 + 2 |", "2000 (1800–2200)", "4200 (4000–4400)", "0.48×", "server 3"} {
		if !strings.Contains(game, want) {
			t.Errorf("game sweep row lacks %q:\n%s", want, game)
		}
	}
	for _, want := range []string{"echo, 256 clients, 20 Hz, 100 B", "| 1 + 1 |", "| 300 | 100 | 3.00× |"} {
		if !strings.Contains(echoLine, want) {
			t.Errorf("echo row lacks %q:\n%s", want, echoLine)
		}
	}
}
