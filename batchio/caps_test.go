package batchio

import (
	"net/netip"
	"runtime"
	"testing"
	"time"
)

// stubConn is a Conn that does nothing, and wrapConn one that wraps
// another (Wrapper), for the capability lookups.
type stubConn struct{ waits int }

func (s *stubConn) ReadBatch([]Message) (int, error)  { return 0, nil }
func (s *stubConn) WriteBatch([]Message) (int, error) { return 0, nil }
func (s *stubConn) WaitRead(time.Time) error          { s.waits++; return nil }
func (s *stubConn) LocalAddr() netip.AddrPort         { return netip.AddrPort{} }
func (s *stubConn) Close() error                      { return nil }

type wrapConn struct {
	Conn
	inner Conn
}

func (w *wrapConn) Unwrap() Conn { return w.inner }

type wakingWrap struct{ wrapConn }

func (w *wakingWrap) Wake() {}

func TestAs(t *testing.T) {
	sock, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	inner := &wrapConn{Conn: sock, inner: sock}
	outer := &wrapConn{Conn: inner, inner: inner}
	if got, ok := As[StatsReader](outer); !ok || got != sock.(StatsReader) {
		t.Fatalf("As[StatsReader] through two wrappers = %v, %v", got, ok)
	}
	if got, ok := As[*wrapConn](outer); !ok || got != outer {
		t.Fatal("As did not return the outermost match first")
	}
	waking := &wakingWrap{wrapConn{Conn: sock, inner: sock}}
	if got, ok := As[Waker](waking); !ok || got != Waker(waking) {
		t.Fatal("a wrapper's own capability is not found before the socket's")
	}
	if _, ok := As[Shedder](&wrapConn{Conn: &stubConn{}, inner: &stubConn{}}); ok {
		t.Fatal("As found a capability nothing has")
	}
	if _, ok := As[Waker](nil); ok {
		t.Fatal("As found something in a nil conn")
	}
	// A wrapper that wraps itself ends the walk instead of hanging it.
	loop := &wrapConn{Conn: &stubConn{}}
	loop.inner = loop
	if _, ok := As[Shedder](loop); ok {
		t.Fatal("As found a Shedder in a loop of wrappers")
	}
}

// TestListenCapabilities: Listen's sockets can be woken and report stats
// everywhere, shed on Linux, and say when they block the OS thread.
func TestListenCapabilities(t *testing.T) {
	linux := runtime.GOOS == "linux"
	for _, blocking := range []bool{false, true} {
		c, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), Config{BlockingWait: blocking})
		if err != nil {
			t.Fatal(err)
		}
		if _, ok := As[Waker](c); !ok {
			t.Error("no Waker")
		}
		if _, ok := As[Shedder](c); ok != linux {
			t.Errorf("Shedder %v on %s", ok, runtime.GOOS)
		}
		s, ok := As[StatsReader](c)
		if !ok {
			t.Fatal("no StatsReader")
		}
		if got := s.Stats().BlockingWait; got != (blocking && linux) {
			t.Errorf("BlockingWait %v: Stats.BlockingWait %v on %s", blocking, got, runtime.GOOS)
		}
		c.Close()
	}
	if _, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), Config{PacketInfo: true}); (err == nil) != linux {
		t.Errorf("PacketInfo on %s: error %v", runtime.GOOS, err)
	}
	for _, cfg := range []Config{{BatchSize: -1}, {BatchSize: maxBatchSize + 1}, {TOS: 256}} {
		if c, err := Listen(netip.MustParseAddrPort("127.0.0.1:0"), cfg); err == nil {
			c.Close()
			t.Errorf("config %+v accepted", cfg)
		}
	}
}
