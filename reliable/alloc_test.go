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

// tick is one game tick: both endpoints Update, each sends one packet to
// the other, and both read and clear their acks.
func (l *link) tick() {
	l.now += 16 * time.Millisecond
	l.ep[0].Update(l.now)
	l.ep[1].Update(l.now)
	l.send(0)
	l.send(1)
	for _, e := range l.ep {
		e.Acks()
		e.ClearAcks()
	}
}

// send sends one packet from endpoint i to the other: written datagram by
// datagram into one buffer, each received at once.
func (l *link) send(i int) {
	p, err := l.ep[i].Send(l.payload)
	if err != nil {
		panic(err)
	}
	for k := 0; k < p.Datagrams(); k++ {
		n, _ := p.WriteDatagram(k, l.buf)
		if d, _ := l.ep[1-i].Receive(l.buf[:n]); d.Delivered {
			l.got++
		}
	}
}

// TestZeroAllocations: sending and receiving allocate nothing in steady
// state, fragmented or not.
func TestZeroAllocations(t *testing.T) {
	for _, size := range []int{100, 4000} {
		l := newLink(t, size)
		for range 500 { // fill every window first
			l.tick()
		}
		allocs := testing.AllocsPerRun(1000, l.tick)
		if allocs != 0 {
			t.Errorf("%d-byte packets: %v allocations per tick", size, allocs)
		}
		if want := 2 * (500 + 1000 + 1); l.got != want {
			t.Errorf("%d-byte packets: %d of %d delivered", size, l.got, want)
		}
		t.Logf("%d B: %v allocs per tick (two packets sent and received, two updates)", size, allocs)
	}
}

// BenchmarkTick: a game tick on a pair of endpoints (two Updates, one
// packet each way, acks read); ns/packet is half a tick.
func BenchmarkTick(b *testing.B) {
	for _, size := range []int{100, 4000} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			l := newLink(b, size)
			for range 500 {
				l.tick()
			}
			b.SetBytes(2 * int64(size))
			b.ReportAllocs()
			for b.Loop() {
				l.tick()
			}
			reportPackets(b, 2)
		})
	}
}

// BenchmarkPacket: one packet sent, written and received, directions
// alternating (so acks flow), no Update: the per-packet path alone.
func BenchmarkPacket(b *testing.B) {
	for _, size := range []int{100, 4000} {
		b.Run(fmt.Sprintf("%dB", size), func(b *testing.B) {
			l := newLink(b, size)
			for range 500 {
				l.tick()
			}
			b.SetBytes(int64(size))
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				l.send(i & 1)
				i++
			}
			reportPackets(b, 1)
		})
	}
}

// BenchmarkUpdate: one Update of an endpoint with full windows.
func BenchmarkUpdate(b *testing.B) {
	l := newLink(b, 100)
	for range 500 {
		l.tick()
	}
	b.ReportAllocs()
	for b.Loop() {
		l.now += time.Millisecond
		l.ep[0].Update(l.now)
	}
}

func reportPackets(b *testing.B, perOp int) {
	n := float64(b.N * perOp)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/packet")
	b.ReportMetric(n/b.Elapsed().Seconds(), "packets/s")
}
