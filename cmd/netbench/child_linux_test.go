//go:build linux

package main

import (
	"testing"
	"time"

	"github.com/netcode-go/netcode/bench"
)

// TestServerWindowSplit: a window's time, CPU and datagrams end at the
// load's last send (c), and the game's counts after the drain (e).
func TestServerWindowSplit(t *testing.T) {
	t0 := time.Unix(1000, 0)
	b := mark{at: t0, cpu: 1e9, wait: 10, mallocs: 5, c: bench.ServerCounters{PacketsIn: 100, PacketsOut: 100, Inputs: 50, Ticks: 7, Dropped: 1}}
	c := mark{at: t0.Add(2 * time.Second), cpu: 2e9, wait: 30, mallocs: 9, c: bench.ServerCounters{PacketsIn: 1100, PacketsOut: 2100, Inputs: 1000, Ticks: 127, Dropped: 4}}
	e := mark{at: t0.Add(2300 * time.Millisecond), cpu: 2.1e9, wait: 40, mallocs: 12, c: bench.ServerCounters{PacketsIn: 1150, PacketsOut: 2400, Inputs: 1040, Ticks: 145, Dropped: 6}}
	w := serverWindow(&b, &c, &e)
	if w.WindowS != 2 || w.CPUNanos != 1e9 || w.WaitNanos != 20 || w.Mallocs != 4 ||
		w.PacketsIn != 1000 || w.PacketsOut != 2000 || w.Dropped != 3 {
		t.Errorf("CPU window %+v; want 2 s, 1 s of CPU, wait 20, 4 allocations, 1000 in, 2000 out, 3 dropped: to the last send", w)
	}
	if w.Inputs != 990 || w.Ticks != 138 {
		t.Errorf("inputs %d, ticks %d; want 990 and 138: through the drain", w.Inputs, w.Ticks)
	}
	// Without a stop the two ends are one.
	if w := serverWindow(&b, &e, &e); w.WindowS != 2.3 || w.Inputs != 990 || w.PacketsIn != 1050 {
		t.Errorf("one end: %+v", w)
	}
}
