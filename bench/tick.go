package bench

import "time"

// tickClock schedules a fixed-rate tick: tick k is due at epoch +
// k*interval. A tick that comes due more than an interval late runs as the
// current interval's tick and the numbers in between are skipped (never
// sent), so a server that falls behind shows it as lost snapshots instead
// of as a slower tick rate nobody measures.
type tickClock struct {
	epoch    time.Time
	interval time.Duration
	next     uint64 // the next tick number
	skipped  uint64 // tick numbers skipped so far
}

func newTickClock(epoch time.Time, hz float64) tickClock {
	return tickClock{epoch: epoch, interval: max(time.Duration(float64(time.Second)/hz), 1)}
}

// due reports whether a tick is due at now and, if so, its number; the
// caller runs it.
func (c *tickClock) due(now time.Time) (tick uint64, ok bool) {
	if now.Before(c.deadline()) {
		return 0, false
	}
	k := c.next
	if cur := uint64(now.Sub(c.epoch) / c.interval); cur > k {
		c.skipped += cur - k
		k = cur
	}
	c.next = k + 1
	return k, true
}

// deadline is when the next tick is due.
func (c *tickClock) deadline() time.Time {
	return c.epoch.Add(time.Duration(c.next) * c.interval)
}
