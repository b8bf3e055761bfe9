package message

import (
	"fmt"
	"runtime"
	"testing"
	"time"
)

var simTraffic = traffic{ordered: 12, unordered: 3, unreliable: 2, minSize: 9, maxSize: 40, blocks: true}

// TestLossyLink runs two peers for 60 simulated seconds over 0, 5 and 20%
// loss with jitter (reordering) and duplicates, then lets them drain:
// every reliable message and block arrives exactly once (in order on the
// ordered channel, byte-exact), no unreliable message twice, and the run
// allocates nothing after its first seconds.
func TestLossyLink(t *testing.T) {
	for _, loss := range []float64{0, 0.05, 0.20} {
		t.Run(fmt.Sprintf("loss%.0f%%", loss*100), func(t *testing.T) {
			link := linkConfig{loss: loss, dup: 0.02, latency: 40 * time.Millisecond, jitter: 30 * time.Millisecond}
			s := newSim(t, simConfig(), link, simTraffic, 42)
			s.startIDs(1<<16 - 3000) // the ids wrap early in the run
			for s.now < 5*time.Second {
				s.step()
			}
			var m0, m1 runtime.MemStats
			runtime.ReadMemStats(&m0)
			for s.now < 60*time.Second {
				s.step()
			}
			runtime.ReadMemStats(&m1)
			t.Logf("%d allocations, heap %d -> %d bytes over 55 s", m1.Mallocs-m0.Mallocs, m0.HeapAlloc, m1.HeapAlloc)
			if n := m1.Mallocs - m0.Mallocs; n > 100 { // the runtime's own, not per tick
				t.Errorf("%d allocations in 55 simulated seconds (5,500 ticks); want none per tick", n)
			}
			s.quiet()
			for end := s.now + 30*time.Second; s.now < end && !(delivered(s.a, s.b) && delivered(s.b, s.a) && idle(s.a) && idle(s.b)); {
				s.step()
			}
			for _, pq := range [2][2]*simPeer{{s.a, s.b}, {s.b, s.a}} {
				p, q := pq[0], pq[1]
				if !delivered(p, q) {
					t.Fatalf("after draining: ordered %d/%d, unordered %d/%d, blocks %d/%d delivered",
						q.received[0], p.sent[0], q.received[1], p.sent[1], q.blkGot, p.blkSent)
				}
				if p.sent[0] < 20_000 || p.blkSent < 3*len(blockSizes) {
					t.Errorf("only %d ordered messages and %d blocks sent; the test wants over 20,000 and three rounds of block sizes", p.sent[0], p.blkSent)
				}
				// Unreliable: no duplicates (checked on arrival); most arrive.
				if min := float64(p.sent[2]) * (1 - loss) * 0.9; float64(q.received[2]) < min {
					t.Errorf("unreliable: %d of %d arrived; want at least %.0f", q.received[2], p.sent[2], min)
				}
				for ch := range 3 {
					if n := p.conn.Pending(ch); n != 0 {
						t.Errorf("channel %d: %d messages still pending", ch, n)
					}
				}
				st := p.conn.Stats()
				t.Logf("sent %d+%d resent, fragments %d+%d resent, dup msgs %d, dup packets %d, unreliable dropped %d, refused %d, link overflow %d",
					st.MessagesSent, st.MessagesResent, st.FragmentsSent, st.FragmentsResent, st.DuplicateMessages,
					st.DuplicatePackets, st.UnreliableDropped, st.Refused, s.ab.overflow+s.ba.overflow)
				if st.Refused != 0 || st.MalformedPackets != 0 {
					t.Errorf("refused %d, malformed %d; want 0 between two Conns of one config", st.Refused, st.MalformedPackets)
				}
			}
		})
	}
}

// TestStallDetected stops one side after 5 seconds: the other reports it
// stalled once StallTimeout passes with no ack, and not before.
func TestStallDetected(t *testing.T) {
	cfg := simConfig()
	cfg.StallTimeout = 2 * time.Second
	link := linkConfig{loss: 0.2, dup: 0.02, latency: 40 * time.Millisecond, jitter: 30 * time.Millisecond}
	s := newSim(t, cfg, link, simTraffic, 9)
	for s.now < 10*time.Second {
		s.step()
		if s.a.conn.Stalled() || s.b.conn.Stalled() {
			t.Fatalf("stalled at %v with both sides running", s.now)
		}
	}
	s.b.stopped = true
	stop := s.now
	for s.now < stop+5*time.Second && !s.a.conn.Stalled() {
		s.step()
	}
	if !s.a.conn.Stalled() {
		t.Fatal("not stalled 5 s after the peer stopped; StallTimeout is 2 s")
	}
	// The last ack can be up to one latency and jitter after the stop.
	if d := s.now - stop; d < cfg.StallTimeout || d > cfg.StallTimeout+200*time.Millisecond {
		t.Fatalf("stalled %v after the peer stopped; want 2 s to 2.2 s", d)
	}
	// The queues stay bounded while the peer is gone.
	for range 500 {
		s.step()
	}
	for ch := range 3 {
		if n, max := s.a.conn.Pending(ch), cfg.Channels[ch].SendQueueSize; n > max {
			t.Errorf("channel %d: %d pending; want at most %d", ch, n, max)
		}
	}
	s.b.stopped = false
	for range 50 {
		s.step()
	}
	if s.a.conn.Stalled() {
		t.Fatal("still stalled after the peer came back")
	}
}
