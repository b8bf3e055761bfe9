package engine

import (
	"log/slog"
	"math"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

// Kernel shedding of connection-request floods.
//
// The decryption budget makes a forged request cheap, but not free: the
// server still reads it (a system call's share, a 1078-byte copy) and
// checks its header, ~0.8 µs on loopback. A flood of ~1M/s takes a whole
// core that way, and the socket queue it shares with the players' packets
// overflows, so players lose packets. When a socket reads more requests
// than shedReadFactor times the budget (or cannot keep up with a queue
// full of them), the server asks the kernel to keep only a random share of
// them (batchio.Shedder, a socket filter on the first byte, which is 0 for
// a request and never 0 for any other packet):
// the rest are dropped before they are queued, on the CPU that received
// them, and never displace a player's datagram. Every request, forged or
// not, then gets through with the same probability, as it does through
// the budget; a client resends its request every 100 ms, so under a flood
// it connects within a few tries.
const (
	// shedWindow is how often the share is adjusted to the rate measured.
	shedWindow = 100 * time.Millisecond
	// shedReadFactor: the requests a socket reads per second are kept
	// between a quarter and all of this many times TokenDecryptsPerSecond
	// (4 × 32768/s by default, ~10% of a core), so the budget, not the
	// filter, decides which requests are decrypted.
	shedReadFactor = 4
	// maxShedShift bounds the share kept at 1 in 2^16.
	maxShedShift = 16
	// fastShedRequests is how many requests a window must have read before
	// their rate can raise the share ahead of the window's end (fewer say
	// little about a rate: a burst of clients connecting at once).
	fastShedRequests = 1024
)

// requestShedder is one conn's shedding state.
type requestShedder struct {
	conn  batchio.Shedder // nil: the conn cannot shed, or it failed
	start time.Time       // when this window began
	seen  uint64          // requests read in this window
	read  uint64          // datagrams read in this window
	// drained: a read found the socket empty in this window.
	drained bool
	shift   uint8 // the kernel keeps 1 in 2^shift requests
}

// shedShift is the smallest shift at which about readRate requests per
// second or fewer would be read, when seen were read in elapsed with 1 in
// 2^current kept.
func shedShift(seen uint64, current uint8, elapsed time.Duration, readRate float64) uint8 {
	if seen == 0 || elapsed <= 0 {
		return 0
	}
	offered := float64(seen) * float64(uint64(1)<<current) / elapsed.Seconds()
	if offered <= readRate {
		return 0
	}
	return uint8(min(math.Ceil(math.Log2(offered/readRate)), maxShedShift))
}

// nextShedShift is the shift for the next window. It rises at once to
// read at most readRate; it also rises by one when the socket never ran
// dry in the window and most of what was read were requests (the server
// cannot even read readRate, the core is busy, and the queue is full); it
// falls only as far as reading at most half the rate allows, so that a
// server whose reads hover near the threshold does not flap.
func nextShedShift(r *requestShedder, elapsed time.Duration, readRate float64) uint8 {
	up := shedShift(r.seen, r.shift, elapsed, readRate)
	if !r.drained && r.seen > r.read/2 {
		up = max(up, min(r.shift+1, maxShedShift))
	}
	if up >= r.shift {
		return up
	}
	return min(r.shift, shedShift(r.seen, r.shift, elapsed, readRate/2))
}

// initShedding finds the conns that can shed; it stays off when the
// configuration turns it off or sets no decryption budget to derive a
// rate from.
func (s *Server) initShedding(shedders []batchio.Conn) {
	s.shed = make([]requestShedder, len(shedders))
	if s.cfg.DisableRequestShedding || s.cfg.TokenDecryptsPerSecond <= 0 {
		return
	}
	s.shedReadRate = float64(shedReadFactor * s.cfg.TokenDecryptsPerSecond)
	for i, c := range shedders {
		if sh, ok := batchio.As[batchio.Shedder](c); ok {
			s.shed[i].conn = sh
		}
	}
}

// adjustShedding runs after every receive pass. At the end of each conn's
// window it sets the share from the window's reads (nextShedShift); within
// a window it raises the share as soon as enough requests have come in to
// tell that a flood is outrunning it: a socket queue fills in milliseconds
// at a million requests a second, and players' packets would be lost until
// the window's end.
func (s *Server) adjustShedding(now time.Time) {
	changed := false
	for i := range s.shed {
		r := &s.shed[i]
		if r.conn == nil {
			continue
		}
		elapsed := now.Sub(r.start)
		var next uint8
		switch {
		case elapsed >= shedWindow || elapsed < 0:
			next = nextShedShift(r, elapsed, s.shedReadRate)
		case r.seen >= fastShedRequests && float64(r.seen) > 2*s.shedReadRate*elapsed.Seconds():
			// Reading twice the rate: the flood has at least doubled.
			next = shedShift(r.seen, r.shift, elapsed, s.shedReadRate)
			if next <= r.shift {
				continue
			}
		default:
			continue
		}
		r.start = now
		r.seen, r.read, r.drained = 0, 0, false
		if next == r.shift {
			continue
		}
		changed = true
		if err := r.conn.SetShedding(0, 1/float64(uint64(1)<<next)); err != nil {
			// Without the filter the budget still holds; don't retry a
			// system call that fails every window.
			s.stats.ShedErrors++
			s.log.Warn("netcode server: kernel shedding of connection requests is off", slog.Any("error", err))
			r.conn, r.shift = nil, 0
			continue
		}
		r.shift = next
		s.stats.ShedChanges++
	}
	if changed {
		shift := uint8(0)
		for i := range s.shed {
			shift = max(shift, s.shed[i].shift)
		}
		s.stats.ShedShift = shift
	}
}

// stopShedding removes the filters, so that a conn the application keeps
// open after the server stops takes every request again.
func (s *Server) stopShedding() {
	for i := range s.shed {
		if r := &s.shed[i]; r.conn != nil && r.shift != 0 {
			r.conn.SetShedding(0, 1)
			r.shift = 0
		}
	}
	s.stats.ShedShift = 0
}
