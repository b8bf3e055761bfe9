package batchiotest

import (
	"bytes"
	"errors"
	"net/netip"
	"slices"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

var (
	fakeLocal = netip.MustParseAddrPort("10.0.0.1:4000")
	peerA     = netip.MustParseAddrPort("192.0.2.1:1000")
	peerB     = netip.MustParseAddrPort("[2001:db8::2]:2000")
)

// toMsgs returns one message per payload, addressed to dst.
func toMsgs(dst netip.AddrPort, payloads ...string) []batchio.Message {
	msgs := make([]batchio.Message, len(payloads))
	for i, p := range payloads {
		msgs[i] = batchio.Message{Buf: []byte(p), N: len(p), Addr: dst}
	}
	return msgs
}

// strs returns the payloads of the first n messages.
func strs(msgs []batchio.Message, n int) []string {
	var out []string
	for _, m := range msgs[:n] {
		out = append(out, string(m.Buf[:m.N]))
	}
	return out
}

func TestConnPushRead(t *testing.T) {
	c := NewConn(fakeLocal)
	if c.LocalAddr() != fakeLocal {
		t.Fatalf("LocalAddr = %v", c.LocalAddr())
	}
	in := batchio.NewMessages(2, 5)
	if n, err := c.ReadBatch(in); n != 0 || err != nil {
		t.Fatalf("empty ReadBatch = %d, %v", n, err)
	}
	c.Push(peerA, []byte("one"))
	c.Push(peerB, []byte("too long")) // longer than the 5-byte buffers
	c.Push(peerA, []byte("two"))
	c.Push(peerB, []byte("three"))
	if q := c.Stats().Queued; q != 4 {
		t.Fatalf("Queued = %d, want 4", q)
	}
	n, err := c.ReadBatch(in)
	if err != nil || !slices.Equal(strs(in, n), []string{"one", "two"}) || in[0].Addr != peerA || in[1].Addr != peerA {
		t.Fatalf("first read: %q from %v, %v (%v)", strs(in, n), in[0].Addr, in[1].Addr, err)
	}
	n, _ = c.ReadBatch(in)
	if !slices.Equal(strs(in, n), []string{"three"}) || in[0].Addr != peerB {
		t.Fatalf("second read: %q from %v", strs(in, n), in[0].Addr)
	}
	s := c.Stats()
	if s.Read != 3 || s.Truncated != 1 || s.ReadCalls != 3 || s.Queued != 0 {
		t.Fatalf("stats %+v", s)
	}
	// The ring grows past its first size and keeps order across the wrap.
	for round := range 3 {
		for i := range 40 {
			c.Push(peerA, []byte{byte(round), byte(i)})
		}
		big := batchio.NewMessages(64, 4)
		got := 0
		for k, _ := c.ReadBatch(big[:7]); k > 0; k, _ = c.ReadBatch(big[:7]) {
			for _, m := range big[:k] {
				if m.Buf[0] != byte(round) || int(m.Buf[1]) != got {
					t.Fatalf("round %d: datagram %d is %v", round, got, m.Buf[:m.N])
				}
				got++
			}
		}
		if got != 40 {
			t.Fatalf("round %d: read %d of 40", round, got)
		}
	}
}

func TestConnInboxBound(t *testing.T) {
	c := NewConn(fakeLocal)
	for range maxConnQueue + 3 {
		c.Push(peerA, []byte{1})
	}
	if s := c.Stats(); s.Queued != maxConnQueue || s.InboxFull != 3 {
		t.Fatalf("stats %+v; want %d queued, 3 dropped", s, maxConnQueue)
	}
}

func TestConnWrites(t *testing.T) {
	c := NewConn(fakeLocal)
	out := toMsgs(peerA, "a1", "a2")
	out = append(out, toMsgs(peerB, "b1")...)
	out = append(out, toMsgs(peerA, "a3")...)
	if n, err := c.WriteBatch(out); n != 4 || err != nil {
		t.Fatalf("WriteBatch = %d, %v", n, err)
	}
	out[0].Buf[0] = 'X' // the conn kept a copy
	if got := c.Take(peerA); len(got) != 3 || string(got[0]) != "a1" || string(got[2]) != "a3" {
		t.Fatalf("Take(peerA) = %q", got)
	}
	if got := c.Take(peerA); got != nil {
		t.Fatalf("second Take(peerA) = %q, want nothing", got)
	}
	sent := c.Sent()
	if len(sent) != 1 || string(sent[0].Data) != "b1" || sent[0].Addr != peerB {
		t.Fatalf("Sent = %+v, want only b1 to %v", sent, peerB)
	}
	if c.Sent() != nil {
		t.Fatal("Sent did not forget")
	}
	if s := c.Stats(); s.Written != 4 || s.WriteCalls != 1 || s.Dropped != 0 {
		t.Fatalf("stats %+v", s)
	}
}

func TestConnWriteKnobs(t *testing.T) {
	t.Run("discard", func(t *testing.T) {
		c := NewConn(fakeLocal)
		c.Discard = true
		if n, err := c.WriteBatch(toMsgs(peerA, "x", "y")); n != 2 || err != nil {
			t.Fatalf("WriteBatch = %d, %v", n, err)
		}
		if c.Sent() != nil || c.Stats().Written != 2 {
			t.Fatalf("kept %v, stats %+v; want nothing kept, 2 written", c.Sent(), c.Stats())
		}
	})
	t.Run("refuse", func(t *testing.T) {
		c := NewConn(fakeLocal)
		c.Refuse = true
		if n, err := c.WriteBatch(toMsgs(peerA, "x", "y")); n != 0 || err != nil {
			t.Fatalf("WriteBatch = %d, %v; want 0, nil", n, err)
		}
		if c.Sent() != nil || c.Stats().Dropped != 2 {
			t.Fatalf("stats %+v", c.Stats())
		}
	})
	t.Run("error", func(t *testing.T) {
		c := NewConn(fakeLocal)
		c.WriteErr = ErrInjected
		if n, err := c.WriteBatch(toMsgs(peerA, "x")); n != 0 || !errors.Is(err, ErrInjected) {
			t.Fatalf("WriteBatch = %d, %v", n, err)
		}
		c.WriteErr = nil
		if n, err := c.WriteBatch(toMsgs(peerA, "y")); n != 1 || err != nil {
			t.Fatalf("after clearing WriteErr: %d, %v", n, err)
		}
	})
	t.Run("drop", func(t *testing.T) {
		// The second datagram of every batch is dropped, the rest go.
		c := NewConn(fakeLocal)
		c.DropWrite = func(i int) bool { return i == 1 }
		for range 2 {
			if n, err := c.WriteBatch(toMsgs(peerA, "p", "q", "r")); n != 2 || err != nil {
				t.Fatalf("WriteBatch = %d, %v; want 2", n, err)
			}
		}
		var got []string
		for _, d := range c.Take(peerA) {
			got = append(got, string(d))
		}
		if !slices.Equal(got, []string{"p", "r", "p", "r"}) {
			t.Fatalf("sent %q", got)
		}
		if s := c.Stats(); s.Written != 4 || s.Dropped != 2 {
			t.Fatalf("stats %+v; want 4 written, 2 dropped", s)
		}
	})
}

func TestConnReadKnobs(t *testing.T) {
	c := NewConn(fakeLocal)
	c.Push(peerA, []byte("kept"))
	c.ReadErr = ErrInjected
	in := batchio.NewMessages(4, 64)
	if n, err := c.ReadBatch(in); n != 0 || !errors.Is(err, ErrInjected) {
		t.Fatalf("ReadBatch = %d, %v; want the injected error", n, err)
	}
	c.ReadErr = nil
	// Pushed datagrams come first, then generated ones until the
	// generator says stop.
	left := 2
	c.Generate = func(buf []byte) (int, netip.AddrPort, bool) {
		if left == 0 {
			return 0, netip.AddrPort{}, false
		}
		left--
		return copy(buf, "gen"), peerB, true
	}
	n, err := c.ReadBatch(in)
	if err != nil || !slices.Equal(strs(in, n), []string{"kept", "gen", "gen"}) || in[1].Addr != peerB {
		t.Fatalf("ReadBatch = %q, %v", strs(in, n), err)
	}
	// A flood that never drains fills every batch.
	c.Generate = func(buf []byte) (int, netip.AddrPort, bool) { return copy(buf, "junk"), peerA, true }
	for range 3 {
		if n, _ := c.ReadBatch(in); n != len(in) {
			t.Fatalf("flood read %d, want a full batch of %d", n, len(in))
		}
	}
	if s := c.Stats(); s.Read != 3+3*4 {
		t.Fatalf("Read = %d", s.Read)
	}
}

func TestConnWait(t *testing.T) {
	t.Run("default returns at once", func(t *testing.T) {
		c := NewConn(fakeLocal)
		if err := c.WaitRead(time.Time{}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("hook", func(t *testing.T) {
		c := NewConn(fakeLocal)
		var deadlines []time.Time
		c.Wait = func(d time.Time) error {
			deadlines = append(deadlines, d)
			c.Push(peerA, []byte("woke"))
			return nil
		}
		d := time.Unix(1000, 0)
		if err := c.WaitRead(d); err != nil || len(deadlines) != 1 || !deadlines[0].Equal(d) {
			t.Fatalf("WaitRead = %v, hook saw %v", err, deadlines)
		}
		if s := c.Stats(); s.Queued != 1 || s.WaitCalls != 1 {
			t.Fatalf("stats %+v", s)
		}
	})
	t.Run("block", func(t *testing.T) {
		c := NewConn(fakeLocal)
		c.Block = true
		start := time.Now()
		if err := c.WaitRead(start.Add(20 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		if time.Since(start) < 15*time.Millisecond {
			t.Fatal("a blocking WaitRead returned before its deadline with nothing queued")
		}
		for _, wakeUp := range []func(){
			func() { c.Push(peerA, []byte("x")) },
			c.Wake,
			func() { c.Close() },
		} {
			done := waitErr(c, time.Time{})
			select {
			case err := <-done:
				t.Fatalf("WaitRead returned %v before being woken", err)
			case <-time.After(10 * time.Millisecond):
			}
			wakeUp()
			select {
			case <-done:
			case <-time.After(2 * time.Second):
				t.Fatal("WaitRead not woken")
			}
			c.ReadBatch(batchio.NewMessages(1, 8))
		}
		if err := c.WaitRead(time.Time{}); !errors.Is(err, batchio.ErrClosed) {
			t.Fatalf("WaitRead after Close = %v", err)
		}
		if s := c.Stats(); s.Wakes != 1 {
			t.Fatalf("Wakes = %d", s.Wakes)
		}
	})
}

func TestConnClose(t *testing.T) {
	c := NewConn(fakeLocal)
	c.Push(peerA, []byte("x"))
	if _, err := c.WriteBatch(toMsgs(peerB, "y")); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil || !c.Closed() {
		t.Fatalf("Close = %v, Closed = %v", err, c.Closed())
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if _, err := c.ReadBatch(batchio.NewMessages(1, 8)); !errors.Is(err, batchio.ErrClosed) {
		t.Fatalf("ReadBatch after Close = %v", err)
	}
	if _, err := c.WriteBatch(toMsgs(peerB, "z")); !errors.Is(err, batchio.ErrClosed) {
		t.Fatalf("WriteBatch after Close = %v", err)
	}
	if sent := c.Sent(); len(sent) != 1 || !bytes.Equal(sent[0].Data, []byte("y")) || c.Stats().Queued != 1 {
		t.Fatal("Close lost what the test may still inspect")
	}
}

// TestConnAllocs: pushing, reading and writing with Discard allocate
// nothing once the ring has grown, so the code above it can be measured.
func TestConnAllocs(t *testing.T) {
	c := NewConn(fakeLocal)
	c.Discard = true
	payload := bytes.Repeat([]byte{7}, 100)
	in := batchio.NewMessages(8, 1500)
	out := toMsgs(peerA, "reply", "reply")
	step := func() {
		for range 8 {
			c.Push(peerA, payload)
		}
		if n, err := c.ReadBatch(in); n != 8 || err != nil {
			t.Fatal(n, err)
		}
		if n, err := c.WriteBatch(out); n != 2 || err != nil {
			t.Fatal(n, err)
		}
		c.WaitRead(time.Time{})
	}
	step()
	if n := testing.AllocsPerRun(100, step); n != 0 {
		t.Fatalf("%v allocations per push, read and discarded write", n)
	}
	// A blocking wait, woken or timed out, allocates nothing either.
	c.Block = true
	wait := func() {
		c.Wake()
		c.WaitRead(time.Now().Add(time.Second))
		c.WaitRead(time.Now().Add(time.Microsecond))
	}
	wait()
	if n := testing.AllocsPerRun(100, wait); n != 0 {
		t.Fatalf("%v allocations per blocking wait", n)
	}
}
