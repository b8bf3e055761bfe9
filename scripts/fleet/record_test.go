package main

import (
	"net/netip"
	"strings"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine"
	"github.com/netcode-go/netcode/engine/backend"
)

// TestOutcome: an event's players are sorted by how their session ended
// and when they were back elsewhere, and tokens issued after the cache
// time that still list the lost server are counted, whoever got them.
func TestOutcome(t *testing.T) {
	lost, other, third := addr("127.0.0.1:4001"), addr("127.0.0.1:4002"), addr("127.0.0.1:4003")
	t0 := time.Unix(1000, 0)
	at := func(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }
	r := newRecorder(5)
	r.players[0] = playerLog{ // timed out, back on another server
		losses:   []lossRec{{at(3000), lost, engine.ConnectionTimedOut}},
		connects: []connectRec{{at(-5000), lost}, {at(3100), other}},
	}
	r.players[1] = playerLog{ // disconnected cleanly, back; its second token is stale
		losses:   []lossRec{{at(2000), lost, engine.Disconnected}},
		tokens:   []tokenRec{{at(-5000), nil}, {at(2010), []netip.AddrPort{lost, other}}},
		connects: []connectRec{{at(2050), other}},
	}
	r.players[2] = playerLog{ // never back elsewhere: reconnected to the lost server
		connects: []connectRec{{at(1000), lost}},
	}
	r.players[3] = playerLog{ // in a handshake at the event: fell back, no loss
		connects: []connectRec{{at(500), third}},
	}
	r.players[4] = playerLog{ // not the event's; a token within the cache time is not stale
		tokens: []tokenRec{{at(900), []netip.AddrPort{lost}}, {at(1500), []netip.AddrPort{other, lost}}},
	}
	ev := &event{kind: "kill", server: lost, at: t0, affected: []int{0, 1, 2, 3}}
	o := r.outcome(ev, time.Second)
	if o.timedOut != 1 || o.clean != 1 || o.otherEnd != 1 || o.missing != 1 {
		t.Errorf("timed out %d, clean %d, other %d, missing %d; want 1 each", o.timedOut, o.clean, o.otherEnd, o.missing)
	}
	if want := []time.Duration{3100 * time.Millisecond, 2050 * time.Millisecond, 500 * time.Millisecond}; !equal(o.back, want) {
		t.Errorf("back %v; want %v", o.back, want)
	}
	if want := []time.Duration{100 * time.Millisecond, 50 * time.Millisecond}; !equal(o.sinceLoss, want) {
		t.Errorf("loss to back %v; want %v", o.sinceLoss, want)
	}
	if o.stale != 2 {
		t.Errorf("%d stale tokens; want 2 (issued 1.5 s and 2.01 s after the event, cache 1 s)", o.stale)
	}
}

func addr(s string) netip.AddrPort { return netip.MustParseAddrPort(s) }

func equal(a, b []time.Duration) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func TestPercentiles(t *testing.T) {
	var ds []time.Duration
	for i := 100; i >= 1; i-- {
		ds = append(ds, time.Duration(i)*10*time.Millisecond)
	}
	if got, want := percentiles(ds), "p50 0.500 s, p99 0.990 s, max 1.000 s (n=100)"; got != want {
		t.Errorf("%q; want %q (nearest rank)", got, want)
	}
	if got := percentiles(nil); got != "none" {
		t.Errorf("no samples: %q", got)
	}
}

// TestParseFlags: FLEET_ variables set flags not given, the command line
// wins, and bad values say what is allowed.
func TestParseFlags(t *testing.T) {
	t.Setenv("FLEET_CLIENTS", "500")
	t.Setenv("FLEET_DRAIN_GRACE", "5s")
	o, err := parseFlags([]string{"-bin", "/x", "-drain-grace", "4s"})
	if err != nil {
		t.Fatal(err)
	}
	if o.clients != 500 || o.grace != 4*time.Second || o.sc.Grace != 4*time.Second {
		t.Errorf("clients %d, grace %v; want 500 from the environment and 4s from the flag", o.clients, o.grace)
	}
	if o.sc.Cache <= backend.DefaultHealthCacheFor {
		t.Errorf("cache allowance %v; want more than the directory's %v", o.sc.Cache, backend.DefaultHealthCacheFor)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{}, "-bin is required"},
		{[]string{"-bin", "x", "-servers", "2"}, "allowed 3 to 32"},
		{[]string{"-bin", "x", "-timeout", "1"}, "allowed 2 to 30"},
		{[]string{"-bin", "x", "-drain-grace", "1s"}, "allowed 2s to 1m"},
		{[]string{"-bin", "x", "-rate", "0"}, "allowed above 0"},
		{[]string{"-bin", "x", "-churn", "-1"}, "allowed 0 to 1000"},
		{[]string{"-bin", "x", "-rate", "1", "-settle", "3s"}, "at least 4 payload periods"},
	} {
		if _, err := parseFlags(tc.args); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: error %v; want one saying %q", tc.args, err, tc.want)
		}
	}
	t.Setenv("FLEET_CLIENTS", "many")
	if _, err := parseFlags([]string{"-bin", "x"}); err == nil || !strings.Contains(err.Error(), "FLEET_CLIENTS") {
		t.Errorf("a bad variable: error %v; want one naming FLEET_CLIENTS", err)
	}
}
