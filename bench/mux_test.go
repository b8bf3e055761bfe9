//go:build linux

package bench

import (
	"math/rand/v2"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/netcode-go/netcode/engine"
)

func TestMuxAddrRoundTrip(t *testing.T) {
	seen := make(map[netip.Addr]bool)
	for j := range MaxLoadClients {
		a := muxAddr(j)
		if !a.IsLoopback() || a.As4()[3] == 0 || a.As4()[3] == 255 {
			t.Fatalf("client %d: address %v", j, a)
		}
		if seen[a] {
			t.Fatalf("client %d: address %v given twice", j, a)
		}
		seen[a] = true
		if got := muxIndex(a); got != j {
			t.Fatalf("muxIndex(%v) = %d; want %d", a, got, j)
		}
	}
	for _, s := range []string{"127.0.0.1", "127.1.0.0", "127.1.0.255", "10.1.0.1", "::1", "::ffff:127.1.0.1"} {
		if j := muxIndex(netip.MustParseAddr(s)); j != -1 {
			t.Errorf("muxIndex(%s) = %d; want -1", s, j)
		}
	}
	if j := muxIndex(netip.Addr{}); j != -1 {
		t.Errorf("muxIndex(zero) = %d", j)
	}
}

// TestWakeHeap checks the heap against a sorted slice through random key
// changes.
func TestWakeHeap(t *testing.T) {
	const n = 200
	var h wakeHeap
	h.init(n)
	rng := rand.New(rand.NewPCG(1, 2))
	keys := make(map[int]int64)
	for step := range 5000 {
		j := rng.IntN(n)
		at := rng.Int64N(1000)
		h.set(j, at)
		keys[j] = at
		if step%50 != 0 {
			continue
		}
		// The top is a client with the least key.
		least := int64(1 << 62)
		for _, k := range keys {
			least = min(least, k)
		}
		top, at2 := h.top()
		if at2 != least || keys[top] != least {
			t.Fatalf("step %d: top %d at %d; least key %d", step, top, at2, least)
		}
		// Every client is in the heap exactly once, at its position.
		if len(h.heap) != len(keys) {
			t.Fatalf("heap holds %d, want %d", len(h.heap), len(keys))
		}
		for p, j := range h.heap {
			if h.pos[j] != int32(p) {
				t.Fatalf("client %d at %d, pos says %d", j, p, h.pos[j])
			}
			if p > 0 && h.at[h.heap[(p-1)/2]] > h.at[j] {
				t.Fatalf("heap order broken at %d", p)
			}
		}
	}
	// Draining in order by pushing tops to the end gives sorted keys.
	var got []int64
	for range len(keys) {
		j, at := h.top()
		got = append(got, at)
		h.set(j, maxWake)
	}
	if !slices.IsSorted(got) {
		t.Fatalf("drained out of order: %v", got)
	}
}

// TestSharedLoadAllocs: with shared sockets, the whole steady state of a
// load (workers sending and receiving for 64 clients at 200 Hz each,
// stamping, timing) and of the echo server it drives allocates nothing.
// AllocsPerRun counts every goroutine's allocations over each 20 ms run.
func TestSharedLoadAllocs(t *testing.T) {
	if testing.Short() {
		t.Skip("runs real sockets for about a second")
	}
	const clients = 64
	key := testKey(t)
	_, addr := startTestEcho(t, key, clients)
	load := connectedLoad(t, key, addr, SocketsShared, clients)
	load.BeginWindow(200, time.Now().Add(engine.PacketSendInterval), 0)
	time.Sleep(300 * time.Millisecond) // every client is sending
	before := load.Totals()
	allocs := testing.AllocsPerRun(10, func() { time.Sleep(20 * time.Millisecond) })
	after := load.Totals()
	if got := after.Received - before.Received; got < clients*200/10 {
		t.Fatalf("only %d echoes during the measurement; the load is not running", got)
	}
	if allocs != 0 {
		t.Fatalf("%.1f allocations per 20 ms of steady load; want 0", allocs)
	}
}

// TestTickDueBounded: a pass ticks at most muxTickBatch due clients and
// says when more are due, so the worker reads before ticking the rest.
func TestTickDueBounded(t *testing.T) {
	const n = 2*muxTickBatch + 88
	l := &Load{start: time.Now()}
	l.active.Store(&activeSet{}) // no client active: a tick parks it
	w := &muxWorker{l: l}
	w.wakes.init(n)
	for i := range n {
		w.clients = append(w.clients, &loadClient{idx: i})
		w.wakes.set(i, 0)
	}
	parked := func() (k int) {
		for j := range n {
			if w.wakes.at[j] == maxWake {
				k++
			}
		}
		return k
	}
	now := l.start.Add(time.Millisecond)
	for pass, want := range []int{muxTickBatch, 2 * muxTickBatch, n} {
		more := w.tickDue(now)
		if got := parked(); got != want || more != (want < n) {
			t.Fatalf("pass %d: %d clients ticked, more %v; want %d, more %v", pass, got, more, want, want < n)
		}
	}
}
