package webtransport

import (
	"bytes"
	"context"
	"net/http"
	"net/netip"
	"runtime"
	"testing"
	"time"

	"github.com/netcode-go/netcode/batchio"
)

var loopback = netip.MustParseAddrPort("127.0.0.1:0")

// listen opens a conn on loopback with cfg (Addr defaulted), closed at
// the end of the test.
func listen(t testing.TB, cfg Config) *Conn {
	t.Helper()
	if !cfg.Addr.IsValid() {
		cfg.Addr = loopback
	}
	c, err := Listen(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// dialT dials c as a browser would, with its certificate hash pinned.
func dialT(t testing.TB, c *Conn) *ClientConn {
	t.Helper()
	cc, err := dialHdr(c, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cc.Close() })
	return cc
}

func dialHdr(c *Conn, hdr http.Header) (*ClientConn, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return dial(ctx, c.URL(c.LocalAddr().Addr().String()), hdr, [][32]byte{c.CertificateHash()})
}

// waitFor polls cond for at most 5 s.
func waitFor(cond func() bool) bool {
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(2 * time.Millisecond) {
		if cond() {
			return true
		}
	}
	return cond()
}

// readN reads datagrams from c until it has want or 5 s have passed.
func readN(t testing.TB, c batchio.Conn, want int) []batchio.Message {
	t.Helper()
	msgs := batchio.NewMessages(64, 1500)
	var out []batchio.Message
	deadline := time.Now().Add(5 * time.Second)
	for len(out) < want && time.Now().Before(deadline) {
		n, err := c.ReadBatch(msgs)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range msgs[:n] {
			out = append(out, batchio.Message{Buf: bytes.Clone(m.Buf[:m.N]), N: m.N, Addr: m.Addr})
		}
		if n == 0 {
			if err := c.WaitRead(time.Now().Add(20 * time.Millisecond)); err != nil {
				t.Fatal(err)
			}
		}
	}
	return out
}

func write(t testing.TB, c batchio.Conn, to netip.AddrPort, payloads ...[]byte) {
	t.Helper()
	msgs := make([]batchio.Message, len(payloads))
	for i, p := range payloads {
		msgs[i] = batchio.Message{Buf: p, N: len(p), Addr: to}
	}
	if _, err := c.WriteBatch(msgs); err != nil {
		t.Fatal(err)
	}
}

// checkGoroutines fails if more goroutines than before are left once the
// test's cleanups ran (bounded wait: QUIC's own end asynchronously).
func checkGoroutines(t *testing.T) {
	before := runtime.NumGoroutine()
	t.Cleanup(func() {
		if !waitFor(func() bool { return runtime.NumGoroutine() <= before }) {
			buf := make([]byte, 1<<20)
			t.Errorf("%d goroutines after Close, %d before:\n%s", runtime.NumGoroutine(), before, buf[:runtime.Stack(buf, true)])
		}
	})
}

func contextTimeout() (context.Context, context.CancelFunc) {
	return context.WithTimeout(context.Background(), 5*time.Second)
}
