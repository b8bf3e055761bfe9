package batchio

import (
	"bytes"
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
			out = append(out, Message{Buf: bytes.Clone(m.Buf[:m.N]), N: m.N, Addr: m.Addr})
		}
		if n == 0 {
			if err := c.WaitRead(deadline); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}
