package reliable_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/netcode-go/netcode/reliable"
)

// link is a pair of endpoints exchanging packets through caller-owned
// datagram buffers, as the engine will drive them.
type link struct {
	ep      [2]*reliable.Endpoint
	payload []byte
	buf     []byte
	now     time.Duration
	turn    int
	got     int
}

func newLink(tb testing.TB, size int) *link {
	c := reliable.DefaultConfig()
	pool, err := reliable.NewPool(c, 4, 2)
	if err != nil {
		tb.Fatal(err)
	}
	l := &link{payload: payloadRule(1, size), buf: make([]byte, c.MaxDatagramBytes())}
	l.ep[0] = mustNew(tb, c, pool)
	l.ep[1] = mustNew(tb, c, pool)
	return l
}

// step sends one packet from one side to the other and reads the acks, as
// a tick does; directions alternate.
func (l *link) step() {
	from, to := l.ep[l.turn], l.ep[1-l.turn]
	l.turn = 1 - l.turn
	l.now += time.Millisecond
	from.Update(l.now)
	p, err := from.Send(l.payload)
	if err != nil {
		panic(err)
	}
	for i := 0; i < p.Datagrams(); i++ {
		n, _ := p.WriteDatagram(i, l.buf)
		if d, _ := to.Receive(l.buf[:n]); d.Delivered {
			l.got++
		}
	}
	from.Acks()
	from.ClearAcks()
}

// TestZeroAllocations: sending and receiving allocate nothing in steady
// state, fragmented or not.
func TestZeroAllocations(t *testing.T) {
	for _, size := range []int{100, 4000} {
		l := newLink(t, size)
		for range 1000 { // fill every window first
			l.step()
		}
		allocs := testing.AllocsPerRun(2000, l.step)
		if allocs != 0 {
			t.Errorf("%d-byte packets: %v allocations per packet", size, allocs)
		}
		if l.got != 1000+2000+1 {
			t.Errorf("%d-byte packets: %d of %d delivered", size, l.got, 3001)
		}
		t.Logf("%d B: %v allocs per packet sent and received", size, allocs)
	}
}

// BenchmarkRoundTrip: one packet per op, sent (written into a datagram
// buffer) and received, directions alternating so acks flow both ways.
func BenchmarkRoundTrip(b *testing.B) {
	for _, size := range []int{100, 4000} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			l := newLink(b, size)
			for range 1000 {
				l.step()
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				l.step()
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N), "ns/packet")
			b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "packets/s")
		})
	}
}
