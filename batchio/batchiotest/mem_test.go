package batchiotest

import (
	"bytes"
	"encoding/binary"
	"errors"
	"net/netip"
	"sync"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

func newMemNet(t testing.TB, cfg MemConfig) *MemNetwork {
	t.Helper()
	nw, err := NewMemNetwork(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return nw
}

func memListen(t testing.TB, nw *MemNetwork, addr string) *MemConn {
	t.Helper()
	c, err := nw.Listen(netip.MustParseAddrPort(addr))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// patterned returns count messages to dst, message i being 1+i%size bytes
// of a pattern that depends on i, so a mix-up or a short copy shows.
func patterned(count, size int, dst netip.AddrPort) []batchio.Message {
	msgs := batchio.NewMessages(count, size)
	for i := range msgs {
		msgs[i].N, msgs[i].Addr = 1+i%size, dst
		for j := range msgs[i].N {
			msgs[i].Buf[j] = byte(i*31 + j)
		}
	}
	return msgs
}

// drain reads everything waiting on c. Delivery on a MemNetwork is
// synchronous: a write's datagrams are all there when it returns.
func drain(t *testing.T, c batchio.Conn, msgs []batchio.Message) []batchio.Message {
	t.Helper()
	var out []batchio.Message
	for {
		n, err := c.ReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		if n == 0 {
			return out
		}
		for _, m := range msgs[:n] {
			out = append(out, batchio.Message{Buf: bytes.Clone(m.Buf[:m.N]), N: m.N, Addr: m.Addr})
		}
	}
}

// checkSame fails unless got holds the payloads of want, in order, all from
// src.
func checkSame(t *testing.T, got, want []batchio.Message, src netip.AddrPort) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("received %d datagrams, want %d", len(got), len(want))
	}
	for i := range got {
		if !bytes.Equal(got[i].Buf[:got[i].N], want[i].Buf[:want[i].N]) {
			t.Fatalf("datagram %d: %x, want %x", i, got[i].Buf[:got[i].N], want[i].Buf[:want[i].N])
		}
		if got[i].Addr != src {
			t.Fatalf("datagram %d from %v, want %v", i, got[i].Addr, src)
		}
	}
}

// waitErr runs WaitRead in a goroutine so a test can act while it blocks.
func waitErr(c batchio.Conn, deadline time.Time) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.WaitRead(deadline) }()
	return done
}

func TestMemListen(t *testing.T) {
	nw := newMemNet(t, MemConfig{})
	memListen(t, nw, "10.0.0.1:4000")
	memListen(t, nw, "[2001:db8::1]:4000")
	tests := []struct {
		name, addr string
		ok         bool
	}{
		{"same IPv4 address", "10.0.0.1:4000", false},
		{"IPv4-mapped form of a bound address", "[::ffff:10.0.0.1]:4000", false},
		{"same IPv6 address", "[2001:db8::1]:4000", false},
		{"other port", "10.0.0.1:4001", true},
		{"IPv6 loopback", "[::1]:4000", true},
		{"IPv4 port 0", "10.0.0.1:0", true},
		{"IPv6 port 0", "[2001:db8::1]:0", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := nw.Listen(netip.MustParseAddrPort(tt.addr))
			if (err == nil) != tt.ok {
				t.Fatalf("Listen(%s) error %v, want ok=%v", tt.addr, err, tt.ok)
			}
			if err != nil {
				return
			}
			defer c.Close()
			want := netip.MustParseAddrPort(tt.addr)
			if c.LocalAddr().Addr() != want.Addr() || (want.Port() != 0 && c.LocalAddr().Port() != want.Port()) || c.LocalAddr().Port() == 0 {
				t.Fatalf("bound %v for %v", c.LocalAddr(), want)
			}
		})
	}
	if _, err := nw.Listen(netip.AddrPort{}); err == nil {
		t.Error("zero address accepted")
	}

	// Port 0 never hands out a port in use, and a closed address is free.
	a := memListen(t, nw, "10.0.0.2:0")
	b := memListen(t, nw, "10.0.0.2:0")
	if a.LocalAddr() == b.LocalAddr() {
		t.Fatalf("two conns on %v", a.LocalAddr())
	}
	a.Close()
	if c, err := nw.Listen(a.LocalAddr()); err != nil {
		t.Fatalf("listen on closed conn's address: %v", err)
	} else {
		c.Close()
	}
	if _, err := NewMemNetwork(MemConfig{InboxSize: -1}); err == nil {
		t.Error("negative inbox size accepted")
	}
}

func TestMemRoundTrip(t *testing.T) {
	nw := newMemNet(t, MemConfig{})
	a := memListen(t, nw, "10.0.0.1:0")
	b := memListen(t, nw, "[2001:db8::1]:4000")

	out := patterned(20, 100, b.LocalAddr()) // one write, read in batches of 8
	if n, err := a.WriteBatch(out); n != len(out) || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	checkSame(t, drain(t, b, batchio.NewMessages(8, 100)), out, a.LocalAddr())

	// The reply goes to the IPv4-mapped form of a's address, which names a.
	mapped := netip.AddrPortFrom(netip.AddrFrom16(a.LocalAddr().Addr().As16()), a.LocalAddr().Port())
	back := patterned(3, 50, mapped)
	if n, err := b.WriteBatch(back); n != 3 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	checkSame(t, drain(t, a, batchio.NewMessages(8, 100)), back, b.LocalAddr())

	if s := a.Stats(); s.Sent != 20 || s.Received != 3 {
		t.Errorf("a stats %+v", s)
	}
	if s := b.Stats(); s.Sent != 3 || s.Received != 20 {
		t.Errorf("b stats %+v", s)
	}
}

func TestMemInboxBound(t *testing.T) {
	nw := newMemNet(t, MemConfig{InboxSize: 4})
	a := memListen(t, nw, "10.0.0.1:1")
	b := memListen(t, nw, "10.0.0.2:2")
	out := patterned(10, 64, b.LocalAddr())
	if n, err := a.WriteBatch(out); n != 10 || err != nil {
		t.Fatalf("WriteBatch = %d, %v; a full inbox is network loss, so all count as sent", n, err)
	}
	if got := b.Stats().InboxFull; got != 6 {
		t.Fatalf("InboxFull = %d, want 6", got)
	}
	in := batchio.NewMessages(16, 64)
	n, err := b.ReadBatch(in)
	if err != nil {
		t.Fatal(err)
	}
	checkSame(t, in[:n], out[:4], a.LocalAddr()) // the first four, in order
	if n, _ := b.ReadBatch(in); n != 0 {
		t.Fatalf("read %d more after draining", n)
	}
	// Drained, the inbox takes datagrams again.
	if _, err := a.WriteBatch(out[4:8]); err != nil {
		t.Fatal(err)
	}
	n, _ = b.ReadBatch(in)
	checkSame(t, in[:n], out[4:8], a.LocalAddr())
}

func TestMemDrops(t *testing.T) {
	nw := newMemNet(t, MemConfig{MaxDatagram: 100})
	a := memListen(t, nw, "10.0.0.1:1")
	b := memListen(t, nw, "10.0.0.2:2")
	nowhere := netip.MustParseAddrPort("10.0.0.9:9")
	tests := []struct {
		name      string
		msg       batchio.Message
		sent      int
		noRoute   uint64
		invalid   uint64
		delivered bool
	}{
		{"unknown address", batchio.Message{Buf: make([]byte, 10), N: 10, Addr: nowhere}, 1, 1, 0, false},
		{"empty", batchio.Message{Buf: make([]byte, 10), N: 0, Addr: b.LocalAddr()}, 0, 0, 1, false},
		{"N beyond Buf", batchio.Message{Buf: make([]byte, 10), N: 11, Addr: b.LocalAddr()}, 0, 0, 1, false},
		{"longer than MaxDatagram", batchio.Message{Buf: make([]byte, 101), N: 101, Addr: b.LocalAddr()}, 0, 0, 1, false},
		{"no address", batchio.Message{Buf: make([]byte, 10), N: 10}, 0, 0, 1, false},
		{"good", batchio.Message{Buf: make([]byte, 100), N: 100, Addr: b.LocalAddr()}, 1, 0, 0, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := a.Stats()
			n, err := a.WriteBatch([]batchio.Message{tt.msg})
			if n != tt.sent || err != nil {
				t.Fatalf("WriteBatch = %d, %v; want %d", n, err, tt.sent)
			}
			after := a.Stats()
			if d := after.NoRoute - before.NoRoute; d != tt.noRoute {
				t.Errorf("NoRoute +%d, want +%d", d, tt.noRoute)
			}
			if d := after.Invalid - before.Invalid; d != tt.invalid {
				t.Errorf("Invalid +%d, want +%d", d, tt.invalid)
			}
			got, _ := b.ReadBatch(batchio.NewMessages(2, 100))
			if (got == 1) != tt.delivered || got > 1 {
				t.Errorf("delivered %d", got)
			}
		})
	}

	t.Run("truncated", func(t *testing.T) {
		out := []batchio.Message{
			{Buf: bytes.Repeat([]byte{1}, 50), N: 50, Addr: b.LocalAddr()},
			{Buf: bytes.Repeat([]byte{2}, 10), N: 10, Addr: b.LocalAddr()},
		}
		if _, err := a.WriteBatch(out); err != nil {
			t.Fatal(err)
		}
		in := batchio.NewMessages(2, 20)
		n, err := b.ReadBatch(in)
		if err != nil {
			t.Fatal(err)
		}
		// The long one is dropped without using up in[0].
		checkSame(t, in[:n], out[1:], a.LocalAddr())
		if got := b.Stats().Truncated; got != 1 {
			t.Fatalf("Truncated = %d, want 1", got)
		}
	})
}

func TestMemWaitRead(t *testing.T) {
	nw := newMemNet(t, MemConfig{})
	a := memListen(t, nw, "10.0.0.1:1")
	b := memListen(t, nw, "10.0.0.2:2")

	t.Run("deadline", func(t *testing.T) {
		start := time.Now()
		if err := b.WaitRead(start.Add(30 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited < 25*time.Millisecond || waited > time.Second {
			t.Fatalf("WaitRead returned after %v for a 30ms deadline", waited)
		}
		start = time.Now()
		if err := b.WaitRead(start.Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		if waited := time.Since(start); waited > 100*time.Millisecond {
			t.Fatalf("past deadline waited %v", waited)
		}
	})

	t.Run("arrival wakes", func(t *testing.T) {
		done := waitErr(b, time.Time{})
		time.Sleep(10 * time.Millisecond)
		a.WriteBatch(patterned(1, 10, b.LocalAddr()))
		select {
		case err := <-done:
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("an arrival did not wake WaitRead")
		}
		b.ReadBatch(batchio.NewMessages(4, 10))
	})

	t.Run("unread datagrams keep it awake", func(t *testing.T) {
		// The owner read only part of what arrived after the wake-up was
		// consumed: WaitRead must not block with datagrams waiting.
		a.WriteBatch(patterned(2, 10, b.LocalAddr()))
		if err := b.WaitRead(time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		b.ReadBatch(batchio.NewMessages(1, 10))
		select {
		case err := <-waitErr(b, time.Now().Add(2*time.Second)):
			if err != nil {
				t.Fatal(err)
			}
		case <-time.After(time.Second):
			t.Fatal("WaitRead blocked with a datagram waiting")
		}
		if n, _ := b.ReadBatch(batchio.NewMessages(4, 10)); n != 1 {
			t.Fatalf("read %d, want the 1 left", n)
		}
	})

	t.Run("close wakes", func(t *testing.T) {
		done := waitErr(b, time.Time{})
		time.Sleep(10 * time.Millisecond)
		b.Close()
		select {
		case err := <-done:
			if !errors.Is(err, batchio.ErrClosed) {
				t.Fatalf("WaitRead = %v, want ErrClosed", err)
			}
		case <-time.After(2 * time.Second):
			t.Fatal("Close did not wake WaitRead")
		}
		if _, err := b.ReadBatch(batchio.NewMessages(1, 10)); !errors.Is(err, batchio.ErrClosed) {
			t.Errorf("ReadBatch after Close = %v", err)
		}
		if _, err := b.WriteBatch(patterned(1, 10, a.LocalAddr())); !errors.Is(err, batchio.ErrClosed) {
			t.Errorf("WriteBatch after Close = %v", err)
		}
		if err := b.WaitRead(time.Now().Add(time.Second)); !errors.Is(err, batchio.ErrClosed) {
			t.Errorf("WaitRead after Close = %v", err)
		}
		before := a.Stats().NoRoute
		a.WriteBatch(patterned(1, 10, b.LocalAddr()))
		if a.Stats().NoRoute != before+1 {
			t.Error("datagram to a closed conn was not counted as unroutable")
		}
	})
}

// TestMemConcurrent has every conn's owner goroutine send numbered
// datagrams to all the others while reading its own; under -race it checks
// the locking, and it checks nothing is lost or reordered per sender.
func TestMemConcurrent(t *testing.T) {
	const conns, each, batch = 8, 200, 16
	nw := newMemNet(t, MemConfig{InboxSize: conns * each})
	cs := make([]*MemConn, conns)
	for i := range cs {
		cs[i] = memListen(t, nw, netip.AddrPortFrom(netip.AddrFrom4([4]byte{10, 0, 1, byte(i)}), 7).String())
	}
	deadline := time.Now().Add(5 * time.Second)
	var wg sync.WaitGroup
	errs := make(chan error, conns)
	for i, c := range cs {
		wg.Add(1)
		go func() {
			defer wg.Done()
			out := batchio.NewMessages(batch, 8)
			in := batchio.NewMessages(batch, 8)
			next := make(map[netip.AddrPort]uint32) // next sequence number per source
			sent, received := 0, 0
			for (sent < each || received < (conns-1)*each) && time.Now().Before(deadline) {
				if sent < each {
					k := 0
					for j := range cs {
						if j != i && k < batch {
							binary.BigEndian.PutUint32(out[k].Buf, uint32(sent))
							out[k].N, out[k].Addr = 4, cs[j].LocalAddr()
							k++
						}
					}
					if _, err := c.WriteBatch(out[:k]); err != nil {
						errs <- err
						return
					}
					sent++
				}
				n, err := c.ReadBatch(in)
				if err != nil {
					errs <- err
					return
				}
				for _, m := range in[:n] {
					seq := binary.BigEndian.Uint32(m.Buf)
					if seq != next[m.Addr] {
						errs <- errors.New("datagram out of order")
						return
					}
					next[m.Addr]++
				}
				received += n
				if n == 0 && sent == each {
					c.WaitRead(time.Now().Add(10 * time.Millisecond))
				}
			}
			if received != (conns-1)*each {
				errs <- errors.New("datagrams missing")
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
}

func TestMemAllocs(t *testing.T) {
	nw := newMemNet(t, MemConfig{})
	a := memListen(t, nw, "10.0.0.1:1")
	b := memListen(t, nw, "[2001:db8::2]:2")
	out := patterned(16, 200, b.LocalAddr())
	in := batchio.NewMessages(16, 200)
	allocs := testing.AllocsPerRun(100, func() {
		if n, err := a.WriteBatch(out); n != len(out) || err != nil {
			t.Fatal(n, err)
		}
		if err := b.WaitRead(time.Now().Add(time.Second)); err != nil {
			t.Fatal(err)
		}
		if n, err := b.ReadBatch(in); n != len(in) || err != nil {
			t.Fatal(n, err)
		}
		// An empty wait with a deadline uses the reused timer.
		if err := b.WaitRead(time.Now().Add(50 * time.Microsecond)); err != nil {
			t.Fatal(err)
		}
	})
	if allocs != 0 {
		t.Errorf("%v allocations per write+read of 16 datagrams, want 0", allocs)
	}
}
