//go:build linux

package batchio

import (
	"bytes"
	"errors"
	"fmt"
	"net/netip"
	"testing"
	"time"
)

// waitMode is how a test socket waits: on the netpoller (false, "mmsg")
// or in poll(2) (true, Config.BlockingWait, "block").
type waitMode bool

var waitModes = []waitMode{false, true}

func (m waitMode) String() string {
	if m {
		return "block"
	}
	return "mmsg"
}

func listenPair(t *testing.T, loopback string, cfg Config) (a, b *mmsgConn) {
	t.Helper()
	addr := netip.MustParseAddrPort(loopback)
	var err error
	if a, err = listenMmsg(addr, cfg); err != nil {
		t.Skipf("cannot listen on %v: %v", addr, err)
	}
	if b, err = listenMmsg(addr, cfg); err != nil {
		a.Close()
		t.Fatal(err)
	}
	t.Cleanup(func() { a.Close(); b.Close() })
	return a, b
}

func TestMmsgRoundTrip(t *testing.T) {
	for _, family := range []string{"127.0.0.1:0", "[::1]:0"} {
		for _, mode := range waitModes {
			t.Run(fmt.Sprintf("%s/%v", family, mode), func(t *testing.T) {
				a, b := listenPair(t, family, Config{BlockingWait: bool(mode), BatchSize: 8, DisableGSO: true})
				const count = 20 // more than one batch
				out := makeMsgs(count, 100)
				for i := range out {
					out[i].N = 1 + i
					out[i].Addr = b.LocalAddr()
					for j := range out[i].N {
						out[i].Buf[j] = byte(i + j)
					}
				}
				if n, err := a.WriteBatch(out); err != nil || n != count {
					t.Fatalf("WriteBatch = %d, %v", n, err)
				}
				got := readAll(t, b, makeMsgs(8, 100), count)
				if len(got) != count {
					t.Fatalf("received %d of %d", len(got), count)
				}
				for i, m := range got {
					if m.Addr != a.LocalAddr() {
						t.Errorf("source %v, want %v", m.Addr, a.LocalAddr())
					}
					if !bytes.Equal(m.Buf, out[i].Buf[:out[i].N]) {
						t.Errorf("datagram %d: %x, want %x", i, m.Buf, out[i].Buf[:out[i].N])
					}
				}
			})
		}
	}
}

func TestMmsgTruncatedDropped(t *testing.T) {
	for _, mode := range waitModes {
		a, b := listenPair(t, "127.0.0.1:0", Config{BlockingWait: bool(mode), DisableGSO: true})
		out := []Message{
			{Buf: bytes.Repeat([]byte{1}, 50), N: 50, Addr: b.LocalAddr()},
			{Buf: bytes.Repeat([]byte{2}, 10), N: 10, Addr: b.LocalAddr()},
		}
		if n, err := a.WriteBatch(out); n != 2 || err != nil {
			t.Fatal(n, err)
		}
		got := readAll(t, b, makeMsgs(4, 20), 1)
		if len(got) != 1 || !bytes.Equal(got[0].Buf, out[1].Buf) {
			t.Fatalf("%v: got %v, want only the 10-byte datagram", mode, got)
		}
		if b.Stats().Truncated != 1 {
			t.Fatalf("%v: truncated count %d", mode, b.Stats().Truncated)
		}
	}
}

func TestMmsgWrongFamilyDropped(t *testing.T) {
	a, b := listenPair(t, "127.0.0.1:0", Config{DisableGSO: true})
	out := []Message{
		{Buf: []byte("x"), N: 1, Addr: netip.MustParseAddrPort("[2001:db8::1]:9")},
		{Buf: []byte("y"), N: 1, Addr: b.LocalAddr()},
	}
	if n, err := a.WriteBatch(out); n != 1 || err != nil {
		t.Fatalf("WriteBatch = %d, %v; want 1 sent", n, err)
	}
	if a.Stats().SendDropped != 1 {
		t.Fatalf("dropped %d", a.Stats().SendDropped)
	}
}

func TestMmsgWaitReadDeadlineAndClose(t *testing.T) {
	for _, mode := range waitModes {
		a, _ := listenPair(t, "127.0.0.1:0", Config{BlockingWait: bool(mode), DisableGSO: true})
		start := time.Now()
		if err := a.WaitRead(start.Add(30 * time.Millisecond)); err != nil {
			t.Fatalf("%v: WaitRead = %v", mode, err)
		}
		if waited := time.Since(start); waited < 25*time.Millisecond {
			t.Fatalf("%v: returned after %v, before the deadline", mode, waited)
		}
		done := make(chan error, 1)
		go func() { done <- a.WaitRead(time.Time{}) }()
		time.Sleep(20 * time.Millisecond)
		a.Close()
		select {
		case err := <-done:
			if !errors.Is(err, ErrClosed) {
				t.Fatalf("%v: WaitRead after Close = %v", mode, err)
			}
		case <-time.After(2 * time.Second):
			t.Fatalf("%v: Close did not wake WaitRead", mode)
		}
		if _, err := a.ReadBatch(makeMsgs(1, 10)); !errors.Is(err, ErrClosed) {
			t.Fatalf("%v: ReadBatch after Close = %v", mode, err)
		}
	}
}

func TestMmsgAllocs(t *testing.T) {
	for _, mode := range waitModes {
		a, b := listenPair(t, "127.0.0.1:0", Config{BlockingWait: bool(mode), DisableGSO: true})
		out := makeMsgs(16, 64)
		for i := range out {
			out[i].N, out[i].Addr = 64, b.LocalAddr()
		}
		in := makeMsgs(16, 64)
		allocs := testing.AllocsPerRun(50, func() {
			if n, err := a.WriteBatch(out); n != len(out) || err != nil {
				t.Fatal(n, err)
			}
			for got := 0; got < len(out); {
				n, err := b.ReadBatch(in)
				if err != nil {
					t.Fatal(err)
				}
				if n == 0 {
					if err := b.WaitRead(time.Time{}); err != nil {
						t.Fatal(err)
					}
				}
				got += n
			}
		})
		if allocs != 0 {
			t.Errorf("%v: %v allocations per write+read of 16 datagrams, want 0", mode, allocs)
		}
	}
}

func TestMmsgConfigErrors(t *testing.T) {
	for _, cfg := range []Config{{BatchSize: -1}, {BatchSize: 5000}, {TOS: 300}, {TOS: -1}} {
		if _, err := listenMmsg(netip.MustParseAddrPort("127.0.0.1:0"), cfg); err == nil {
			t.Errorf("config %+v accepted", cfg)
		}
	}
	if _, err := listenMmsg(netip.AddrPort{}, Config{DisableGSO: true}); err == nil {
		t.Error("zero address accepted")
	}
}

func TestMmsgReusePortAndBuffers(t *testing.T) {
	cfg := Config{ReusePort: true, RecvBuffer: 1 << 20, SendBuffer: 1 << 20, TOS: 0xb8, DisableGSO: true}
	a, err := listenMmsg(netip.MustParseAddrPort("127.0.0.1:0"), cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer a.Close()
	b, err := listenMmsg(a.LocalAddr(), cfg)
	if err != nil {
		t.Fatalf("second socket on %v with SO_REUSEPORT: %v", a.LocalAddr(), err)
	}
	defer b.Close()
	s := a.Stats()
	if s.RecvBufferWant != 1<<20 || s.SendBufferWant != 1<<20 || s.RecvBufferGot <= 0 || s.SendBufferGot <= 0 {
		t.Fatalf("buffer sizes asked %d/%d, got %d/%d", s.RecvBufferWant, s.SendBufferWant, s.RecvBufferGot, s.SendBufferGot)
	}
	if s.RecvBufferGot < s.RecvBufferWant || s.SendBufferGot < s.SendBufferWant {
		t.Logf("kernel granted less than asked (recv %d, send %d)", s.RecvBufferGot, s.SendBufferGot)
	}
	// Negative asks for the system default, reported as 0 asked.
	c, err := listenMmsg(netip.MustParseAddrPort("127.0.0.1:0"), Config{RecvBuffer: -1, SendBuffer: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if s := c.Stats(); s.RecvBufferWant != 0 || s.SendBufferWant != 0 || s.RecvBufferGot <= 0 {
		t.Fatalf("system default buffers: %+v", s)
	}
}

func TestMmsgWake(t *testing.T) {
	for _, mode := range waitModes {
		a, _ := listenPair(t, "127.0.0.1:0", Config{BlockingWait: bool(mode), DisableGSO: true})
		for round := range 3 {
			done := make(chan error, 1)
			go func() { done <- a.WaitRead(time.Now().Add(5 * time.Second)) }()
			time.Sleep(5 * time.Millisecond)
			start := time.Now()
			a.Wake()
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("%v round %d: %v", mode, round, err)
				}
				if d := time.Since(start); d > time.Second {
					t.Fatalf("%v round %d: woke after %v", mode, round, d)
				}
			case <-time.After(3 * time.Second):
				t.Fatalf("%v round %d: Wake did not wake WaitRead", mode, round)
			}
			// A wake before the wait makes the wait return at once, and
			// reads still work after a wake.
			a.Wake()
			if err := a.WaitRead(time.Now().Add(5 * time.Second)); err != nil {
				t.Fatal(err)
			}
			if _, err := a.ReadBatch(makeMsgs(4, 100)); err != nil {
				t.Fatalf("%v: ReadBatch after Wake: %v", mode, err)
			}
		}
	}
}

// TestMmsgWaitAllocs: parking and waking (a deadline or Wake) allocate
// nothing in any mode; a shard parks after every burst.
func TestMmsgWaitAllocs(t *testing.T) {
	for _, mode := range waitModes {
		a, _ := listenPair(t, "127.0.0.1:0", Config{BlockingWait: bool(mode), DisableGSO: true})
		wait := func() {
			a.Wake()
			if err := a.WaitRead(time.Now().Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			if err := a.WaitRead(time.Now().Add(time.Microsecond)); err != nil {
				t.Fatal(err)
			}
		}
		wait()
		if n := testing.AllocsPerRun(50, wait); n != 0 {
			t.Errorf("%v: %v allocations per wake and timed-out wait", mode, n)
		}
	}
}
