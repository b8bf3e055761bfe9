package batchio

import (
	"bytes"
	"errors"
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// udpPair opens two portable sockets on a loopback address, skipping the
// test if the family is unavailable (no IPv6 loopback, for example).
func udpPair(t testing.TB, loopback string, lim udpLimits) (a, b *udpConn) {
	t.Helper()
	addr := netip.MustParseAddrPort(loopback)
	var err error
	if a, err = listenUDP(addr, Config{}, lim); err != nil {
		t.Skipf("cannot listen on %v: %v", addr, err)
	}
	if b, err = listenUDP(addr, Config{}, lim); err != nil {
		a.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

// waitFor polls cond every millisecond for up to two seconds.
func waitFor(cond func() bool) bool {
	for range 2000 {
		if cond() {
			return true
		}
		time.Sleep(time.Millisecond)
	}
	return cond()
}

func TestUDPRoundTrip(t *testing.T) {
	for _, loopback := range []string{"127.0.0.1:0", "[::1]:0"} {
		t.Run(loopback, func(t *testing.T) {
			a, b := udpPair(t, loopback, udpLimits{})
			if b.LocalAddr().Port() == 0 || b.LocalAddr().Addr() != netip.MustParseAddrPort(loopback).Addr() {
				t.Fatalf("bound %v", b.LocalAddr())
			}
			out := patterned(20, 1000, b.LocalAddr())
			if n, err := a.WriteBatch(out); n != len(out) || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			checkSame(t, readAll(t, b, makeMsgs(8, 1500), len(out)), out, a.LocalAddr())

			back := patterned(5, 100, a.LocalAddr())
			if n, err := b.WriteBatch(back); n != len(back) || err != nil {
				t.Fatalf("WriteBatch = %d, %v", n, err)
			}
			checkSame(t, readAll(t, a, makeMsgs(8, 1500), len(back)), back, b.LocalAddr())
			if s := b.Stats(); s.RecvPackets != 20 || s.SendPackets != 5 {
				t.Errorf("stats %+v", s)
			}
		})
	}
}

func TestUDPMappedDestination(t *testing.T) {
	a, b := udpPair(t, "127.0.0.1:0", udpLimits{})
	to := netip.AddrPortFrom(netip.AddrFrom16(b.LocalAddr().Addr().As16()), b.LocalAddr().Port())
	if !to.Addr().Is4In6() {
		t.Fatalf("%v is not IPv4-mapped", to)
	}
	out := patterned(1, 10, to)
	if n, err := a.WriteBatch(out); n != 1 || err != nil {
		t.Fatalf("WriteBatch to %v = %d, %v", to, n, err)
	}
	checkSame(t, readAll(t, b, makeMsgs(1, 100), 1), out, a.LocalAddr())
}

func TestUDPRefusedWrites(t *testing.T) {
	a, b := udpPair(t, "127.0.0.1:0", udpLimits{})
	tests := []struct {
		name string
		msg  Message
	}{
		{"IPv6 destination from an IPv4 socket", Message{Buf: []byte("x"), N: 1, Addr: netip.MustParseAddrPort("[::1]:9")}},
		{"port 0", Message{Buf: []byte("x"), N: 1, Addr: netip.AddrPortFrom(b.LocalAddr().Addr(), 0)}},
		{"no address", Message{Buf: []byte("x"), N: 1}},
		{"empty", Message{Buf: []byte("x"), N: 0, Addr: b.LocalAddr()}},
		{"N beyond Buf", Message{Buf: []byte("x"), N: 2, Addr: b.LocalAddr()}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := a.Stats().SendDropped
			good := Message{Buf: []byte("ok"), N: 2, Addr: b.LocalAddr()}
			n, err := a.WriteBatch([]Message{tt.msg, good})
			if n != 1 || err != nil {
				t.Fatalf("WriteBatch = %d, %v; want only the good one sent", n, err)
			}
			if d := a.Stats().SendDropped - before; d != 1 {
				t.Fatalf("SendDropped +%d, want +1", d)
			}
			checkSame(t, readAll(t, b, makeMsgs(2, 10), 1), []Message{good}, a.LocalAddr())
		})
	}
}

func TestUDPTruncated(t *testing.T) {
	a, b := udpPair(t, "127.0.0.1:0", udpLimits{maxDatagram: 100})
	out := []Message{
		{Buf: bytes.Repeat([]byte{1}, 101), N: 101, Addr: b.LocalAddr()}, // longer than MaxDatagram
		{Buf: bytes.Repeat([]byte{2}, 100), N: 100, Addr: b.LocalAddr()}, // exactly MaxDatagram
		{Buf: bytes.Repeat([]byte{3}, 50), N: 50, Addr: b.LocalAddr()},   // longer than the reader's buffer
		{Buf: bytes.Repeat([]byte{4}, 10), N: 10, Addr: b.LocalAddr()},
	}
	if n, err := a.WriteBatch(out); n != 4 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	if !waitFor(func() bool { return b.Stats().Truncated == 1 }) {
		t.Fatalf("the reader did not drop the over-long datagram: %+v", b.Stats())
	}
	got := readAll(t, b, makeMsgs(1, 100), 2) // one at a time, to leave the last
	checkSame(t, got, []Message{out[1], out[2]}, a.LocalAddr())
	got = readAll(t, b, makeMsgs(4, 20), 1)
	checkSame(t, got, []Message{out[3]}, a.LocalAddr())
	if n := b.Stats().Truncated; n != 1 {
		t.Fatalf("Truncated = %d, want 1 (the 101-byte datagram; the 50-byte one was read whole)", n)
	}

	// Now one too long for the reader's buffer, followed by one that fits.
	a.WriteBatch([]Message{out[2], out[3]})
	got = readAll(t, b, makeMsgs(4, 20), 1)
	checkSame(t, got, []Message{out[3]}, a.LocalAddr())
	if n := b.Stats().Truncated; n != 2 {
		t.Fatalf("Truncated = %d, want 2", n)
	}
}

func TestUDPInboxFull(t *testing.T) {
	a, b := udpPair(t, "127.0.0.1:0", udpLimits{inbox: 4})
	out := patterned(20, 64, b.LocalAddr())
	if n, err := a.WriteBatch(out); n != 20 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	if !waitFor(func() bool { return b.stats.inboxFull.Load() == 16 }) {
		t.Fatalf("InboxFull = %d, want 16", b.stats.inboxFull.Load())
	}
	in := makeMsgs(20, 64)
	n, err := b.ReadBatch(in)
	if err != nil {
		t.Fatal(err)
	}
	checkSame(t, in[:n], out[:4], a.LocalAddr())
	// With room again, datagrams are kept.
	a.WriteBatch(out[4:8])
	checkSame(t, readAll(t, b, makeMsgs(8, 64), 4), out[4:8], a.LocalAddr())
}

func TestUDPWaitReadAndClose(t *testing.T) {
	before := runtime.NumGoroutine()
	a, err := listenUDP(netip.MustParseAddrPort("127.0.0.1:0"), Config{}, udpLimits{})
	if err != nil {
		t.Fatal(err)
	}
	b, err := listenUDP(netip.MustParseAddrPort("127.0.0.1:0"), Config{}, udpLimits{})
	if err != nil {
		a.Close()
		t.Fatal(err)
	}

	start := time.Now()
	if err := a.WaitRead(start.Add(30 * time.Millisecond)); err != nil {
		t.Fatal(err)
	}
	if waited := time.Since(start); waited < 25*time.Millisecond || waited > time.Second {
		t.Fatalf("WaitRead returned after %v for a 30ms deadline", waited)
	}

	done := waitErr(a, time.Time{})
	time.Sleep(10 * time.Millisecond)
	b.WriteBatch(patterned(1, 10, a.LocalAddr()))
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("an arrival did not wake WaitRead")
	}
	if n, err := a.ReadBatch(makeMsgs(4, 100)); n != 1 || err != nil {
		t.Fatalf("ReadBatch = %d, %v after the wake-up", n, err)
	}

	done = waitErr(a, time.Time{})
	time.Sleep(10 * time.Millisecond)
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-done:
		if !errors.Is(err, ErrClosed) {
			t.Fatalf("WaitRead = %v, want ErrClosed", err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Close did not wake WaitRead")
	}
	if _, err := a.ReadBatch(makeMsgs(1, 10)); !errors.Is(err, ErrClosed) {
		t.Errorf("ReadBatch after Close = %v", err)
	}
	if _, err := a.WriteBatch(patterned(1, 10, b.LocalAddr())); !errors.Is(err, ErrClosed) {
		t.Errorf("WriteBatch after Close = %v", err)
	}
	if err := a.WaitRead(time.Now().Add(time.Second)); !errors.Is(err, ErrClosed) {
		t.Errorf("WaitRead after Close = %v", err)
	}
	if err := a.Close(); err != nil {
		t.Errorf("second Close = %v", err)
	}
	b.Close()

	// Close waited for the reader goroutines; allow the runtime a moment to
	// retire them and the test's own.
	if !waitFor(func() bool { return runtime.NumGoroutine() <= before }) {
		t.Fatalf("%d goroutines after Close, %d before", runtime.NumGoroutine(), before)
	}
}

func TestUDPConfigErrors(t *testing.T) {
	lo := netip.MustParseAddrPort("127.0.0.1:0")
	tests := []struct {
		name string
		addr netip.AddrPort
		lim  udpLimits
	}{
		{"negative inbox", lo, udpLimits{inbox: -1}},
		{"huge inbox", lo, udpLimits{inbox: maxInboxSize + 1}},
		{"negative max datagram", lo, udpLimits{maxDatagram: -1}},
		{"max datagram beyond UDP", lo, udpLimits{maxDatagram: 70000}},
		{"zero address", netip.AddrPort{}, udpLimits{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if c, err := listenUDP(tt.addr, Config{}, tt.lim); err == nil {
				c.Close()
				t.Fatalf("accepted %+v on %v", tt.lim, tt.addr)
			}
		})
	}
}

func TestUDPAllocs(t *testing.T) {
	a, b := udpPair(t, "127.0.0.1:0", udpLimits{})
	out := patterned(16, 64, b.LocalAddr())
	in := makeMsgs(16, 64)
	received := 0
	drain := func() {
		for received < len(out) {
			n, err := b.ReadBatch(in)
			if err != nil {
				t.Fatal(err)
			}
			received += n
			if n == 0 {
				if err := b.WaitRead(time.Now().Add(time.Second)); err != nil {
					t.Fatal(err)
				}
			}
		}
		received -= len(out)
	}
	// The reader goroutine's allocations count too: AllocsPerRun counts
	// the whole process.
	write := testing.AllocsPerRun(50, func() {
		if n, err := a.WriteBatch(out); n != len(out) || err != nil {
			t.Fatal(n, err)
		}
		drain()
	})
	if write != 0 {
		t.Errorf("%v allocations per write+read of 16 datagrams, want 0", write)
	}
	idle := testing.AllocsPerRun(20, func() {
		if n, err := b.ReadBatch(in); n != 0 || err != nil {
			t.Fatal(n, err)
		}
		if err := b.WaitRead(time.Now().Add(50 * time.Microsecond)); err != nil {
			t.Fatal(err)
		}
	})
	if idle != 0 {
		t.Errorf("%v allocations per empty ReadBatch and timed-out WaitRead, want 0", idle)
	}
}

// TestUDPWake: Wake ends a WaitRead in progress or the next one, once;
// Stats counts the socket's calls and datagrams.
func TestUDPWake(t *testing.T) {
	a, b := udpPair(t, "127.0.0.1:0", udpLimits{})
	done := waitErr(a, time.Now().Add(10*time.Second))
	time.Sleep(10 * time.Millisecond)
	a.Wake()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(2 * time.Second):
		t.Fatal("Wake did not end WaitRead")
	}
	a.Wake()
	if err := a.WaitRead(time.Now().Add(10 * time.Second)); err != nil {
		t.Fatal(err)
	}
	// Both wakes were consumed: the next wait lasts until its deadline.
	start := time.Now()
	if err := a.WaitRead(start.Add(20 * time.Millisecond)); err != nil || time.Since(start) < 15*time.Millisecond {
		t.Fatalf("WaitRead = %v after %v; want the deadline", err, time.Since(start))
	}
	out := patterned(3, 10, a.LocalAddr())
	if n, err := b.WriteBatch(out); n != 3 || err != nil {
		t.Fatal(n, err)
	}
	readAll(t, a, makeMsgs(4, 16), 3)
	sa, sb := a.Stats(), b.Stats()
	if sb.SendCalls != 3 || sb.SendPackets != 3 || sa.RecvPackets != 3 || sa.RecvCalls < 3 || sa.Waits == 0 ||
		sa.RecvBufferWant != defaultSockBuf || sa.RecvBufferGot != 0 {
		t.Fatalf("stats %+v / %+v", sa, sb)
	}
}
