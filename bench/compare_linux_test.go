//go:build linux

package bench

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/netcode-go/netcode/batchio"
)

var compareModes = []string{"xnet", "single"}

// comparePair opens a comparison conn in mode and a batchio socket to
// talk to it, on the loopback address of family.
func comparePair(t *testing.T, family, mode string, cfg batchio.Config) (c, peer batchio.Conn) {
	t.Helper()
	addr := netip.MustParseAddrPort(family)
	c, err := ListenComparison(addr, mode, cfg)
	if err != nil {
		t.Skipf("cannot listen on %v: %v", addr, err)
	}
	t.Cleanup(func() { c.Close() })
	if peer, err = batchio.Listen(addr, batchio.Config{DisableGSO: true}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { peer.Close() })
	return c, peer
}

// readN reads want datagrams from c, waiting up to a second in all.
func readN(t *testing.T, c batchio.Conn, msgs []batchio.Message, want int) []batchio.Message {
	t.Helper()
	var out []batchio.Message
	deadline := time.Now().Add(time.Second)
	for len(out) < want && time.Now().Before(deadline) {
		n, err := c.ReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:n] {
			out = append(out, batchio.Message{Buf: bytes.Clone(m.Buf[:m.N]), N: m.N, Addr: m.Addr})
		}
		if n == 0 {
			if err := c.WaitRead(deadline); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// lengths returns count messages to to, message i being 1+i bytes of i.
func lengths(count int, to netip.AddrPort) []batchio.Message {
	out := batchio.NewMessages(count, count)
	for i := range out {
		out[i].N, out[i].Addr = 1+i, to
		for j := range out[i].N {
			out[i].Buf[j] = byte(i)
		}
	}
	return out
}

func TestComparisonRoundTrip(t *testing.T) {
	for _, family := range []string{"127.0.0.1:0", "[::1]:0"} {
		for _, mode := range compareModes {
			t.Run(fmt.Sprintf("%s/%s", family, mode), func(t *testing.T) {
				c, peer := comparePair(t, family, mode, batchio.Config{BatchSize: 8})
				const count = 20 // more than one batch each way
				out := lengths(count, c.LocalAddr())
				if n, err := peer.WriteBatch(out); n != count || err != nil {
					t.Fatalf("WriteBatch = %d, %v", n, err)
				}
				got := readN(t, c, batchio.NewMessages(8, 100), count)
				if len(got) != count {
					t.Fatalf("received %d of %d", len(got), count)
				}
				for i, m := range got {
					if m.Addr != peer.LocalAddr() || !bytes.Equal(m.Buf, out[i].Buf[:out[i].N]) {
						t.Fatalf("datagram %d: %x from %v", i, m.Buf, m.Addr)
					}
				}
				// And back, with a datagram of the wrong family dropped.
				back := lengths(count, peer.LocalAddr())
				back[3].Addr = netip.MustParseAddrPort("[2001:db8::1]:9")
				if family != "127.0.0.1:0" {
					back[3].Addr = netip.MustParseAddrPort("192.0.2.1:9")
				}
				if n, err := c.WriteBatch(back); n != count-1 || err != nil {
					t.Fatalf("WriteBatch back = %d, %v; want %d", n, err, count-1)
				}
				if got := readN(t, peer, batchio.NewMessages(8, 100), count-1); len(got) != count-1 || got[3].N != 5 {
					t.Fatalf("received %d back", len(got))
				}
				s := c.(batchio.StatsReader).Stats()
				if s.RecvPackets != count || s.SendPackets != count-1 || s.SendDropped != 1 || s.RecvCalls == 0 || s.SendCalls == 0 {
					t.Fatalf("stats %+v", s)
				}
			})
		}
	}
}

func TestComparisonTruncatedDropped(t *testing.T) {
	for _, mode := range compareModes {
		c, peer := comparePair(t, "127.0.0.1:0", mode, batchio.Config{})
		out := []batchio.Message{
			{Buf: bytes.Repeat([]byte{1}, 50), N: 50, Addr: c.LocalAddr()},
			{Buf: bytes.Repeat([]byte{2}, 10), N: 10, Addr: c.LocalAddr()},
		}
		if n, err := peer.WriteBatch(out); n != 2 || err != nil {
			t.Fatal(n, err)
		}
		got := readN(t, c, batchio.NewMessages(4, 20), 1)
		if len(got) != 1 || !bytes.Equal(got[0].Buf, out[1].Buf) {
			t.Fatalf("%s: got %v, want only the 10-byte datagram", mode, got)
		}
		if n := c.(batchio.StatsReader).Stats().Truncated; n != 1 {
			t.Fatalf("%s: truncated count %d", mode, n)
		}
	}
}

func TestComparisonWaitWakeClose(t *testing.T) {
	for _, mode := range compareModes {
		c, _ := comparePair(t, "127.0.0.1:0", mode, batchio.Config{})
		start := time.Now()
		if err := c.WaitRead(start.Add(30 * time.Millisecond)); err != nil || time.Since(start) < 25*time.Millisecond {
			t.Fatalf("%s: WaitRead = %v after %v; want the deadline", mode, err, time.Since(start))
		}
		w := c.(batchio.Waker)
		for _, end := range []func(){w.Wake, func() { c.Close() }} {
			done := make(chan error, 1)
			go func() { done <- c.WaitRead(time.Now().Add(10 * time.Second)) }()
			time.Sleep(10 * time.Millisecond)
			end()
			select {
			case <-done:
			case <-time.After(2 * time.Second):
				t.Fatalf("%s: WaitRead not ended", mode)
			}
		}
		if _, err := c.ReadBatch(batchio.NewMessages(1, 8)); !errors.Is(err, batchio.ErrClosed) {
			t.Fatalf("%s: ReadBatch after Close = %v", mode, err)
		}
	}
}

// TestComparisonAllocs: the single mode's reads, writes and waits, and
// the xnet mode's waits, allocate nothing (x/net's batch calls allocate
// per message: that is part of what the comparison shows).
func TestComparisonAllocs(t *testing.T) {
	c, peer := comparePair(t, "127.0.0.1:0", "single", batchio.Config{})
	out := batchio.NewMessages(16, 64)
	for i := range out {
		out[i].N, out[i].Addr = 64, peer.LocalAddr()
	}
	in := batchio.NewMessages(16, 64)
	roundTrip := func() {
		if n, err := c.WriteBatch(out); n != len(out) || err != nil {
			t.Fatal(n, err)
		}
		for got := 0; got < len(out); {
			n, err := peer.ReadBatch(in)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 && peer.WaitRead(time.Time{}) != nil {
				t.Fatal("peer closed")
			}
			got += n
		}
		if n, err := peer.WriteBatch(in); n != len(in) || err != nil {
			t.Fatal(n, err)
		}
		for got := 0; got < len(in); {
			n, err := c.ReadBatch(in)
			if err != nil {
				t.Fatal(err)
			}
			if n == 0 && c.WaitRead(time.Time{}) != nil {
				t.Fatal("closed")
			}
			got += n
		}
	}
	roundTrip()
	if n := testing.AllocsPerRun(50, roundTrip); n != 0 {
		t.Errorf("single: %v allocations per round trip of 16 datagrams", n)
	}
	for _, mode := range compareModes {
		c, _ := comparePair(t, "127.0.0.1:0", mode, batchio.Config{})
		wait := func() {
			c.(batchio.Waker).Wake()
			if err := c.WaitRead(time.Now().Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			if err := c.WaitRead(time.Now().Add(time.Microsecond)); err != nil {
				t.Fatal(err)
			}
		}
		wait()
		if n := testing.AllocsPerRun(50, wait); n != 0 {
			t.Errorf("%s: %v allocations per wake and timed-out wait", mode, n)
		}
	}
}

// TestComparisonSingleErrors: the single mode's sendto retries EINTR,
// EAGAIN and ENOBUFS a bounded number of times, drops what still fails or
// fails hard and sends the rest; its recvfrom reads EINTR and EAGAIN as
// nothing waiting and returns other errors, losing nothing.
func TestComparisonSingleErrors(t *testing.T) {
	for _, tc := range []struct {
		errno   syscall.Errno
		fails   int // sendto calls that fail for datagram 2
		retries uint64
		dropped bool
	}{
		{unix.EAGAIN, compareRetries, compareRetries, false},
		{unix.ENOBUFS, compareRetries + 1, compareRetries, true},
		{unix.EINTR, 100, compareRetries, true},
		{unix.EPERM, 1, 0, true},
	} {
		c, peer := comparePair(t, "127.0.0.1:0", "single", batchio.Config{})
		sc := c.(*singleConn)
		fails, real := 0, sc.sendFn
		sc.sendFn = func(fd uintptr) {
			if sc.buf[0] == 2 && fails < tc.fails {
				fails++
				sc.errno = tc.errno
				return
			}
			real(fd)
		}
		want := 5
		if tc.dropped {
			want--
		}
		if n, err := c.WriteBatch(lengths(5, peer.LocalAddr())); n != want || err != nil {
			t.Fatalf("%v x%d: WriteBatch = %d, %v; want %d", tc.errno, tc.fails, n, err, want)
		}
		if got := readN(t, peer, batchio.NewMessages(8, 8), want); len(got) != want {
			t.Fatalf("%v x%d: %d arrived, want %d", tc.errno, tc.fails, len(got), want)
		}
		if s := sc.Stats(); s.SendRetries != tc.retries || (s.SendDropped == 1) != tc.dropped {
			t.Fatalf("%v x%d: stats %+v", tc.errno, tc.fails, s)
		}
	}

	c, peer := comparePair(t, "127.0.0.1:0", "single", batchio.Config{})
	sc := c.(*singleConn)
	var inject syscall.Errno
	real := sc.recvFn
	sc.recvFn = func(fd uintptr) {
		if sc.errno = inject; inject == 0 {
			real(fd)
		}
	}
	if n, err := peer.WriteBatch(lengths(3, c.LocalAddr())); n != 3 || err != nil {
		t.Fatal(n, err)
	}
	time.Sleep(10 * time.Millisecond) // loopback delivery
	in := batchio.NewMessages(4, 8)
	for _, errno := range []syscall.Errno{unix.EINTR, unix.EAGAIN, unix.ENOMEM} {
		inject = errno
		n, err := c.ReadBatch(in)
		if n != 0 || (errno == unix.ENOMEM) != errors.Is(err, errno) {
			t.Fatalf("ReadBatch with %v = %d, %v", errno, n, err)
		}
	}
	inject = 0
	if got := readN(t, c, in, 3); len(got) != 3 {
		t.Fatalf("after the errors read %d of 3", len(got))
	}
}

func TestComparisonArguments(t *testing.T) {
	lo := netip.MustParseAddrPort("127.0.0.1:0")
	for _, tc := range []struct {
		mode string
		cfg  batchio.Config
	}{
		{"mmsg", batchio.Config{}},
		{"xnet", batchio.Config{PacketInfo: true}},
		{"single", batchio.Config{BlockingWait: true}},
		{"single", batchio.Config{BatchSize: 2000}},
		{"xnet", batchio.Config{TOS: 300}},
	} {
		if c, err := ListenComparison(lo, tc.mode, tc.cfg); err == nil {
			c.Close()
			t.Errorf("%s %+v accepted", tc.mode, tc.cfg)
		}
	}
	if _, err := ListenComparison(netip.AddrPort{}, "xnet", batchio.Config{}); err == nil {
		t.Error("zero address accepted")
	}
	c, err := ListenComparison(lo, "single", batchio.Config{RecvBuffer: 1 << 20, ReusePort: true, TOS: 0xb8})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if s := c.(batchio.StatsReader).Stats(); s.RecvBufferWant != 1<<20 || s.RecvBufferGot <= 0 || s.SendBufferWant != 4<<20 {
		t.Fatalf("buffers %+v", s)
	}
	// ReusePort: a second socket can bind the same address.
	d, err := ListenComparison(c.LocalAddr(), "xnet", batchio.Config{ReusePort: true})
	if err != nil {
		t.Fatalf("second socket on %v: %v", c.LocalAddr(), err)
	}
	d.Close()
}
