package bench

import (
	"testing"
	"time"
)

func TestTickClock(t *testing.T) {
	t0 := time.Unix(1000, 0)
	c := newTickClock(t0, 100) // 10 ms
	if c.interval != 10*time.Millisecond {
		t.Fatalf("interval %v", c.interval)
	}
	steps := []struct {
		at      time.Duration
		tick    uint64
		ok      bool
		skipped uint64
	}{
		{0, 0, true, 0},
		{5 * time.Millisecond, 0, false, 0},    // not yet due
		{10 * time.Millisecond, 1, true, 0},    // on time
		{29 * time.Millisecond, 2, true, 0},    // 9 ms late: still tick 2
		{30 * time.Millisecond, 3, true, 0},    // tick 3 at once
		{75 * time.Millisecond, 7, true, 3},    // 35 ms late: ticks 4-6 skipped
		{79 * time.Millisecond, 0, false, 3},   // tick 8 is due at 80 ms
		{80 * time.Millisecond, 8, true, 3},    // back on schedule
		{200 * time.Millisecond, 20, true, 14}, // 11 more skipped
	}
	for _, s := range steps {
		tick, ok := c.due(t0.Add(s.at))
		if ok != s.ok || (ok && tick != s.tick) || c.skipped != s.skipped {
			t.Fatalf("at %v: tick %d ok %v skipped %d; want %d %v %d", s.at, tick, ok, c.skipped, s.tick, s.ok, s.skipped)
		}
	}
	if want := t0.Add(210 * time.Millisecond); !c.deadline().Equal(want) {
		t.Fatalf("deadline %v; want %v", c.deadline(), want)
	}
}
