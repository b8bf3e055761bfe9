package webtransport

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

func TestEchoBothWays(t *testing.T) {
	checkGoroutines(t)
	c := listen(t, Config{})
	cl := dialT(t, c)
	const n = 50
	var want [][]byte
	for i := range n {
		want = append(want, fmt.Appendf(nil, "datagram %d %s", i, bytes.Repeat([]byte{byte(i)}, i*7)))
	}
	// In rounds of 10: the HTTP/3 layer holds at most 32 datagrams per
	// session until they are read, and drops the rest (they are
	// unreliable).
	var got []batchio.Message
	for i := 0; i < n; i += 10 {
		write(t, cl, c.LocalAddr(), want[i:i+10]...)
		got = append(got, readN(t, c, 10)...)
	}
	if len(got) != n {
		t.Fatalf("server read %d datagrams, want %d", len(got), n)
	}
	from := got[0].Addr
	if !IsSessionAddr(from) || !SessionPrefix.Contains(from.Addr()) {
		t.Fatalf("datagram from %v, want a session address in %v", from, SessionPrefix)
	}
	for i, m := range got {
		if m.Addr != from || !bytes.Equal(m.Buf, want[i]) {
			t.Fatalf("datagram %d: %q from %v, want %q from %v", i, m.Buf, m.Addr, want[i], from)
		}
	}
	var back []batchio.Message
	for i := 0; i < n; i += 10 {
		write(t, c, from, want[i:i+10]...)
		back = append(back, readN(t, cl, 10)...)
	}
	if len(back) != n {
		t.Fatalf("client read %d datagrams, want %d", len(back), n)
	}
	for i, m := range back {
		if m.Addr != c.LocalAddr() || !bytes.Equal(m.Buf, want[i]) {
			t.Fatalf("reply %d: %q from %v, want %q from %v", i, m.Buf, m.Addr, want[i], c.LocalAddr())
		}
	}
	st := c.TransportStats()
	if st.Sessions != 1 || st.Pending != 0 || st.Accepted != 1 {
		t.Fatalf("stats %+v; want 1 session, answered", st)
	}
}

func TestSessionsGetDistinctAddresses(t *testing.T) {
	checkGoroutines(t)
	c := listen(t, Config{})
	a, b := dialT(t, c), dialT(t, c)
	write(t, a, c.LocalAddr(), []byte("a"))
	write(t, b, c.LocalAddr(), []byte("b"))
	got := readN(t, c, 2)
	if len(got) != 2 || got[0].Addr == got[1].Addr {
		t.Fatalf("got %v; want one datagram from each of two addresses", got)
	}
	// Each reply reaches only the session it is addressed to.
	for _, m := range got {
		write(t, c, m.Addr, append([]byte("to "), m.Buf...))
	}
	for _, cl := range []*ClientConn{a, b} {
		r := readN(t, cl, 1)
		if len(r) != 1 {
			t.Fatal("a session got no reply")
		}
		if r[0].Buf[3] != map[*ClientConn]byte{a: 'a', b: 'b'}[cl] {
			t.Fatalf("session got %q, meant for the other", r[0].Buf)
		}
	}
}

func TestCloseForgetsSession(t *testing.T) {
	checkGoroutines(t)
	c := listen(t, Config{})
	cl := dialT(t, c)
	write(t, cl, c.LocalAddr(), []byte("hello"))
	got := readN(t, c, 1)
	if len(got) != 1 {
		t.Fatal("no datagram")
	}
	cl.Close()
	if !waitFor(func() bool { return c.TransportStats().Sessions == 0 }) {
		t.Fatalf("session still open after the client closed: %+v", c.TransportStats())
	}
	before := c.TransportStats().SendNoSession
	write(t, c, got[0].Addr, []byte("late"))
	if d := c.TransportStats().SendNoSession - before; d != 1 {
		t.Fatalf("a write to a closed session's address: %d counted as no session, want 1", d)
	}
}

func TestWaitReadWakeAndClose(t *testing.T) {
	c := listen(t, Config{})
	c.Wake()
	start := time.Now()
	if err := c.WaitRead(time.Time{}); err != nil {
		t.Fatal(err)
	}
	if time.Since(start) > time.Second {
		t.Fatal("a pending Wake did not end WaitRead at once")
	}
	errc := make(chan error, 1)
	go func() { errc <- c.WaitRead(time.Time{}) }()
	time.Sleep(10 * time.Millisecond)
	c.Close()
	select {
	case err := <-errc:
		if err == nil {
			t.Fatal("WaitRead returned nil after Close; want ErrClosed")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not end WaitRead")
	}
}
