package reliable_test

import (
	"bytes"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/netcode-go/netcode/reliable"
)

// inFlight is a datagram on the simulated link.
type inFlight struct {
	at   time.Duration
	to   int
	data []byte
}

// TestLossyLink runs two endpoints over a link with 10% loss, jitter
// (hence reordering) and duplicates, sending packets of 1 to 4,000 bytes
// at 60 Hz: acks name only packets that arrived, nothing is delivered
// twice, every delivery is byte-exact, and the RTT estimate tracks the
// link's delay.
func TestLossyLink(t *testing.T) {
	const (
		tick  = time.Second / 60
		delay = 3 * tick // 50 ms, whole ticks so that the bounds are exact
		ticks = 3000
	)
	rng := rand.New(rand.NewPCG(1, 2))
	c := reliable.DefaultConfig()
	c.RTTSmoothingFactor = 0.05 // converge within the test
	// Incomplete packets (a fragment lost) hold their buffer until the
	// 64-entry reassembly window passes them: a smaller share than the
	// window refuses new packets under this much loss.
	pool, err := reliable.NewPool(c, 2*c.FragmentReassemblyBufferSize, c.FragmentReassemblyBufferSize)
	if err != nil {
		t.Fatal(err)
	}
	ep := [2]*reliable.Endpoint{mustNew(t, c, pool), mustNew(t, c, pool)}
	payloadOf := func(from int, seq uint16) []byte {
		return payloadRule(uint64(from)<<16|uint64(seq), 1+int(seq)*7919%4000)
	}
	var link []inFlight
	arrived := [2]map[uint16]bool{{}, {}} // by receiver: sequences accepted
	acked := [2]map[uint16]bool{{}, {}}   // by sender
	var now time.Duration
	for range ticks {
		now += tick
		for i := range ep {
			ep[i].Update(now)
		}
		// Deliver what is due, in arrival order.
		rest := link[:0]
		var due []inFlight
		for _, f := range link {
			if f.at <= now {
				due = append(due, f)
			} else {
				rest = append(rest, f)
			}
		}
		link = rest
		rng.Shuffle(len(due), func(i, j int) { due[i], due[j] = due[j], due[i] })
		for _, f := range due {
			d, _ := ep[f.to].Receive(f.data)
			if !d.Delivered {
				continue
			}
			if arrived[f.to][d.Sequence] {
				t.Fatalf("sequence %d delivered twice", d.Sequence)
			}
			if !bytes.Equal(d.Payload, payloadOf(1-f.to, d.Sequence)) {
				t.Fatalf("sequence %d not byte-exact", d.Sequence)
			}
			arrived[f.to][d.Sequence] = true
		}
		for i := range ep {
			for _, s := range ep[i].Acks() {
				if !arrived[1-i][s] {
					t.Fatalf("endpoint %d: ack for %d, which never arrived", i, s)
				}
				if acked[i][s] {
					t.Fatalf("endpoint %d: %d acked twice", i, s)
				}
				acked[i][s] = true
			}
			ep[i].ClearAcks()
			p, err := ep[i].Send(payloadOf(i, ep[i].NextSequence()))
			if err != nil {
				t.Fatal(err)
			}
			for k := 0; k < p.Datagrams(); k++ {
				if rng.IntN(10) == 0 {
					continue // lost
				}
				b := make([]byte, p.DatagramLen(k))
				p.WriteDatagram(k, b)
				for copies := 1 + rng.IntN(20)/19; copies > 0; copies-- { // 5% duplicated
					jitter := time.Duration(rng.IntN(int(tick)))
					link = append(link, inFlight{at: now + delay + jitter, to: 1 - i, data: b})
				}
			}
		}
	}
	for i := range ep {
		s := ep[i].Stats()
		cnt := ep[i].Counters()
		// A datagram is delivered at the first tick after its delay and
		// jitter: 4 ticks each way, so a sample is 8 ticks, more when the
		// first answer was lost. The smoothed RTT stays within 10% of it.
		base := float32(2*(delay+tick)) / float32(time.Millisecond)
		lo, hi := base*0.999, base*1.1
		if s.RTT < lo || s.RTT > hi {
			t.Errorf("endpoint %d: RTT %.1f ms, want %.0f..%.0f", i, s.RTT, lo, hi)
		}
		// 10% fragment loss delivers about 77% of these packets (1 to 4
		// fragments); the 32 ack bits make nearly every arrival acked.
		if len(arrived[1-i]) < ticks*7/10 || len(acked[i]) < len(arrived[1-i])*95/100 {
			t.Errorf("endpoint %d: %d arrived, %d acked of %d", i, len(arrived[1-i]), len(acked[i]), ticks)
		}
		if s.PacketLoss <= 0 {
			t.Errorf("endpoint %d: no loss measured", i)
		}
		if n := ep[1-i].Drops()[reliable.DropReassemblyPoolExhausted]; n != 0 {
			t.Errorf("endpoint %d: %d reassemblies refused for want of buffers", 1-i, n)
		}
		t.Logf("endpoint %d: rtt %.1f ms (min %.1f max %.1f), loss %.1f%%, %d sent, %d delivered, %d acked, counters %v",
			i, s.RTT, s.RTTMin, s.RTTMax, s.PacketLoss, cnt[reliable.PacketsSent], len(arrived[1-i]), len(acked[i]), cnt)
	}
}
