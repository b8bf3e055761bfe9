package backend

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strings"
	"testing"
	"time"
)

// readyzLoad is /readyz's load lines.
func readyzLoad(connected, max int) *string {
	s := fmt.Sprintf("connected_clients %d\nmax_clients %d\n", connected, max)
	return &s
}

// Between two probes no server is offered first more times than it had
// free slots, every server with room gets its share, and a new probe
// starts the count again. The load comes from /readyz alone.
func TestHealthDirectorySpread(t *testing.T) {
	free := []int{10, 30, 60}
	var targets []HealthTarget
	var fakes []*fakeGameServer
	for i, n := range free {
		f := newFakeGameServer(t, true, "")
		f.readyLoad.Store(readyzLoad(64-n, 64))
		fakes = append(fakes, f)
		targets = append(targets, target(f.URL, i+1))
	}
	clock := newFakeClock()
	d, err := NewHealthDirectory(HealthConfig{Targets: targets, CacheFor: time.Minute, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	d.randN = rand.New(rand.NewPCG(1, 2)).Int64N
	firsts := func(n int) map[string]int {
		got := map[string]int{}
		for range n {
			s, err := d.Servers(context.Background(), nil)
			if err != nil {
				t.Fatalf("after %v: %v", got, err)
			}
			got[s[0].Public.String()]++
		}
		return got
	}
	// 40 players, as a lost server's would: each server gets some, none
	// all (weighted by free slots, so about 4, 12 and 24).
	got := firsts(40)
	for i, n := range free {
		k := got[targets[i].Server.Public.String()]
		if k == 0 || k == 40 || k > n {
			t.Errorf("40 offers: %v; want each server some, within its free slots %v", got, free)
			break
		}
	}
	// The rest of the room: exactly every free slot, then none.
	more := firsts(100 - 40)
	for i, n := range free {
		a := targets[i].Server.Public.String()
		if got[a]+more[a] != n {
			t.Errorf("100 offers: server %s offered %d; want its %d free slots", a, got[a]+more[a], n)
		}
	}
	if s, err := d.Servers(context.Background(), nil); !errors.Is(err, ErrNoServers) {
		t.Errorf("offer 101 with 100 free slots: %v, %v; want ErrNoServers", serverNames(s), err)
	}
	for _, f := range fakes {
		if n := f.scrapes.Load(); n != 0 {
			t.Errorf("%d /metrics requests; the load was in /readyz", n)
		}
	}
	clock.Advance(time.Minute)
	if _, err := d.Servers(context.Background(), nil); err != nil {
		t.Errorf("after a new probe: %v; want servers again", err)
	}
}

// States tells each server's last probe and the offers since, in the
// configured order.
func TestHealthDirectoryStates(t *testing.T) {
	up := newFakeGameServer(t, true, "")
	up.readyLoad.Store(readyzLoad(60, 64))
	unknown := newFakeGameServer(t, true, "")
	unknown.metrics.Store(nil)
	down := newFakeGameServer(t, false, "")
	full := newFakeGameServer(t, true, load([]int{64}, 64))
	d, err := NewHealthDirectory(HealthConfig{Targets: []HealthTarget{target(up.URL, 1), target(unknown.URL, 2), target(down.URL, 3), target(full.URL, 4)}})
	if err != nil {
		t.Fatal(err)
	}
	if got := d.States(nil); len(got) != 0 {
		t.Fatalf("before a probe: %v; want none", got)
	}
	for range 3 {
		d.Servers(context.Background(), nil)
	}
	got := fmt.Sprint(d.States([]ServerState{{}})[1:])
	want := "[{{192.0.2.1:40000 invalid AddrPort} true 4 3} {{192.0.2.2:40000 invalid AddrPort} true -1 0} " +
		"{{192.0.2.3:40000 invalid AddrPort} false 0 0} {{192.0.2.4:40000 invalid AddrPort} true 0 0}]"
	if got != want {
		t.Errorf("States after 3 offers:\n got %s\nwant %s", got, want)
	}
}

// A ready server whose load cannot be read (/readyz without it, /metrics
// refused) is offered, after those with known room.
func TestHealthDirectoryUnknownLoad(t *testing.T) {
	unknown := newFakeGameServer(t, true, "")
	unknown.metrics.Store(nil)
	known := newFakeGameServer(t, true, "")
	known.readyLoad.Store(readyzLoad(62, 64))
	clock := newFakeClock()
	d, err := NewHealthDirectory(HealthConfig{Targets: []HealthTarget{target(unknown.URL, 1), target(known.URL, 2)}, Now: clock.Now})
	if err != nil {
		t.Fatal(err)
	}
	want := [][]string{
		{"192.0.2.2:40000", "192.0.2.1:40000"},
		{"192.0.2.2:40000", "192.0.2.1:40000"},
		{"192.0.2.1:40000"}, // the known one's 2 slots are offered
	}
	for i, w := range want {
		got, err := d.Servers(context.Background(), nil)
		if err != nil || strings.Join(serverNames(got), " ") != strings.Join(w, " ") {
			t.Errorf("call %d: %v, %v; want %v", i, serverNames(got), err, w)
		}
	}
}

// A server dropped and restored is logged at info once per transition.
func TestHealthDirectoryLogsTransitions(t *testing.T) {
	f := newFakeGameServer(t, true, load([]int{1}, 8))
	other := newFakeGameServer(t, true, load([]int{1}, 8))
	var logs syncBuffer
	clock := newFakeClock()
	d, err := NewHealthDirectory(HealthConfig{Targets: []HealthTarget{target(f.URL, 1), target(other.URL, 2)}, Now: clock.Now,
		Logger: slog.New(slog.NewTextHandler(&logs, &slog.HandlerOptions{Level: slog.LevelInfo}))})
	if err != nil {
		t.Fatal(err)
	}
	for _, ready := range []bool{true, false, false, true, true, false} {
		f.ready.Store(ready)
		d.Servers(context.Background(), nil)
		clock.Advance(DefaultHealthCacheFor)
	}
	out := logs.String()
	dropped, restored := strings.Count(out, "server dropped"), strings.Count(out, "server restored")
	if dropped != 2 || restored != 1 || strings.Count(out, "192.0.2.2") != 0 {
		t.Errorf("up, down, down, up, up, down: %d dropped and %d restored lines; want 2 and 1, all for 192.0.2.1:\n%s", dropped, restored, out)
	}
	if !strings.Contains(out, "level=INFO") || !strings.Contains(out, "reason=\"readyz: not ready: status 503\"") || !strings.Contains(out, "free=7") {
		t.Errorf("want info lines with the reason and the free slots:\n%s", out)
	}
}
