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

// runEchoLoad keeps a window of 64-byte datagrams in flight from cli to an
// echo server at to until b.N echoes came back, and reports packets/s and
// ns/packet. The benchmarks of every conn kind share it, so their figures
// compare.
func runEchoLoad(b *testing.B, cli Conn, to netip.AddrPort) {
	const window, burst = 256, 32
	out := makeMsgs(burst, 64)
	for i := range out {
		out[i].N, out[i].Addr = 64, to
	}
	in := makeMsgs(64, 1500)
	inFlight, received := 0, 0
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	lastProgress := start
	for received < b.N {
		for inFlight+burst <= window {
			n, err := cli.WriteBatch(out)
			if err != nil {
				b.Fatal(err)
			}
			inFlight += n
		}
		n, err := cli.ReadBatch(in)
		if err != nil {
			b.Fatal(err)
		}
		if n > 0 {
			received += n
			inFlight -= n
			lastProgress = time.Now()
			continue
		}
		if err := cli.WaitRead(time.Now().Add(5 * time.Millisecond)); err != nil {
			b.Fatal(err)
		}
		if time.Since(lastProgress) > 20*time.Millisecond {
			// Datagrams were lost (a full inbox or socket buffer): refill
			// the window rather than stall.
			inFlight = 0
		}
	}
	elapsed := time.Since(start)
	b.StopTimer()
	b.ReportMetric(float64(received)/elapsed.Seconds(), "packets/s")
	b.ReportMetric(float64(elapsed.Nanoseconds())/float64(received), "ns/packet")
}
