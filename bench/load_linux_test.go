//go:build linux

package bench

import (
	"testing"
	"time"
)

// TestSendGridPhase: with a send grid the clients' first sends fall on
// its multiples, in order, filling every slot of the interval; a grid
// over a tenth of the interval is not used.
func TestSendGridPhase(t *testing.T) {
	const n = 1000
	interval := time.Second / 60
	l := &Load{cfg: LoadConfig{SendGrid: time.Millisecond}, clients: make([]*loadClient, n)}
	slots := map[time.Duration]int{}
	var last time.Duration
	for i := range n {
		p := l.phase(&loadClient{idx: i}, interval)
		if p%time.Millisecond != 0 || p < last || p >= interval {
			t.Fatalf("client %d: phase %v after %v; want a multiple of 1ms, in order, within %v", i, p, last, interval)
		}
		slots[p]++
		last = p
	}
	if want := int((interval + time.Millisecond - 1) / time.Millisecond); len(slots) != want {
		t.Errorf("%d grid slots used; want %d", len(slots), want)
	}
	l.cfg.SendGrid = 0
	if p := l.phase(&loadClient{idx: 1}, interval); p != interval/n {
		t.Errorf("without a grid, client 1's phase is %v; want %v", p, interval/n)
	}
	l.cfg.SendGrid = 2 * time.Millisecond
	if p := l.phase(&loadClient{idx: 1}, 10*time.Millisecond); p != 10*time.Millisecond/n {
		t.Errorf("a grid over a tenth of the interval moved client 1 to %v", p)
	}
	// A sweep's step with a quarter of the clients active spreads their
	// sends over the whole interval, not over its first quarter.
	l.cfg.SendGrid = 0
	l.active.Store(&activeSet{n: n / 4})
	if p := l.phase(&loadClient{idx: n/4 - 1}, interval); p < interval*9/10 || p >= interval {
		t.Errorf("the last of %d active clients of %d sends at %v in an interval of %v; want within its last tenth", n/4, n, p, interval)
	}
}
