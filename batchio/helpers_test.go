package batchio

import (
	"bytes"
	"net/netip"
	"testing"
	"time"
)

func makeMsgs(n, size int) []Message {
	msgs := make([]Message, n)
	for i := range msgs {
		msgs[i].Buf = make([]byte, size)
	}
	return msgs
}

// readAll drains up to want datagrams, waiting at most a second overall.
func readAll(t *testing.T, c Conn, msgs []Message, want int) []Message {
	t.Helper()
	var out []Message
	deadline := time.Now().Add(time.Second)
	for len(out) < want && time.Now().Before(deadline) {
		n, err := c.ReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:n] {
			out = append(out, Message{Buf: bytes.Clone(m.Buf[:m.N]), N: m.N, Addr: m.Addr, Local: m.Local})
		}
		if n == 0 {
			if err := c.WaitRead(deadline); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

// patterned returns count messages to dst, message i being 1+i%size bytes
// of a pattern that depends on i, so a mix-up or a short copy shows.
func patterned(count, size int, dst netip.AddrPort) []Message {
	msgs := makeMsgs(count, size)
	for i := range msgs {
		msgs[i].N, msgs[i].Addr = 1+i%size, dst
		for j := range msgs[i].N {
			msgs[i].Buf[j] = byte(i*31 + j)
		}
	}
	return msgs
}

// checkSame fails unless got holds the payloads of want, in order, all from
// src.
func checkSame(t *testing.T, got, want []Message, src netip.AddrPort) {
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
func waitErr(c Conn, deadline time.Time) <-chan error {
	done := make(chan error, 1)
	go func() { done <- c.WaitRead(deadline) }()
	return done
}
